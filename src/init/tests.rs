//! The drafting on hosts described directly: GB10 boxes with no IPv4 address and no lldpd,
//! cabled as each test says by the neighbours their all-nodes ping left.

use super::evidence::{Extra, Heard};
use super::*;

const NETDEVS: [(&str, &str, &str); 4] = [
    ("rocep1s0f0", "enp1s0f0np0", "0000:01:00.0"),
    ("rocep1s0f1", "enp1s0f1np1", "0000:01:00.1"),
    ("roceP2p1s0f0", "enP2p1s0f0np0", "0002:01:00.0"),
    ("roceP2p1s0f1", "enP2p1s0f1np1", "0002:01:00.1"),
];

fn mac(host: usize, k: usize) -> String {
    format!("4c:bb:47:00:{host:02x}:{k:02x}")
}

/// A GB10 box's probe: every device ACTIVE, no IPv4 unless `addr` gives one per netdev.
fn gb10(name: &str, host: usize, addr: &[(&str, &str)]) -> crate::discover::Probe {
    let mut s = format!("@host {name}\n@kernel 6.11\n");
    for (d, n, pci) in NETDEVS {
        s.push_str(&format!("@dev {d}\n@state 4: ACTIVE\n@phys 5: LinkUp\n@rate 200 Gb/sec (4X HDR)\n@layer Ethernet\n@fw 28.45.1200\n@pci {pci}\n@netdev {n}\n"));
    }
    s.push_str("@ip\n");
    for (n, a) in addr {
        s.push_str(&format!("5: {n}    inet {a} scope global {n}\n"));
    }
    s.push_str("@link\n");
    for (k, (_, n, _)) in NETDEVS.iter().enumerate() {
        s.push_str(&format!("{}: {n}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 state UP\\    link/ether {} brd ff:ff:ff:ff:ff:ff\n", k + 3, mac(host, k)));
    }
    s.push_str("@end\n");
    crate::discover::probe::parse(&s)
}

/// `netdev` of the host heard these (host, netdev index) by IPv6.
fn heard(netdev: &str, fars: &[(usize, usize)]) -> Vec<Heard> {
    fars.iter()
        .map(|(h, k)| Heard {
            netdev: netdev.into(),
            dst: format!("fe80::{h}:{k}"),
            mac: mac(*h, *k),
        })
        .collect()
}

fn host(name: &str, i: usize, h: Vec<Heard>) -> Host {
    Host {
        name: name.into(),
        probe: Ok(gb10(name, i, &[])),
        extra: Extra {
            machine_id: Some(format!("id{i}")),
            heard: h,
            complete: true,
        },
    }
}

fn opts() -> Options {
    Options {
        pool: DEFAULT_POOL.parse().unwrap(),
        pool_given: false,
        name: "t".into(),
        simulated: None,
    }
}

/// Two boxes, f0 to f0, both halves, heard by IPv6 from both sides.
fn pair() -> Vec<Host> {
    let a = [
        heard("enp1s0f0np0", &[(1, 0)]),
        heard("enP2p1s0f0np0", &[(1, 2)]),
    ]
    .concat();
    let b = [
        heard("enp1s0f0np0", &[(0, 0)]),
        heard("enP2p1s0f0np0", &[(0, 2)]),
    ]
    .concat();
    vec![host("box-a", 0, a), host("box-b", 1, b)]
}

#[test]
fn a_pair_with_no_address_and_no_lldp_is_drafted_from_ipv6_neighbours() {
    let d = draft(&pair(), &opts()).unwrap();
    assert!(
        d.text.contains("ends = [\"box-a.f0\", \"box-b.f0\"]"),
        "{}",
        d.text
    );
    assert!(d.text.contains("(IPv6 neighbour)"), "{}", d.text);
    assert!(d.text.contains("a proposed, b proposed"), "{}", d.text);
    assert!(d.text.contains("a documentation range"), "{}", d.text);
    // f1 has carrier in this dump but nothing answered on it: a TODO, never a guess
    assert!(
        d.todos
            .iter()
            .all(|t| t.contains(".f1: its link is up but nothing answered")),
        "{:?}",
        d.todos
    );
    let cmds: Vec<String> = d
        .commands
        .iter()
        .map(|(h, c)| format!("{h}: {c}"))
        .collect();
    assert!(cmds.contains(&"box-a: sudo ip addr add 198.51.100.1/30 dev enp1s0f0np0 && sudo ip link set enp1s0f0np0 up mtu 9000".to_string()), "{cmds:?}");
    assert!(cmds.contains(&"box-b: sudo ip addr add 198.51.100.6/30 dev enP2p1s0f0np0 && sudo ip link set enP2p1s0f0np0 up mtu 9000".to_string()), "{cmds:?}");
    // a given pool is used, and said as given
    let mut o = opts();
    o.pool = "198.19.8.0/24".parse().unwrap();
    o.pool_given = true;
    let d = draft(&pair(), &o).unwrap();
    assert!(
        d.text.contains("198.19.8.0/30") && d.text.contains("(--subnet-pool)"),
        "{}",
        d.text
    );
}

