//! `fabricplan init` and `detect --against` on the lab (real sshd, veth links, the lab's
//! /sys/class/infiniband): a pair whose halves have no IPv4 address and no lldpd drafted from
//! the IPv6 link-local neighbours; the twin compared with the fabric (agreeing, then one
//! difference per change: MTU, firmware, an address removed); bad input (a neighbour that is no
//! host given, one machine under two names, a host with no RDMA device, a host that does not
//! answer); with lldpd and the pair's cable moved to the other port, the plan as cabled and the
//! cable comments saying LLDP. Needs root, like every lab test. `FABRICPLAN_LAB_INIT_ALL=1` adds
//! the ring of three (f0/f1 crossings, and two cables exchanged) and the switched fabric with
//! its ISL.

mod support;

mod lab;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use lab::run::Work;
use lab::{Lab, lab_enabled};

const FABRIC: [&str; 4] = [
    "enp1s0f0np0",
    "enP2p1s0f0np0",
    "enp1s0f1np1",
    "enP2p1s0f1np1",
];

/// The GB10 netdev of a port's half.
fn netdev(port: &str, half: &str) -> &'static str {
    match (port, half) {
        ("f0", "a") => FABRIC[0],
        ("f0", _) => FABRIC[1],
        (_, "a") => FABRIC[2],
        _ => FABRIC[3],
    }
}

fn twin(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/lab/plans")
        .join(format!("{name}.toml"))
}

