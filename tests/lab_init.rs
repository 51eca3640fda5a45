//! `fabricplan init` and `detect --against` on the lab (real sshd, veth links, the lab's
//! /sys/class/infiniband): a pair whose halves have no IPv4 address and no lldpd drafted from
//! the IPv6 link-local neighbours, the printed commands applied, and the draft run ALL GREEN on
//! its own bandwidth gates (the lab's links carry 2.5 Gb/s and its sysfs says so: see
//! [`LAB_RATE`]); the twin compared with the fabric (agreeing, then one difference per change:
//! MTU, firmware, an address removed); bad input (a neighbour that is no host given, one machine
//! under two names, a host with no RDMA device, a host that does not answer); with lldpd and
//! the pair's cable moved to the other port, the plan as cabled and the cable comments saying
//! LLDP. Needs root, like every lab test. `FABRICPLAN_LAB_INIT_ALL=1` adds the ring of three
//! (f0 facing f1) and the switched fabric with its ISL, each from no addresses and no lldpd to
//! ALL GREEN, the ring with two cables exchanged, and `init` under Slurm.

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

/// The GB10 RDMA device behind each of [`FABRIC`]'s netdevs.
const DEVICES: [&str; 4] = ["rocep1s0f0", "roceP2p1s0f0", "rocep1s0f1", "roceP2p1s0f1"];

/// Remove every IPv4 address from the hosts' fabric netdevs, and, as the kernel does, the
/// RoCE GIDs that mapped them (the lab's sysfs is written once, from the spec).
fn unaddress(lab: &Lab, hosts: &[&str]) {
    for h in hosts {
        for (nd, dev) in FABRIC.iter().zip(DEVICES) {
            let p = format!("/sys/class/infiniband/{dev}/ports/1");
            let zero = "0000:0000:0000:0000:0000:0000:0000:0000";
            let o = lab.exec(
                h,
                &format!(
                    "ip -4 addr flush dev {nd} && for i in 2 3; do echo {zero} > {p}/gids/$i; rm -f {p}/gid_attrs/types/$i {p}/gid_attrs/ndevs/$i; done"
                ),
            );
            assert!(o.status.success(), "{h} {nd}: {o:?}");
        }
    }
}

/// What the kernel does as an address is added to a RoCE netdev, and the lab's sysfs, written
/// once from the spec, does not: the address's RoCE v1 and v2 GIDs (`::ffff:a.b.c.d`) in the
/// first free entries after the link-local pair, 2 and 3.
fn gids_follow(lab: &Lab, host: &str) {
    for (nd, dev) in FABRIC.iter().zip(DEVICES) {
        let o = lab.exec(host, &format!("ip -4 -o addr show dev {nd}"));
        let ip: Option<std::net::Ipv4Addr> = out(&o)
            .split_whitespace()
            .skip_while(|w| *w != "inet")
            .nth(1)
            .and_then(|c| c.split('/').next()?.parse().ok());
        let Some(ip) = ip else { continue };
        let [a, b, c, d] = ip.octets();
        let gid = format!("0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}");
        let p = format!("/sys/class/infiniband/{dev}/ports/1");
        let o = lab.exec(
            host,
            &format!(
                "for e in '2 IB/RoCE v1' '3 RoCE v2'; do i=${{e%% *}}; echo {gid} > {p}/gids/$i && echo \"${{e#* }}\" > {p}/gid_attrs/types/$i && echo {nd} > {p}/gid_attrs/ndevs/$i || exit 1; done"
            ),
        );
        assert!(o.status.success(), "{host} {dev}: {o:?}");
    }
}

/// What every init lab's host ports are shaped to (tbf), and what its sysfs says of them: a
/// real rate a veth moved by the python stand-ins carries on a loaded machine. The lab's sysfs
/// otherwise says a GB10's `200 Gb/sec`, which a veth does not carry: drafted from that, the
/// plan would rightly expect a GB10's 111.9 Gb/s a half of links that move 5.
const LAB_RATE: (&str, &str) = ("2500mbit", "2.5 Gb/sec (1X SDR)");