#[test]
fn ports_hearing_several_far_ends_are_on_one_switch() {
    let f0a = |me: usize| -> Vec<Heard> {
        let others: Vec<(usize, usize)> = (0..3).filter(|o| *o != me).map(|o| (o, 0)).collect();
        heard("enp1s0f0np0", &others)
    };
    let hosts = vec![
        host("n1", 0, f0a(0)),
        host("n2", 1, f0a(1)),
        host("n3", 2, f0a(2)),
    ];
    let d = draft(&hosts, &opts()).unwrap();
    assert!(d.text.contains("kind = \"switched\""), "{}", d.text);
    assert!(d.text.contains("\"n1.f0\" = \"switch-1\""), "{}", d.text);
    assert!(d.text.contains("halves = [\"a\"]"), "{}", d.text);
    assert!(d.text.contains("schedule = \"all-pairs\""), "{}", d.text);
}

#[test]
fn what_cannot_be_decided_is_a_todo_never_a_guess() {
    // a stranger answers, and the two halves of one port reach different boxes
    let mut hosts = pair();
    hosts[0].extra.heard.push(Heard {
        netdev: "enp1s0f1np1".into(),
        dst: "fe80::99".into(),
        mac: "02:00:00:00:00:99".into(),
    });
    let c = host("box-c", 2, heard("enP2p1s0f0np0", &[(1, 2)]));
    hosts[1].extra.heard = [
        heard("enp1s0f0np0", &[(0, 0)]),
        heard("enP2p1s0f0np0", &[(2, 2)]),
    ]
    .concat();
    hosts.push(c);
    let d = draft(&hosts, &opts()).unwrap();
    let all = d.todos.join("\n");
    assert!(
        all.contains(
            "MAC 02:00:00:00:00:99 (fe80::99) answered on box-a.f1.a, and it is none of the hosts given"
        ),
        "{all}"
    );
    assert!(
        all.contains("box-b.f0: its halves reach different ports"),
        "{all}"
    );
    assert!(d.text.contains("# TODO: "), "{}", d.text);
}

#[test]
fn one_machine_twice_and_a_box_without_rdma_are_left_out() {
    let mut hosts = pair();
    let mut twin = host("box-a-again", 0, Vec::new());
    twin.extra.machine_id = Some("id0".into());
    hosts.push(twin);
    hosts.push(Host {
        name: "mgmt".into(),
        probe: Ok(crate::discover::probe::parse("@host mgmt\n@end\n")),
        extra: Extra::default(),
    });
    hosts.push(Host {
        name: "gone".into(),
        probe: Err("ssh: connect to host gone port 22: Connection refused".into()),
        extra: Extra::default(),
    });
    let d = draft(&hosts, &opts()).unwrap();
    let notes = d.notes.join("\n");
    assert!(
        notes.contains(
            "box-a-again: the same machine as box-a (machine id id0, the same interface MACs)"
        ),
        "{notes}"
    );
    assert!(notes.contains("mgmt: no RDMA device"), "{notes}");
    assert!(
        notes.contains(
            "gone: did not answer (ssh: connect to host gone port 22: Connection refused)"
        ),
        "{notes}"
    );
    assert!(!d.text.contains("name = \"box-a-again\""));
    assert_eq!(d.text.matches("# TODO: host ").count(), 3, "{}", d.text);
    assert!(
        draft(&hosts[3..], &opts()).is_err(),
        "nothing to draft from"
    );
}

#[test]
fn a_machine_id_cloned_from_one_image_is_not_one_machine() {
    let mut hosts = pair();
    for h in &mut hosts {
        h.extra.machine_id = Some("cloned".into());
    }
    let d = draft(&hosts, &opts()).unwrap();
    assert!(d.notes.is_empty(), "{:?}", d.notes);
    assert!(d.text.contains("name = \"box-b\""), "{}", d.text);
}

