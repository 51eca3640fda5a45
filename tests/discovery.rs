//! Discovery on sysfs fixture trees: the real probe script runs under /bin/sh over a generated
//! `/sys/class/infiniband`-shaped tree (and a stand-in `ip` printing fixed iproute2 output), and
//! resolution picks each planned half's live device, netdev and RoCE v2 GID index per box.

mod support;

use std::fs;
use std::path::{Path, PathBuf};

use fabricplan::discover::{self, HalfResolution};
use fabricplan::plan::NodeId;

struct Dev<'a> {
    name: &'a str,
    netdev: &'a str,
    active: bool,
    /// (index, gid text, type)
    gids: Vec<(u32, String, &'a str)>,
}

fn mapped(ip: [u8; 4]) -> String {
    format!(
        "0000:0000:0000:0000:0000:ffff:{:02x}{:02x}:{:02x}{:02x}",
        ip[0], ip[1], ip[2], ip[3]
    )
}

/// Write a GB10-like tree and the iproute2 answers; returns the dump the probe prints.
fn probe_dump(dir: &Path, devs: &[Dev], ip_addr: &str, ip_link: &str) -> String {
    let ib = dir.join("infiniband");
    for d in devs {
        let p = ib.join(d.name).join("ports/1");
        fs::create_dir_all(p.join("gids")).unwrap();
        fs::create_dir_all(p.join("gid_attrs/types")).unwrap();
        fs::create_dir_all(p.join("counters")).unwrap();
        fs::create_dir_all(p.join("hw_counters")).unwrap();
        fs::create_dir_all(ib.join(d.name).join("device/net").join(d.netdev)).unwrap();
        fs::write(
            p.join("state"),
            if d.active { "4: ACTIVE\n" } else { "1: DOWN\n" },
        )
        .unwrap();
        fs::write(
            p.join("phys_state"),
            if d.active {
                "5: LinkUp\n"
            } else {
                "3: Disabled\n"
            },
        )
        .unwrap();
        fs::write(p.join("rate"), "200 Gb/sec (4X HDR)\n").unwrap();
        fs::write(p.join("link_layer"), "Ethernet\n").unwrap();
        for i in 0..8u32 {
            fs::write(
                p.join("gids").join(i.to_string()),
                "0000:0000:0000:0000:0000:0000:0000:0000\n",
            )
            .unwrap();
        }
        for (i, g, t) in &d.gids {
            fs::write(p.join("gids").join(i.to_string()), format!("{g}\n")).unwrap();
            fs::write(
                p.join("gid_attrs/types").join(i.to_string()),
                format!("{t}\n"),
            )
            .unwrap();
        }
        fs::write(p.join("counters/port_xmit_data"), "1000\n").unwrap();
        fs::write(p.join("counters/link_downed"), "2\n").unwrap();
        fs::write(p.join("hw_counters/packet_seq_err"), "0\n").unwrap();
    }
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    fs::write(dir.join("addr.txt"), ip_addr).unwrap();
    fs::write(dir.join("link.txt"), ip_link).unwrap();
    let ip = bin.join("ip");
    fs::write(
        &ip,
        format!(
            "#!/bin/sh\ncase \"$*\" in\n*addr*) cat {d}/addr.txt ;;\n*link*) cat {d}/link.txt ;;\n*route*) echo 'default via 192.0.2.1 dev eno1' ;;\nesac\n",
            d = dir.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&ip, fs::Permissions::from_mode(0o755)).unwrap();
    run_probe(dir, discover::PROBE_SCRIPT)
}

/// Run a probe-shaped script over the tree `probe_dump` wrote in `dir`.
fn run_probe(dir: &Path, script: &str) -> String {
    let ib = dir.join("infiniband");
    let bin = dir.join("bin");
    let script = script.replace("/sys/class/infiniband", &ib.display().to_string());
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

const PLAN: &str = r#"
format-version = 1
name = "pair"
[[node]]
name = "spark-a"
[[node]]
name = "spark-b"
[[cable]]
kind = "direct"
ends = ["spark-a.f0", "spark-b.f0"]
subnets = { a = "198.51.100.0/30", b = "203.0.113.0/30" }
"#;

fn resolve(dump: &str, node: usize) -> Vec<HalfResolution> {
    let plan = support::load_plan_text("p.toml", PLAN);
    let probe = discover::probe::parse(dump);
    assert!(probe.complete, "the probe ran to its end: {dump}");
    discover::resolve_node(&plan, NodeId(node), &probe)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fabricplan-sysfs-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn link_line(i: u32, name: &str, up: bool) -> String {
    let flags = if up {
        "<BROADCAST,MULTICAST,UP,LOWER_UP>"
    } else {
        "<NO-CARRIER,BROADCAST,MULTICAST,UP>"
    };
    format!(
        "{i}: {name}: {flags} mtu 9000 qdisc mq state {} mode DEFAULT group default qlen 1000\n",
        if up { "UP" } else { "DOWN" }
    )
}

#[test]
fn gb10_with_f0_live_and_f1_down() {
    let d = tmp("f0live");
    let dump = probe_dump(
        &d,
        &[
            Dev {
                name: "rocep1s0f0",
                netdev: "enp1s0f0np0",
                active: true,
                gids: vec![
                    (3, mapped([198, 51, 100, 1]), "RoCE v2"),
                    (2, mapped([198, 51, 100, 1]), "IB/RoCE v1"),
                ],
            },
            Dev {
                name: "roceP2p1s0f0",
                netdev: "enP2p1s0f0np0",
                active: true,
                gids: vec![(3, mapped([203, 0, 113, 1]), "RoCE v2")],
            },
            Dev {
                name: "rocep1s0f1",
                netdev: "enp1s0f1np1",
                active: false,
                gids: vec![],
            },
            Dev {
                name: "roceP2p1s0f1",
                netdev: "enP2p1s0f1np1",
                active: false,
                gids: vec![],
            },
        ],
        "2: enp1s0f0np0    inet 198.51.100.1/30 brd 198.51.100.3 scope global enp1s0f0np0\\       valid_lft forever preferred_lft forever\n3: enP2p1s0f0np0    inet 203.0.113.1/30 brd 203.0.113.3 scope global enP2p1s0f0np0\\       valid_lft forever\n",
        &(link_line(2, "enp1s0f0np0", true)
            + &link_line(3, "enP2p1s0f0np0", true)
            + &link_line(4, "enp1s0f1np1", false)
            + &link_line(5, "enP2p1s0f1np1", false)),
    );
    let h = resolve(&dump, 0);
    assert_eq!(h.len(), 2);
    assert_eq!(h[0].device.as_deref(), Some("rocep1s0f0"));
    assert_eq!(
        h[0].gid_index,
        Some(3),
        "the RoCE v2 entry, not the v1 one at index 2"
    );
    assert_eq!(h[1].device.as_deref(), Some("roceP2p1s0f0"));
    assert!(
        h.iter()
            .all(|h| h.problems.is_empty() && h.active && h.mtu == Some(9000)),
        "{h:#?}"
    );
    assert_eq!(h[0].link_downed, Some(2));
    assert_eq!(h[0].rate_hint.as_deref(), Some("200 Gb/sec (4X HDR)"));
    let _ = fs::remove_dir_all(d);
}

#[test]
fn cabled_device_named_f1_on_one_box_and_gid_5() {
    // spark-b: the cable came up on the f1 device, its address there, RoCE v2 at index 5
    let d = tmp("f1box");
    let dump = probe_dump(
        &d,
        &[
            Dev {
                name: "rocep1s0f0",
                netdev: "enp1s0f0np0",
                active: false,
                gids: vec![],
            },
            Dev {
                name: "rocep1s0f1",
                netdev: "enp1s0f1np1",
                active: true,
                gids: vec![
                    (5, mapped([198, 51, 100, 2]), "RoCE v2"),
                    (3, mapped([198, 51, 100, 2]), "IB/RoCE v1"),
                ],
            },
        ],
        "4: enp1s0f1np1    inet 198.51.100.2/30 scope global enp1s0f1np1\n",
        &(link_line(2, "enp1s0f0np0", false) + &link_line(4, "enp1s0f1np1", true)),
    );
    let h = resolve(&dump, 1);
    assert_eq!(
        h[0].device.as_deref(),
        Some("rocep1s0f1"),
        "resolved from the address, not the name"
    );
    assert_eq!(h[0].netdev.as_deref(), Some("enp1s0f1np1"));
    assert_eq!(h[0].gid_index, Some(5));
    assert!(h[0].problems.is_empty(), "{:?}", h[0].problems);
    let _ = fs::remove_dir_all(d);
}

#[test]
fn half_without_ipv4_gets_the_exact_command() {
    let d = tmp("noip");
    let dump = probe_dump(
        &d,
        &[
            Dev {
                name: "rocep1s0f0",
                netdev: "enp1s0f0np0",
                active: true,
                gids: vec![(3, mapped([198, 51, 100, 1]), "RoCE v2")],
            },
            Dev {
                name: "roceP2p1s0f0",
                netdev: "enP2p1s0f0np0",
                active: true,
                gids: vec![],
            },
        ],
        "2: enp1s0f0np0    inet 198.51.100.1/30 scope global enp1s0f0np0\n",
        &(link_line(2, "enp1s0f0np0", true) + &link_line(3, "enP2p1s0f0np0", true)),
    );
    let h = resolve(&dump, 0);
    let b = &h[1];
    assert!(!b.address_found);
    assert_eq!(
        b.fix_command.as_deref(),
        Some(
            "sudo ip addr add 203.0.113.1/30 dev enP2p1s0f0np0 && sudo ip link set enP2p1s0f0np0 up mtu 9000"
        )
    );
    assert_eq!(b.gid_index, None);
    let _ = fs::remove_dir_all(d);
}

/// What the probe printed when it forked `cat`, `grep -H .` and `sed` per sysfs attribute: the
/// builtin-only probe must read exactly the same.
const FORKING_PROBE: &str = include_str!("fixtures/probe-forking.sh");

#[test]
fn builtin_probe_reads_what_grep_and_cat_read() {
    let d = tmp("builtin");
    // the tree first; then edge cases added to it before the two probes read it
    let _ = probe_dump(
        &d,
        &[
            Dev {
                name: "rocep1s0f0",
                netdev: "enp1s0f0np0",
                active: true,
                gids: vec![
                    (3, mapped([198, 51, 100, 1]), "RoCE v2"),
                    (2, mapped([198, 51, 100, 1]), "IB/RoCE v1"),
                ],
            },
            Dev {
                name: "rocep1s0f1",
                netdev: "enp1s0f1np1",
                active: false,
                gids: vec![],
            },
        ],
        "2: enp1s0f0np0    inet 198.51.100.1/30 brd 198.51.100.3 scope global enp1s0f0np0\\       valid_lft forever preferred_lft forever\n",
        &(link_line(2, "enp1s0f0np0", true) + &link_line(4, "enp1s0f1np1", false)),
    );
    let port = d.join("infiniband/rocep1s0f0/ports/1");
    // a counter without its newline, an empty one, and a type that cannot be read (sysfs
    // answers EINVAL for an unset GID's type; a dangling link fails the same way)
    fs::write(port.join("hw_counters/out_of_sequence"), "17").unwrap();
    fs::write(port.join("hw_counters/rx_write_requests"), "").unwrap();
    std::os::unix::fs::symlink(port.join("nowhere"), port.join("gid_attrs/types/5")).unwrap();
    // firmware, board, the PCIe link (trained at x2 of x4) and the driver's link
    let dev = d.join("infiniband/rocep1s0f0");
    fs::write(dev.join("fw_ver"), "28.45.1200\n").unwrap();
    fs::write(dev.join("board_id"), "MT_0000000970\n").unwrap();
    for (f, v) in [
        ("current_link_speed", "32.0 GT/s PCIe"),
        ("current_link_width", "2"),
        ("max_link_speed", "32.0 GT/s PCIe"),
        ("max_link_width", "4"),
    ] {
        fs::write(dev.join("device").join(f), format!("{v}\n")).unwrap();
    }
    fs::create_dir_all(d.join("drivers/mlx5_core")).unwrap();
    std::os::unix::fs::symlink(d.join("drivers/mlx5_core"), dev.join("device/driver")).unwrap();
    let dump = run_probe(&d, discover::PROBE_SCRIPT);
    let reference = run_probe(&d, FORKING_PROBE);
    let (a, b) = (
        discover::probe::parse(&dump),
        discover::probe::parse(&reference),
    );
    assert!(a.complete && !a.hostname.is_empty());
    assert_eq!(a, b, "builtin:\n{dump}\nforking:\n{reference}");
    let dev = a.device("rocep1s0f0").unwrap();
    assert_eq!(dev.counters["out_of_sequence"], 17);
    assert_eq!(dev.counters["port_xmit_data"], 1000);
    assert!(!dev.counters.contains_key("rx_write_requests"));
    assert_eq!(dev.gids.len(), 2);
    assert_eq!(dev.roce_v2_index("198.51.100.1".parse().unwrap()), Some(3));
    assert_eq!(dev.hardware.firmware.as_deref(), Some("28.45.1200"));
    assert_eq!(dev.hardware.driver.as_deref(), Some("mlx5_core"));
    assert!(dev.hardware.pcie.as_ref().is_some_and(|l| l.degraded()));
    // `device` here is a directory, not a PCI function's link: no address is made up
    assert_eq!(dev.hardware.pci, None);

    // the counters-only snapshot reads the same counters, and a hostile device name is inert
    let names = vec![
        "rocep1s0f0".to_string(),
        "rocep1s0f1".to_string(),
        format!("x; touch {}/pwned", d.display()),
    ];
    let snap = run_probe(&d, &discover::counters_script(&names));
    let c = discover::probe::parse(&snap);
    assert!(c.complete);
    assert_eq!(c.devices.len(), 3);
    assert_eq!(c.devices[0].counters, dev.counters);
    assert_eq!(c.devices[2].name, names[2]);
    assert!(c.devices[2].counters.is_empty());
    assert!(!d.join("pwned").exists());
    let _ = fs::remove_dir_all(d);
}