/// The lab of `plan`'s twin, every host port shaped to [`LAB_RATE`] and its sysfs saying so.
fn init_lab(tag: &str, plan: &fabricplan::plan::Plan) -> Lab {
    let lab = Lab::build(&lab::twin::lab_spec(tag, plan).port_rate(LAB_RATE.0)).expect("lab");
    say_rate(&lab);
    lab
}

/// Every RDMA device of the lab says the rate its veth is shaped to.
fn say_rate(lab: &Lab) {
    for h in lab.hosts() {
        let o = lab.exec(
            &h.name,
            &format!(
                "for f in /sys/class/infiniband/*/ports/1/rate; do echo '{}' > \"$f\"; done",
                LAB_RATE.1
            ),
        );
        assert!(o.status.success(), "{}: {o:?}", h.name);
    }
}

/// Run on its host each `on HOST: COMMAND` line `init` printed to apply its proposed
/// addresses (as root: the lab's exec is root, so `sudo` is left out), the GIDs following as
/// the kernel's would; how many there were.
fn apply(lab: &Lab, init: &Output) -> usize {
    let e = err(init);
    let cmds: Vec<(&str, &str)> = e
        .lines()
        .filter_map(|l| l.trim().strip_prefix("on ")?.split_once(": "))
        .collect();
    for (host, cmd) in &cmds {
        let o = lab.exec(
            host,
            cmd.trim_start_matches("sudo ")
                .replace("&& sudo ", "&& ")
                .as_str(),
        );
        assert!(o.status.success(), "{host}: {cmd}: {o:?}");
        gids_follow(lab, host);
    }
    cmds.len()
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
    let lab = init_lab("ini", &plan);
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
    assert_eq!(apply(lab, &o), 4, "{}", err(&o));
    let (o, again) = init(lab, dir, "pair-again", &["spark-a", "spark-b"], None);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(again.contains("a in use, b in use"), "{again}");
    assert!(!err(&o).contains("to apply"), "{}", err(&o));
    let plan = green_run(lab, dir, "pair-green", &again);
    pasted(lab, &plan);
}

/// The drafted plan run for real (its bandwidth and latency tests): every check and measurement
/// green. The bandwidth gates are the draft's own, from the capacity model of what the lab's
/// sysfs says its links carry ([`LAB_RATE`]). Two lines are the lab's: each bandwidth job lasts
/// one second (the suite's time; it changes no expectation), and the latency gate is
/// lab-sized: the draft leaves it at the default, the hardware floor of RoCE (3 us), which no
/// evidence `init` reads can size and which the stand-ins' TCP ping-pong in Python (tens of
/// microseconds) is not, as every lab twin says. Returns the plan run.
fn green_run(lab: &Lab, dir: &Path, name: &str, drafted: &str) -> PathBuf {
    let plan = dir.join(format!("{name}.toml"));
    std::fs::write(&plan, lab_sized(drafted, 1)).unwrap();
    let r = bw_lat_run(lab, &plan, &dir.join(format!("{name}-run")));
    assert_eq!(r.code, Some(0), "{}", r.story());
    assert_eq!(r.verdict(), "ALL GREEN", "{}", r.story());
    plan
}

/// The drafted text with the lab's two lines (see [`green_run`]); its bandwidth gate is the
/// draft's, from what the lab's sysfs says.
fn lab_sized(drafted: &str, seconds: u32) -> String {
    let gate = "[gates.rdma-bw]\nmin-pct-of-expected = 80\nwarn-pct-of-expected = 27\n";
    assert!(drafted.contains(gate), "{drafted}");
    assert!(
        drafted.contains("the capacity model expects 2.5 Gb/s per job"),
        "the gates are from what the lab's sysfs says: {drafted}"
    );
    assert!(!drafted.contains("[gates.rdma-lat]"), "{drafted}");
    format!(
        "{}\n# lab-sized: the stand-ins' TCP ping-pong, not RoCE's hardware floor\n[gates.rdma-lat]\npass = \"2000 us\"\n",
        drafted.replace(
            "direction = \"both\"\n",
            &format!("direction = \"both\"\nduration-s = {seconds}\n")
        )
    )
}