#[test]
fn a_ring_of_four_is_a_ring_and_no_collective_spans_its_corners() {
    // node i's f0 (netdev indices 0 and 2) faces node i+1's f1 (1 and 3)
    let n = 4;
    let hosts: Vec<Host> = (0..n)
        .map(|i| {
            let next = (i + 1) % n;
            let prev = (i + n - 1) % n;
            let h = [
                heard("enp1s0f0np0", &[(next, 1)]),
                heard("enP2p1s0f0np0", &[(next, 3)]),
                heard("enp1s0f1np1", &[(prev, 0)]),
                heard("enP2p1s0f1np1", &[(prev, 2)]),
            ]
            .concat();
            host(&format!("r{i}"), i, h)
        })
        .collect();
    let d = draft(&hosts, &opts()).unwrap();
    assert!(d.text.contains("kind = \"ring\""), "{}", d.text);
    assert!(
        d.text.contains("nodes = [\"r0\", \"r1\", \"r2\", \"r3\"]"),
        "{}",
        d.text
    );
    assert!(d.text.contains("link-subnets = ["), "{}", d.text);
    assert!(!d.text.contains("collective"), "{}", d.text);
    assert!(d.todos.is_empty(), "{:?}", d.todos);
    assert_eq!(d.commands.len(), 16, "two halves on each of 8 ring ends");
}

#[test]
fn a_host_whose_links_answer_nothing_is_still_a_plan() {
    let d = draft(&[host("lonely", 0, Vec::new())], &opts()).unwrap();
    assert!(d.text.contains("name = \"lonely\""), "{}", d.text);
    assert!(!d.text.contains("[[cable]]"), "{}", d.text);
    assert_eq!(
        d.todos.len(),
        2,
        "each port up with nothing heard: {:?}",
        d.todos
    );
}

#[test]
fn without_ipv6_the_ipv4_neighbours_prove_the_cable_and_its_addresses_are_in_use() {
    let v4 = |netdev: &str, dst: &str, far: (usize, usize)| Heard {
        netdev: netdev.into(),
        dst: dst.into(),
        mac: mac(far.0, far.1),
    };
    let mut hosts = pair();
    hosts[0].probe = Ok(gb10(
        "box-a",
        0,
        &[
            ("enp1s0f0np0", "198.19.9.1/30"),
            ("enP2p1s0f0np0", "198.19.9.5/30"),
        ],
    ));
    hosts[1].probe = Ok(gb10(
        "box-b",
        1,
        &[
            ("enp1s0f0np0", "198.19.9.2/30"),
            ("enP2p1s0f0np0", "198.19.9.6/30"),
        ],
    ));
    hosts[0].extra.heard = vec![
        v4("enp1s0f0np0", "198.19.9.2", (1, 0)),
        v4("enP2p1s0f0np0", "198.19.9.6", (1, 2)),
    ];
    hosts[1].extra.heard = Vec::new();
    let d = draft(&hosts, &opts()).unwrap();
    assert!(
        d.text
            .contains("box-a.f0.a hears box-b.enp1s0f0np0 (box-b.f0.a) (IPv4 neighbour)"),
        "{}",
        d.text
    );
    assert!(
        d.text.contains(
            "subnets = { a = \"198.19.9.0/30\", b = \"198.19.9.4/30\" }  # a in use, b in use"
        ),
        "{}",
        d.text
    );
    assert!(
        !d.text.contains("addresses = "),
        "the addresses are the derived ones: {}",
        d.text
    );
    assert!(d.commands.is_empty(), "{:?}", d.commands);
}

/// The pair's boxes with every device's `ports/1/rate` saying `rate`.
fn pair_at(rate: &str) -> Vec<Host> {
    let mut hosts = pair();
    for h in &mut hosts {
        if let Ok(p) = &mut h.probe {
            for d in &mut p.devices {
                d.rate = rate.into();
            }
        }
    }
    hosts
}

#[test]
fn a_gb10_whose_ports_run_slower_gets_a_profile_of_what_they_carry() {
    // at the GB10's own rate: the built-in profile, its gates from 111.9 Gb/s a half
    let d = draft(&pair_at("200 Gb/sec (4X HDR)"), &opts()).unwrap();
    assert!(
        !d.text.contains("[[profile]]") && d.text.contains("built-in profile gb10"),
        "{}",
        d.text
    );
    assert!(d.text.contains("expects 111.9 Gb/s"), "{}", d.text);
    // a port that trained at 100 Gb/s (or a lab veth at 5): the GB10's ports and halves, at the
    // rate the links say, and the gates from that
    for (rate, gbps) in [("100 Gb/sec (2X HDR)", "100"), ("5 Gb/sec (1X DDR)", "5")] {
        let d = draft(&pair_at(rate), &opts()).unwrap();
        let plan = write::load(&d.text).unwrap();
        assert_eq!(plan.profiles.len(), 2, "{}", d.text); // gb10 built in, and box-1
        let p = plan
            .profiles
            .iter()
            .find(|p| p.name == "box-1")
            .expect("box-1");
        assert_eq!(p.half_rate_gbps, Some(gbps.parse().unwrap()), "{}", d.text);
        assert_eq!(p.ports, crate::plan::Profile::gb10().ports);
        assert!(
            d.text
                .contains(&format!("ports run at {gbps} Gb/s, not the 200 Gb/s")),
            "{}",
            d.text
        );
        assert!(
            d.text.contains(&format!("expects {gbps}.0 Gb/s")),
            "{}",
            d.text
        );
        assert!(
            d.text.contains("ends = [\"box-a.f0\", \"box-b.f0\"]"),
            "{}",
            d.text
        );
    }
    // one box slower than the other: two profiles, each box its own
    let mut hosts = pair();
    if let Ok(p) = &mut hosts[1].probe {
        for d in &mut p.devices {
            d.rate = "100 Gb/sec (2X HDR)".into();
        }
    }
    let d = draft(&hosts, &opts()).unwrap();
    let plan = write::load(&d.text).unwrap();
    let profile = |n: &str| {
        plan.profiles[plan.node_by_name(n).unwrap().profile.0]
            .name
            .clone()
    };
    assert_eq!(
        (profile("box-a"), profile("box-b")),
        ("gb10".into(), "box-1".into())
    );
}