/// `fabricplan ARGS... --ssh-config CONFIG` with no agent and nothing on stdin.
fn fp(config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .args(args)
        .arg("--ssh-config")
        .arg(config)
        .env_remove("SSH_AUTH_SOCK")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("fabricplan runs")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `init HOSTS -o DIR/NAME.toml`: the output, and the plan text (which must validate).
fn init(
    lab: &Lab,
    dir: &Path,
    name: &str,
    hosts: &[&str],
    config: Option<&Path>,
) -> (Output, String) {
    init_in(lab, dir, name, hosts, config, "198.19.200.0/24")
}

/// [`init`] proposing subnets from `pool` (a spec network: the lab's is used).
fn init_in(
    lab: &Lab,
    dir: &Path,
    name: &str,
    hosts: &[&str],
    config: Option<&Path>,
    pool: &str,
) -> (Output, String) {
    let file = dir.join(format!("{name}.toml"));
    let mut args = vec!["init"];
    args.extend_from_slice(hosts);
    let f = file.to_string_lossy().into_owned();
    let pool = lab.translate(pool);
    args.extend(["-o", &f, "--subnet-pool", &pool]);
    let t0 = Instant::now();
    let o = fp(config.unwrap_or(&lab.ssh_config_path()), &args);
    eprintln!("init {name} took {:?}", t0.elapsed());
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{name}: no plan written ({e}):\n{}", err(&o)));
    let v = support::fabricplan(&["validate", &f]);
    assert_eq!(v.status.code(), Some(0), "{name}: {}\n{text}", err(&v));
    (o, text)
}

/// `detect TWIN --against`: exit code and the difference lines.
fn against(lab: &Lab, plan: &Path) -> (Option<i32>, Vec<String>, String) {
    let o = fp(
        &lab.ssh_config_path(),
        &["detect", &plan.to_string_lossy(), "--against"],
    );
    let text = out(&o);
    let lines = text
        .lines()
        .filter(|l| !l.is_empty() && !l.contains(" the plan and the fabric"))
        .map(str::to_string)
        .collect();
    (o.status.code(), lines, format!("{text}{}", err(&o)))
}

/// Remove every IPv4 address from the hosts' fabric netdevs.
fn unaddress(lab: &Lab, hosts: &[&str]) {
    for h in hosts {
        for nd in FABRIC {
            let o = lab.exec(h, &format!("ip -4 addr flush dev {nd}"));
            assert!(o.status.success(), "{h} {nd}: {o:?}");
        }
    }
}

/// An ssh_config with the lab's aliases and `alias` for the machine `host` is.
fn second_name(lab: &Lab, dir: &Path, host: &str, alias: &str) -> PathBuf {
    let text = std::fs::read_to_string(lab.ssh_config_path()).unwrap();
    let block: String = text
        .split("\n\n")
        .find(|b| b.lines().next() == Some(&format!("Host {host}")))
        .expect("the host's block")
        .replacen(&format!("Host {host}"), &format!("Host {alias}"), 1);
    let p = dir.join("ssh_config");
    std::fs::write(&p, format!("{block}\n\n{text}")).unwrap();
    p
}

#[test]
fn init_and_against_on_a_pair() {
    if !lab_enabled() {
        return;
    }
    let t0 = Instant::now();
    let plan = support::load_plan(twin("two-spark"));
    let lab = Lab::build(&lab::twin::lab_spec("ini", &plan)).expect("lab");
    eprintln!("lab built in {:?}", t0.elapsed());
    let work = Work::new("fabricplan-lab-init", "pair");
    let file = lab::twin::plan_file(&lab, &twin("two-spark")).unwrap();

    against_the_twin(&lab, &file);
    unaddress(&lab, &["spark-a", "spark-b"]);
    drafted_without_addresses_or_lldp(&lab, work.path());
    bad_input(&lab, work.path());

    let fp = lab.footprint();
    drop(lab);
    assert!(fp.remaining().is_empty(), "{:?}", fp.remaining());
    eprintln!("total {:?}", t0.elapsed());
}

/// The twin against the fabric it describes: no difference; then one per change, each undone.
fn against_the_twin(lab: &Lab, file: &Path) {
    let (code, d, all) = against(lab, file);
    assert_eq!((code, d.len()), (Some(0), 0), "{all}");
    lab.set_mtu("spark-a", "enp1s0f0np0", 1500).unwrap();
    let (code, d, all) = against(lab, file);
    assert_eq!((code, d.len()), (Some(1), 1), "{all}");
    assert!(
        d[0].starts_with("mtu spark-a.f0.a: enp1s0f0np0 runs MTU 1500"),
        "{all}"
    );
    lab.set_mtu("spark-a", "enp1s0f0np0", 9000).unwrap();
    lab.set_firmware("spark-b", "28.39.2048").unwrap();
    let (code, d, all) = against(lab, file);
    assert_eq!((code, d.len()), (Some(1), 1), "{all}");
    assert!(
        d[0].starts_with(
            "firmware spark-b: spark-b runs 28.39.2048, the other nodes run 28.45.1200"
        ),
        "{all}"
    );
    lab.set_firmware("spark-b", "28.45.1200").unwrap();
    // a device pinned under the other port's name (the names differ per box)
    let text = std::fs::read_to_string(file).unwrap();
    let pinned = text.replacen(
        "name = \"spark-a\"\n",
        "name = \"spark-a\"\npin.\"f0.a\" = { device = \"rocep1s0f1\" }\n",
        1,
    );
    let pin_line = pinned.lines().position(|l| l.starts_with("pin.")).unwrap() + 1;
    let pin_file = file.with_file_name("pinned.toml");
    std::fs::write(&pin_file, pinned).unwrap();
    let (code, d, all) = against(lab, &pin_file);
    assert_eq!((code, d.len()), (Some(1), 1), "{all}");
    assert_eq!(
        d[0],
        format!(
            "device spark-a.f0.a: the plan pins `rocep1s0f1` (line {pin_line}), the device behind enp1s0f0np0 on spark-a is `rocep1s0f0`: change the pin to `rocep1s0f0`, or remove it and leave the name to discovery"
        ),
        "{all}"
    );
    let addr = lab.addr("198.19.1.6");
    let o = lab.exec(
        "spark-b",
        &format!("ip addr del {addr}/30 dev enP2p1s0f0np0"),
    );
    assert!(o.status.success(), "{o:?}");
    let (code, d, all) = against(lab, file);
    assert_eq!((code, d.len()), (Some(1), 1), "{all}");
    assert!(
        d[0].starts_with(&format!("address spark-b.f0.b: {addr}/30 (line ")),
        "{all}"
    );
    assert!(
        d[0].contains("is not configured on spark-b: run there `sudo ip addr add"),
        "{all}"
    );
}

/// No IPv4 on any half, no lldpd: the cable from the IPv6 link-local neighbours, subnets
/// proposed with the commands to apply them; applied, the next draft finds them in use.
fn drafted_without_addresses_or_lldp(lab: &Lab, dir: &Path) {
    // the twin's range: the proposals are the addresses the lab's sysfs GIDs map
    let (o, text) = init_in(
        lab,
        dir,
        "pair",
        &["spark-a", "spark-b"],
        None,
        "198.19.1.0/24",
    );
    assert_eq!(o.status.code(), Some(0), "{}\n{text}", err(&o));
    assert!(
        text.contains("ends = [\"spark-a.f0\", \"spark-b.f0\"]"),
        "{text}"
    );
    assert!(
        text.contains("spark-a.f0.a hears spark-b.enp1s0f0np0 (spark-b.f0.a) (IPv6 neighbour)"),
        "{text}"
    );
    assert!(text.contains("a proposed, b proposed"), "{text}");
    assert!(text.contains("spark-a.f1: no link"), "{text}");
    let e = err(&o);
    let cmds: Vec<(&str, &str)> = e
        .lines()
        .filter_map(|l| l.trim().strip_prefix("on ")?.split_once(": "))
        .collect();
    assert_eq!(cmds.len(), 4, "{e}");
    for (host, cmd) in &cmds {
        let o = lab.exec(
            host,
            cmd.trim_start_matches("sudo ")
                .replace("&& sudo ", "&& ")
                .as_str(),
        );
        assert!(o.status.success(), "{host}: {cmd}: {o:?}");
    }
    let (o, again) = init(lab, dir, "pair-again", &["spark-a", "spark-b"], None);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(again.contains("a in use, b in use"), "{again}");
    assert!(!err(&o).contains("to apply"), "{}", err(&o));
    green_run(lab, dir, &again);
}

/// The drafted plan, its gates and durations made lab-sized (a veth link moved by the python
/// stand-ins is no GB10 half), run for real: every check and measurement green.
fn green_run(lab: &Lab, dir: &Path, drafted: &str) {
    let gates = "[gates.rdma-bw]\nmin-pct-of-expected = 80\nwarn-pct-of-expected = 27\n";
    assert!(drafted.contains(gates), "{drafted}");
    let text = drafted
        .replace(gates, "[gates.rdma-bw]\npass = \"0.5 Gb/s\"\nwarn = \"0.2 Gb/s\"\n[gates.rdma-lat]\npass = \"2000 us\"\n")
        .replace("direction = \"both\"\n", "direction = \"both\"\nduration-s = 1\n");
    let plan = dir.join("green.toml");
    std::fs::write(&plan, text).unwrap();
    let out = dir.join("green-run");
    let t0 = Instant::now();
    let o = lab::run::run_command(lab, &plan, &out)
        .args([
            "--only", "rdma-bw", "--only", "rdma-lat", "--format", "json",
        ])
        .output()
        .expect("run");
    let r = lab::run::Run::finish(o, &out, t0.elapsed());
    eprintln!("green run took {:?}", r.wall);
    assert_eq!(r.code, Some(0), "{}", r.story());
    assert_eq!(r.verdict(), "ALL GREEN", "{}", r.story());
    pasted(lab, &plan);
}

/// `plan --resolve` of the green plan: its first job's server and client lines, pasted into a
/// shell on their hosts, run the tools and measure.
fn pasted(lab: &Lab, plan: &Path) {
    let o = fp(
        &lab.ssh_config_path(),
        &["plan", &plan.to_string_lossy(), "--resolve"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(
        !text.contains(":device>") && !text.contains(":gid>"),
        "{text}"
    );
    let lines: Vec<&str> = text.lines().collect();
    let after = |tag: &str| -> (String, String) {
        let i = lines
            .iter()
            .position(|l| l.trim_start().starts_with('[') && l.contains(tag))
            .expect(tag);
        let host = lines[i].trim_start()[1..]
            .split(']')
            .next()
            .unwrap()
            .to_string();
        (host, lines[i + 1].trim().to_string())
    };
    let (server_host, server) = after("] server");
    let (client_host, client) = after("] client");
    let port = server
        .split(" -p ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_string();
    let lab_server = std::thread::scope(|sc| {
        let h = sc.spawn(|| lab.ssh(&server_host, &server));
        let listening = lab::wait(Duration::from_secs(20), || {
            out(&lab.exec(&server_host, "ss -ltn")).contains(&format!(":{port} "))
        });
        assert!(listening, "the pasted server listens on {port}");
        let c = lab.ssh(&client_host, &client);
        assert!(c.status.success(), "{client}: {}{}", out(&c), err(&c));
        assert!(out(&c).contains("BW average"), "{}", out(&c));
        h.join().expect("server")
    });
    assert!(
        lab_server.status.success(),
        "{server}: {}{}",
        out(&lab_server),
        err(&lab_server)
    );
}

/// A neighbour that is no host given; one machine under two names; a host without RDMA
/// devices; a host that does not answer: each a clear line, the plan still written, exit 1.
fn bad_input(lab: &Lab, dir: &Path) {
    let (o, text) = init(lab, dir, "alone", &["spark-a"], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(text.contains("# TODO: MAC "), "{text}");
    assert!(
        text.contains("answered on spark-a.f0.a, and it is none of the hosts given"),
        "{text}"
    );
    let config = second_name(lab, dir, "spark-a", "spark-a-again");
    let (o, text) = init(
        lab,
        dir,
        "twice",
        &["spark-a", "spark-a-again", "spark-b"],
        Some(&config),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("left out: spark-a-again: the same machine as spark-a (machine id "),
        "{}",
        err(&o)
    );
    assert!(
        text.contains("ends = [\"spark-a.f0\", \"spark-b.f0\"]"),
        "{text}"
    );
    let o = lab.exec("spark-b", "mount -t tmpfs none /sys/class/infiniband");
    assert!(o.status.success(), "{o:?}");
    let (o, text) = init(lab, dir, "no-rdma", &["spark-a", "spark-b"], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("left out: spark-b: no RDMA device under /sys/class/infiniband"),
        "{}",
        err(&o)
    );
    assert!(
        text.contains("# TODO: host spark-b: no RDMA device"),
        "{text}"
    );
    lab.stop_sshd("spark-b");
    let (o, text) = init(lab, dir, "gone", &["spark-a", "spark-b"], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("left out: spark-b: did not answer"),
        "{}",
        err(&o)
    );
    assert!(text.contains("name = \"spark-a\""), "{text}");
}

#[test]
fn a_moved_cable_with_lldp() {
    if !lab_enabled() {
        return;
    }
    let plan = support::load_plan(twin("two-spark"));
    // the pair's cable is in spark-b's f1, both halves
    let spec = lab::twin::lab_spec("inl", &plan)
        .cross("spark-b", "enp1s0f0np0", "enp1s0f1np1")
        .cross("spark-b", "enP2p1s0f0np0", "enP2p1s0f1np1")
        .lldp();
    let lab = Lab::build(&spec).expect("lab");
    lab.wait_lldp(Duration::from_secs(30)).expect("LLDP");
    let work = Work::new("fabricplan-lab-init", "moved");
    let file = lab::twin::plan_file(&lab, &twin("two-spark")).unwrap();
    let ends = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .position(|l| l.starts_with("ends ="))
        .unwrap()
        + 1;
    let (code, d, all) = against(&lab, &file);
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(
        d,
        [format!(
            "cable stack: planned spark-a.f0 -- spark-b.f0, found spark-a.f0 -- spark-b.f1 (LLDP): change line {ends} or move the cable"
        )],
        "{all}"
    );
    let (o, text) = init(&lab, work.path(), "moved", &["spark-a", "spark-b"], None);
    assert_eq!(o.status.code(), Some(0), "{}\n{text}", err(&o));
    assert!(
        text.contains("ends = [\"spark-a.f0\", \"spark-b.f1\"]"),
        "{text}"
    );
    assert!(
        text.contains("spark-a.f0.a hears spark-b.enp1s0f1np1 (spark-b.f1.a) (LLDP)"),
        "{text}"
    );
    assert!(text.contains("a in use, b in use"), "{text}");
    let fp = lab.footprint();
    drop(lab);
    assert!(fp.remaining().is_empty(), "{:?}", fp.remaining());
}

/// The ring of three and the switched fabric with its ISL, and the ring with two cables
/// exchanged: with `FABRICPLAN_LAB_INIT_ALL=1` (a minute more on two cores).
#[test]
fn ring_and_switched() {
    if !lab_enabled() || std::env::var("FABRICPLAN_LAB_INIT_ALL").as_deref() != Ok("1") {
        eprintln!("note: set FABRICPLAN_LAB_INIT_ALL=1 for the ring and switched labs");
        return;
    }
    let work = Work::new("fabricplan-lab-init", "more");
    let ring = support::load_plan(twin("ring3"));
    let nodes = ["spark-1", "spark-2", "spark-3"];
    {
        let lab = Lab::build(&lab::twin::lab_spec("inr", &ring)).expect("lab");
        unaddress(&lab, &nodes);
        let (o, text) = init(&lab, work.path(), "ring", &nodes, None);
        assert_eq!(o.status.code(), Some(0), "{}\n{text}", err(&o));
        assert!(
            text.contains("kind = \"ring\"")
                && text.contains("nodes = [\"spark-1\", \"spark-2\", \"spark-3\"]"),
            "{text}"
        );
        assert!(text.contains("(IPv6 neighbour)"), "{text}");
    }
    {
        // spark-2's two cables exchanged: its f0 holds the cable from spark-1, its f1 spark-3's
        let mut spec = lab::LabSpec::new("inx");
        for n in nodes {
            spec = spec.host(n);
        }
        let links = [
            ("spark-1", "f0", "spark-2", "f0"),
            ("spark-2", "f1", "spark-3", "f1"),
            ("spark-3", "f0", "spark-1", "f1"),
        ];
        for (k, (a, pa, b, pb)) in links.iter().enumerate() {
            for (h, (na, nb)) in [
                (0, (netdev(pa, "a"), netdev(pb, "a"))),
                (1, (netdev(pa, "b"), netdev(pb, "b"))),
            ] {
                let net = 4 * (2 * k + h);
                spec = spec.cable(
                    a,
                    na,
                    &format!("198.19.5.{}/30", net + 1),
                    b,
                    nb,
                    &format!("198.19.5.{}/30", net + 2),
                );
            }
        }
        let lab = Lab::build(&spec.lldp()).expect("lab");
        lab.wait_lldp(Duration::from_secs(30)).expect("LLDP");
        let (o, text) = init(&lab, work.path(), "exchanged", &nodes, None);
        eprintln!("{text}\n{}", err(&o));
        for e in [
            "[\"spark-1.f0\", \"spark-2.f0\"]",
            "[\"spark-2.f1\", \"spark-3.f1\"]",
            "[\"spark-1.f1\", \"spark-3.f0\"]",
        ] {
            assert!(text.contains(e), "{e}:\n{text}");
        }
        assert!(
            !text.contains("kind = \"ring\"") && text.contains("(LLDP)"),
            "{text}"
        );
    }
    let sw = support::load_plan(twin("switched-6"));
    let lab = Lab::build(&lab::twin::lab_spec("ins", &sw)).expect("lab");
    let hosts: Vec<&str> = sw.nodes.iter().map(|n| n.name.as_str()).collect();
    unaddress(&lab, &hosts);
    let (o, text) = init(&lab, work.path(), "switched", &hosts, None);
    eprintln!("{text}\n{}", err(&o));
    assert!(
        text.contains("kind = \"switched\"") && text.contains("= \"switch-1\""),
        "{text}"
    );
    let drafted = support::load_plan_text(Path::new("s.toml"), &text);
    assert_eq!(drafted.nodes.len(), hosts.len());
}

/// Under Slurm: the hosts are Slurm node names, each read in a job step of one allocation,
/// which is released after. With `FABRICPLAN_LAB_INIT_ALL=1`.
#[test]
fn init_under_slurm() {
    if !lab_enabled() || std::env::var("FABRICPLAN_LAB_INIT_ALL").as_deref() != Ok("1") {
        return;
    }
    let plan = support::load_plan(twin("two-spark"));
    let lab = Lab::build(&lab::twin::lab_spec("inu", &plan).slurm()).expect("lab");
    let work = Work::new("fabricplan-lab-init", "slurm");
    let file = work.path().join("slurm.toml");
    let f = file.to_string_lossy().into_owned();
    let bin = env!("CARGO_BIN_EXE_fabricplan");
    let o = lab
        .slurm_command(&[
            bin,
            "init",
            "--launcher",
            "slurm",
            "spark-a",
            "spark-b",
            "-o",
            &f,
        ])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("init runs");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}: {}", err(&o)));
    assert_eq!(o.status.code(), Some(0), "{}\n{text}", err(&o));
    assert!(
        text.contains("ends = [\"spark-a.f0\", \"spark-b.f0\"]"),
        "{text}"
    );
    assert!(text.contains("a in use, b in use"), "{text}");
    let q = lab.slurm("squeue -h -o %i");
    assert!(
        out(&q).trim().is_empty(),
        "the allocation is released: {}",
        out(&q)
    );
    let fp = lab.footprint();
    drop(lab);
    assert!(fp.remaining().is_empty(), "{:?}", fp.remaining());
}