/// `run PLAN --only rdma-bw --only rdma-lat` on the lab, to `out`.
fn bw_lat_run(lab: &Lab, plan: &Path, out: &Path) -> lab::run::Run {
    let t0 = Instant::now();
    let o = lab::run::run_command(lab, plan, out)
        .args([
            "--only", "rdma-bw", "--only", "rdma-lat", "--format", "json",
        ])
        .output()
        .expect("run");
    let r = lab::run::Run::finish(o, out, t0.elapsed());
    let bw: Vec<f64> = r
        .jobs()
        .iter()
        .filter(|j| j["kind"] == "rdma-bw")
        .flat_map(|j| j["verdicts"].as_array().into_iter().flatten())
        .filter(|v| {
            v["gate"]
                .as_str()
                .is_some_and(|g| g.starts_with("rdma-bw "))
        })
        .filter_map(|v| v["measured"].as_f64())
        .collect();
    let lo = bw.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = bw.iter().cloned().fold(0.0, f64::max);
    eprintln!(
        "{} took {:?}: {} rdma-bw jobs, {lo:.2}-{hi:.2} Gb/s, verdict {}",
        plan.display(),
        r.wall,
        bw.len(),
        r.verdict()
    );
    r
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

/// The ring of three to ALL GREEN, and the ring with two cables exchanged: with
/// `FABRICPLAN_LAB_INIT_ALL=1` (half a minute more on two cores).
#[test]
fn ring_and_switched() {
    if !lab_enabled() || std::env::var("FABRICPLAN_LAB_INIT_ALL").as_deref() != Ok("1") {
        eprintln!("note: set FABRICPLAN_LAB_INIT_ALL=1 for the ring and switched labs");
        return;
    }
    let work = Work::new("fabricplan-lab-init", "more");
    let ring = support::load_plan(twin("ring3"));
    let nodes = ["spark-1", "spark-2", "spark-3"];
    ring_green(&ring, work.path());
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
}

/// The switched fabric with its ISL: with `FABRICPLAN_LAB_INIT_ALL=1`.
#[test]
fn switched_with_an_isl() {
    if !lab_enabled() || std::env::var("FABRICPLAN_LAB_INIT_ALL").as_deref() != Ok("1") {
        return;
    }
    let work = Work::new("fabricplan-lab-init", "switched");
    switched_green(work.path());
}

/// The ring of three (a node's f0 faces the next node's f1) with no IPv4 and no lldpd: drafted
/// as a ring from the IPv6 neighbours, the printed commands applied, the re-draft finds them in
/// use, and that plan runs ALL GREEN.
fn ring_green(ring: &fabricplan::plan::Plan, dir: &Path) {
    let nodes = ["spark-1", "spark-2", "spark-3"];
    let t0 = Instant::now();
    let lab = init_lab("inr", ring);
    unaddress(&lab, &nodes);
    let (o, text) = init(&lab, dir, "ring", &nodes, None);
    assert_eq!(o.status.code(), Some(0), "{}\n{text}", err(&o));
    assert!(
        text.contains("kind = \"ring\"")
            && text.contains(
                "nodes = [\"spark-1\", \"spark-2\", \"spark-3\"]  # node[i].f0 faces node[i+1].f1"
            ),
        "{text}"
    );
    assert!(
        text.contains("spark-1.f0.a hears spark-2.enp1s0f1np1 (spark-2.f1.a) (IPv6 neighbour)"),
        "{text}"
    );
    assert_eq!(apply(&lab, &o), 12, "{}", err(&o));
    let (o, again) = init(&lab, dir, "ring-again", &nodes, None);
    assert_eq!(o.status.code(), Some(0), "{}\n{again}", err(&o));
    assert!(
        again.contains("kind = \"ring\"") && again.contains("in use"),
        "{again}"
    );
    assert!(!err(&o).contains("to apply"), "{}", err(&o));
    green_run(&lab, dir, "ring-green", &again);
    let fp = lab.footprint();
    drop(lab);
    assert!(fp.remaining().is_empty(), "{:?}", fp.remaining());
    eprintln!("ring: {:?}", t0.elapsed());
}

/// The switched fabric of six on two switches joined by an ISL, with no IPv4 and no lldpd. The
/// hosts hear each other on one layer-2 fabric and nothing they show tells which switch each
/// is on: the draft is one `switch-1`, and its comment says so. With the ISL non-blocking (as
/// fast as the veths copy) that is the fabric as traffic sees it: the draft, applied, runs ALL
/// GREEN. With the ISL shaped to the twin's 2 Gb/s (four hosts' halves behind it at 2.5 each)
/// the same plan fails, and only flows across the ISL fail: the run shows what the hosts could
/// not, naming the cables beyond it.
fn switched_green(dir: &Path) {
    let t0 = Instant::now();
    let sw = support::load_plan(twin("switched-6"));
    let mut spec = lab::twin::lab_spec("ins", &sw).port_rate(LAB_RATE.0);
    assert_eq!(spec.isls.len(), 1);
    spec.isls[0].rate = None;
    let lab = Lab::build(&spec).expect("lab");
    say_rate(&lab);
    let hosts: Vec<&str> = sw.nodes.iter().map(|n| n.name.as_str()).collect();
    unaddress(&lab, &hosts);
    let (o, text) = init(&lab, dir, "switched", &hosts, None);
    assert!(
        text.contains("kind = \"switched\"")
            && text.contains("\"gb10-06.f0\" = \"switch-1\"")
            && !text.contains("\n[[isl]]"),
        "{text}"
    );
    assert!(
        text.contains("Several switches joined by ISLs look like one from the hosts"),
        "{text}"
    );
    // the lab's switches are bridges with a link-local address: they answer the all-nodes ping
    assert_eq!(o.status.code(), Some(1), "{}\n{text}", err(&o));
    assert!(text.contains("and it is none of the hosts given"), "{text}");
    assert_eq!(apply(&lab, &o), 12, "{}", err(&o));
    let (o, again) = init(&lab, dir, "switched-again", &hosts, None);
    assert!(again.contains("a in use, b in use"), "{again}\n{}", err(&o));
    assert!(!err(&o).contains("to apply"), "{}", err(&o));
    let plan = green_run(&lab, dir, "switched-green", &again);

    // the ISL oversubscribed: the same plan, and only the flows across it fall short
    for name in ["sw-a", "sw-b"] {
        let o = Command::new("tc")
            .args([
                "-n",
                lab.switch_ns(name),
                "qdisc",
                "replace",
                "dev",
                "isl0",
                "root",
            ])
            .args([
                "tbf", "rate", "2000mbit", "burst", "1000000", "latency", "50ms",
            ])
            .output()
            .expect("tc");
        assert!(o.status.success(), "ISL end on {name}: {o:?}");
    }
    let r = bw_lat_run(&lab, &plan, &dir.join("switched-blocking-run"));
    assert_eq!(r.code, Some(1), "{}", r.story());
    // a FAIL is a flow across the ISL (a flow beside them may WARN: the retransmissions of
    // the flows the ISL's queue drops cost the same two cores the stand-ins copy on)
    let beyond = |h: &str| h == "gb10-05" || h == "gb10-06";
    let mut short = 0;
    for j in r.jobs() {
        let bad = j["verdicts"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|v| v["outcome"] == "FAIL");
        if bad {
            let h = lab::run::hosts_of(j);
            assert!(
                j["kind"] == "rdma-bw" && h.len() == 2 && beyond(h[0]) != beyond(h[1]),
                "only flows across the ISL fall short: {} {}\n{}",
                j["label"],
                j["verdicts"],
                r.story()
            );
            short += 1;
        }
    }
    assert!(short > 0, "{}", r.story());
    assert!(
        r.verdict().contains("gb10-05.f0") || r.verdict().contains("gb10-06.f0"),
        "{}",
        r.story()
    );
    let fp = lab.footprint();
    drop(lab);
    assert!(fp.remaining().is_empty(), "{:?}", fp.remaining());
    eprintln!("switched: {:?}", t0.elapsed());
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