/// `n` boxes in a ring, node i's f0 facing node i+1's f1, both halves, heard by IPv6.
fn ring(n: usize) -> Vec<Host> {
    (0..n)
        .map(|i| {
            let (next, prev) = ((i + 1) % n, (i + n - 1) % n);
            let h = [
                heard("enp1s0f0np0", &[(next, 1)]),
                heard("enP2p1s0f0np0", &[(next, 3)]),
                heard("enp1s0f1np1", &[(prev, 0)]),
                heard("enP2p1s0f1np1", &[(prev, 2)]),
            ]
            .concat();
            host(&format!("r{i}"), i, h)
        })
        .collect()
}

/// `n` boxes whose f0 half a hears every other box's (one switch, no LLDP).
fn switch(n: usize) -> Vec<Host> {
    (0..n)
        .map(|i| {
            let others: Vec<(usize, usize)> = (0..n).filter(|o| *o != i).map(|o| (o, 0)).collect();
            host(&format!("s{i}"), i, heard("enp1s0f0np0", &others))
        })
        .collect()
}

#[test]
fn bad_input_on_every_shape_leaves_the_rest_as_it_is() {
    for (shape, kind) in [
        (pair(), "direct"),
        (ring(3), "ring"),
        (switch(3), "switched"),
    ] {
        let clean = write::load(&draft(&shape, &opts()).unwrap().text).unwrap();
        let mut hosts = shape.clone();
        // the first box again under a second name (same machine id, same MACs), a box with no
        // RDMA device, a box that does not answer
        let mut again = shape[0].clone();
        again.name = format!("{}-again", shape[0].name);
        hosts.insert(1, again);
        hosts.push(Host {
            name: "mgmt".into(),
            probe: Ok(crate::discover::probe::parse("@host mgmt\n@end\n")),
            extra: Extra::default(),
        });
        hosts.push(Host {
            name: "gone".into(),
            probe: Err("ssh: connect to host gone port 22: No route to host".into()),
            extra: Extra::default(),
        });
        let d = draft(&hosts, &opts()).unwrap();
        let notes = d.notes.join("\n");
        let first = &shape[0].name;
        assert!(
            notes.contains(&format!(
                "{first}-again: the same machine as {first} (machine id id0, the same interface MACs): given twice under two names, kept once"
            )),
            "{kind}: {notes}"
        );
        assert!(notes.contains("mgmt: no RDMA device"), "{kind}: {notes}");
        assert!(notes.contains("gone: did not answer"), "{kind}: {notes}");
        assert_eq!(
            d.text.matches("# TODO: host ").count(),
            3,
            "{kind}: {}",
            d.text
        );
        assert!(
            d.text.contains(&format!("kind = \"{kind}\"")),
            "{kind}: {}",
            d.text
        );
        let drafted = write::load(&d.text).unwrap();
        let names = |p: &crate::plan::Plan| -> Vec<String> {
            p.nodes.iter().map(|n| n.name.clone()).collect()
        };
        assert_eq!(names(&drafted), names(&clean), "{kind}");
        assert_eq!(drafted.segments.len(), clean.segments.len(), "{kind}");
        for (a, b) in drafted.segments.iter().zip(&clean.segments) {
            let ends = |s: &crate::plan::Segment, p: &crate::plan::Plan| -> Vec<String> {
                s.members
                    .iter()
                    .map(|m| p.endpoint_name(&m.endpoint))
                    .collect()
            };
            assert_eq!(ends(a, &drafted), ends(b, &clean), "{kind}");
        }
    }
}
