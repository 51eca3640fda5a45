//! `fabricplan check` on the lab's ring twin: run on each host itself (inside its namespaces,
//! no SSH), against the real sysfs tree, netdevs, LLDP and Slurm of the lab. Healthy: OK. Each
//! fault made on a real host (a flapped veth, MTU 1500, a removed address, a half DOWN, a far end
//! that no longer answers, a firmware update, a PCIe link retrained narrower): exactly one
//! finding about that part, exit 1. A probe that hangs ends by the deadline. `--drain` drains
//! that node alone, with the reason; `--resume` returns it. Needs root, like every lab test.

mod lab;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lab::{Lab, PcieLink, lab_enabled};
use serde_json::Value;

const NODES: [&str; 3] = ["spark-1", "spark-2", "spark-3"];

struct Bench {
    lab: Lab,
    plan: PathBuf,
}

/// What one check said.
struct Said {
    code: Option<i32>,
    json: Value,
    stderr: String,
    wall: Duration,
}

impl Said {
    fn findings(&self) -> Vec<&Value> {
        self.json["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .collect()
    }

    fn story(&self) -> String {
        format!(
            "exit {:?} in {:?}\n{}\nstderr: {}",
            self.code,
            self.wall,
            serde_json::to_string_pretty(&self.json["findings"]).unwrap_or_default(),
            self.stderr
        )
    }

    /// The one finding there is: its part's name and trap.
    fn one(&self) -> (String, String) {
        let f = self.findings();
        assert_eq!(f.len(), 1, "{}", self.story());
        assert_eq!(self.code, Some(1), "{}", self.story());
        (
            f[0]["name"].as_str().unwrap_or("").to_string(),
            f[0]["trap_name"].as_str().unwrap_or("").to_string(),
        )
    }
}

impl Bench {
    fn state(&self, host: &str) -> PathBuf {
        self.lab.dir().join(format!("check-state-{host}.json"))
    }

    /// `fabricplan check PLAN --format json` on `host` (its namespaces), `pre` before it in the
    /// shell (an environment), `extra` after.
    fn check_with(&self, host: &str, pre: &str, extra: &str) -> Said {
        let conf = self.lab.slurm_conf();
        let cmd = format!(
            "{pre} SLURM_CONF='{}' NO_COLOR=1 '{}' check '{}' --state '{}' --format json {extra}",
            conf.display(),
            env!("CARGO_BIN_EXE_fabricplan"),
            self.plan.display(),
            self.state(host).display()
        );
        let t0 = Instant::now();
        let o = self.lab.exec(host, &cmd);
        let wall = t0.elapsed();
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        Said {
            code: o.status.code(),
            json: serde_json::from_str(&stdout).unwrap_or_else(|e| {
                panic!(
                    "check on {host} printed no JSON ({e}): {stdout}\n{}",
                    String::from_utf8_lossy(&o.stderr)
                )
            }),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            wall,
        }
    }

    /// `fabricplan check PLAN` on `host` as a person runs it (text): exit code and stdout.
    fn check_text(&self, host: &str) -> (Option<i32>, String) {
        let cmd = format!(
            "NO_COLOR=1 '{}' check '{}' --state '{}'",
            env!("CARGO_BIN_EXE_fabricplan"),
            self.plan.display(),
            self.state(host).display()
        );
        let o = self.lab.exec(host, &cmd);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    }

    fn check(&self, host: &str) -> Said {
        self.check_with(host, "", "")
    }

    fn ok(&self, host: &str, why: &str) {
        let s = self.check(host);
        assert_eq!(s.code, Some(0), "{why}: {}", s.story());
        assert!(s.findings().is_empty(), "{why}: {}", s.story());
    }

    fn exec_ok(&self, host: &str, cmd: &str) {
        let o = self.lab.exec(host, cmd);
        assert!(o.status.success(), "{cmd} on {host}: {o:?}");
    }

    /// The netdev's carrier is back (a test waits for both ends of the veth: until then the
    /// far end does not answer, which is a finding of its own).
    fn wait_carrier(&self, host: &str, netdev: &str) {
        let up = lab::wait(Duration::from_secs(10), || {
            let o = self
                .lab
                .exec(host, &format!("cat /sys/class/net/{netdev}/carrier"));
            String::from_utf8_lossy(&o.stdout).trim() == "1"
        });
        assert!(up, "{host} {netdev} has no carrier");
    }
}

#[test]
fn a_node_checks_itself_against_the_plan() {
    if !lab_enabled() {
        return;
    }
    let t0 = Instant::now();
    let twin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lab/plans/ring3.toml");
    let loaded = fabricplan::kinds::load(&twin).expect("ring3 twin loads");
    let spec = lab::twin::lab_spec("chk", &loaded.plan).lldp().slurm();
    let lab = Lab::build(&spec).expect("lab");
    lab.wait_lldp(Duration::from_secs(30))
        .expect("LLDP neighbours");
    let plan = lab::twin::plan_file(&lab, &twin).expect("plan file");
    eprintln!("lab built in {:?}", t0.elapsed());
    let b = Bench { lab, plan };

    healthy(&b);
    flapped_link(&b);
    mtu_address_and_port(&b);
    far_end_silent(&b);
    firmware_and_pcie(&b);
    port_counters(&b);
    hung_probe(&b);
    drain_and_resume(&b);
    health_check_recipe(&b);
    prolog_and_timer_recipes(&b);
    slurmd_runs_the_health_check(&b);
    slurmd_runs_the_prolog(&b);

    let left = b.lab.leftovers(Duration::from_secs(5));
    assert!(left.is_empty(), "left on the hosts: {left:#?}");
    let fp = b.lab.footprint();
    drop(b);
    assert!(fp.remaining().is_empty(), "{:?}", fp.remaining());
    eprintln!("lab_check took {:?}", t0.elapsed());
}

/// Each node: OK the first time (its reading kept, 0600), OK again against it, in about a second.
fn healthy(b: &Bench) {
    for n in NODES {
        let first = b.check(n);
        assert_eq!(first.code, Some(0), "{n}: {}", first.story());
        assert!(first.findings().is_empty(), "{}", first.story());
        assert_eq!(first.json["outcome"], "OK");
        assert!(first.json["since_unix_ms"].is_null());
        assert_eq!(first.json["halves"].as_array().map(Vec::len), Some(4));
        let mode = std::fs::metadata(b.state(n)).map(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.permissions().mode() & 0o777
        });
        assert_eq!(mode.ok(), Some(0o600), "{n}'s state file");
        let again = b.check(n);
        assert_eq!(again.code, Some(0), "{n}: {}", again.story());
        assert!(again.json["since_unix_ms"].is_u64(), "{}", again.story());
        assert!(
            again.wall < Duration::from_secs(3),
            "{n}: a healthy check took {:?}",
            again.wall
        );
        eprintln!("{n}: healthy check in {:?}", again.wall);
        let (code, text) = b.check_text(n);
        assert_eq!(code, Some(0), "{text}");
        assert!(
            text.starts_with(&format!(
                "check {n}: OK (0 finding(s), 4 planned half(s) checked) in "
            )) && text.lines().count() == 1,
            "{text}"
        );
        // every cable's far end was pinged and heard over LLDP
        let gates: Vec<&str> = again.json["verdicts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["gate"].as_str())
            .collect();
        assert_eq!(
            gates
                .iter()
                .filter(|g| g.starts_with("jumbo ping "))
                .count(),
            4
        );
        assert_eq!(gates.iter().filter(|g| g.starts_with("lldp ")).count(), 4);
    }
}

/// A veth taken down and up (real carrier changes): one FAIL about its cable; the next check,
/// against the new reading, is OK.
fn flapped_link(b: &Bench) {
    b.exec_ok(
        "spark-1",
        "ip link set enp1s0f0np0 down && ip link set enp1s0f0np0 up",
    );
    b.wait_carrier("spark-1", "enp1s0f0np0");
    b.wait_carrier("spark-2", "enp1s0f1np1");
    let s = b.check("spark-1");
    let (part, trap) = s.one();
    assert_eq!(trap, "link flapped", "{}", s.story());
    assert!(
        part.contains("spark-1.f0") && part.contains("spark-2.f1"),
        "{part}"
    );
    b.ok("spark-1", "the check after a flap");
    // the far end saw it too: the same cable
    let s = b.check("spark-2");
    assert_eq!(s.one(), (part, trap), "{}", s.story());
    b.ok("spark-2", "the far end's check after the flap");
}

/// MTU 1500, an address removed, a half DOWN: one finding each about that half.
fn mtu_address_and_port(b: &Bench) {
    b.lab.set_mtu("spark-2", "enp1s0f0np0", 1500).unwrap();
    // as a person reads it: one line for the finding, the verdict last
    let (code, text) = b.check_text("spark-2");
    eprintln!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!((code, lines.len()), (Some(1), 2), "{text}");
    assert!(
        lines[0].starts_with("FAIL spark-2.f0.a (enp1s0f0np0 on spark-2): MTU 1500 on the path: "),
        "{text}"
    );
    assert!(
        lines[1].starts_with(
            "check spark-2: FAIL: spark-2.f0.a (1 finding(s), 4 planned half(s) checked) in "
        ),
        "{text}"
    );
    // the text check took the reading in: the next one is against it, and still FAILs
    let s = b.check("spark-2");
    assert_eq!(
        s.one(),
        ("spark-2.f0.a".into(), "MTU 1500 on the path".into()),
        "{}",
        s.story()
    );
    b.lab.set_mtu("spark-2", "enp1s0f0np0", 9000).unwrap();
    b.ok("spark-2", "MTU 9000 again");

    let addr = b.lab.addr("198.19.68.1");
    let cidr = format!("{addr}/24");
    let s3 = |cmd: &str| b.exec_ok("spark-3", &format!("ip addr {cmd} {cidr} dev enp1s0f0np0"));
    let before = b.lab.exec("spark-3", "ip -4 -o addr show dev enp1s0f0np0");
    assert!(
        String::from_utf8_lossy(&before.stdout).contains(&cidr),
        "spark-3.f0.a holds {cidr}: {before:?}"
    );
    s3("del");
    let s = b.check("spark-3");
    assert_eq!(s.one().0, "spark-3.f0.a", "{}", s.story());
    s3("add");
    b.ok("spark-3", "the address back");

    b.lab
        .set_port_active("spark-1", "rocep1s0f1", false)
        .unwrap();
    let s = b.check("spark-1");
    let (part, trap) = s.one();
    assert_eq!(trap, "port down", "{}", s.story());
    assert!(part.starts_with("spark-1.f1"), "{part}");
    b.lab
        .set_port_active("spark-1", "rocep1s0f1", true)
        .unwrap();
    b.ok("spark-1", "the port ACTIVE again");
}

/// The far end of spark-1.f0.a (spark-2.f1.a) no longer answers: one finding about that link.
fn far_end_silent(b: &Bench) {
    let cidr = format!("{}/24", b.lab.addr("198.19.64.2"));
    b.exec_ok("spark-2", &format!("ip addr del {cidr} dev enp1s0f1np1"));
    let s = b.check("spark-1");
    let (part, _) = s.one();
    assert!(
        part.contains("spark-1.f0") || part.contains("spark-2.f1"),
        "{part}: {}",
        s.story()
    );
    b.exec_ok("spark-2", &format!("ip addr add {cidr} dev enp1s0f1np1"));
    b.ok("spark-1", "the far end answering again");
    // spark-2 saw its own address go: its check says so, once; then it is OK
    let s = b.check("spark-2");
    assert_eq!(s.code, Some(0), "{}", s.story());
}

/// A firmware update on one box, a PCIe link retrained at x2 of x4: one FAIL each.
fn firmware_and_pcie(b: &Bench) {
    b.lab.set_firmware("spark-3", "28.39.2048").unwrap();
    let s = b.check("spark-3");
    assert_eq!(
        s.one(),
        ("spark-3".into(), "firmware differs within a profile".into()),
        "{}",
        s.story()
    );
    b.lab.set_firmware("spark-3", "28.45.1200").unwrap();
    b.check("spark-3");
    b.ok("spark-3", "the firmware back, taken as known");

    let narrow = PcieLink::trained("32.0 GT/s PCIe", 2, 4);
    b.lab.set_pcie("spark-1", "rocep1s0f0", &narrow).unwrap();
    let s = b.check("spark-1");
    let (part, trap) = s.one();
    assert_eq!(
        (part.as_str(), trap.as_str()),
        ("spark-1.f0.a", "PCIe link below its maximum"),
        "{}",
        s.story()
    );
    b.lab
        .set_pcie("spark-1", "rocep1s0f0", &PcieLink::gb10())
        .unwrap();
    b.ok("spark-1", "the PCIe link at its maximum again");
}

/// Symbol errors and RDMA retransmissions counted on spark-3.f0.a since its last check: one
/// WARN about its cable with the numbers and the fix, exit 0; counters that stay put say nothing.
fn port_counters(b: &Bench) {
    b.ok("spark-3", "before the counters rise");
    b.lab
        .set_counter("spark-3", "rocep1s0f0", "symbol_error", 1204);
    b.lab
        .set_counter("spark-3", "rocep1s0f0", "out_of_sequence", 5000);
    let s = b.check("spark-3");
    let f = s.findings();
    assert_eq!(f.len(), 1, "{}", s.story());
    assert_eq!(s.code, Some(0), "a WARN: {}", s.story());
    assert_eq!(f[0]["outcome"], "WARN", "{}", s.story());
    assert_eq!(f[0]["trap_name"], "link errors", "{}", s.story());
    let name = f[0]["name"].as_str().unwrap_or("");
    assert!(
        name.starts_with("cable ") && name.contains("spark-1.f1") && name.contains("spark-3.f0"),
        "{name}"
    );
    let seen = f[0]["seen"].as_str().unwrap_or("");
    assert!(
        seen.contains("1,204 symbol errors") && seen.contains("5,000 RDMA retransmissions"),
        "{seen}"
    );
    b.ok("spark-3", "the counters steady since");
    // the port's own count (ethtool -S, as mlx5 names it)
    b.lab
        .set_phy_counter("spark-1", "enp1s0f0np0", "rx_symbol_err_phy", 777);
    let s = b.check("spark-1");
    let f = s.findings();
    assert_eq!(f.len(), 1, "{}", s.story());
    let seen = f[0]["seen"].as_str().unwrap_or("");
    assert!(
        seen.contains("777 symbol errors") && seen.contains("`symbol-errors`"),
        "{seen}"
    );
    assert!(
        s.json["halves"]
            .to_string()
            .contains("\"symbol-errors\":777"),
        "the half carries its port counters: {}",
        s.json["halves"]
    );
    b.ok("spark-1", "the port's counters steady since");
}

/// `ip` that never returns: the check ends by its deadline, says what it read and what it did
/// not, exits 1, and leaves no process behind.
fn hung_probe(b: &Bench) {
    let dir = b.lab.dir().join("hang");
    std::fs::create_dir_all(&dir).unwrap();
    let ip = dir.join("ip");
    std::fs::write(&ip, "#!/bin/sh\nexec sleep 600\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ip, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = b.check_with(
        "spark-2",
        &format!("PATH='{}':\"$PATH\"", dir.display()),
        "--deadline 3",
    );
    assert_eq!(s.code, Some(1), "{}", s.story());
    assert!(
        s.wall < Duration::from_secs(3),
        "a 3 s deadline took {:?}",
        s.wall
    );
    let not = s.json["not_checked"].to_string();
    assert!(not.contains("the probe did not finish"), "{}", s.story());
    assert!(
        s.json["checked"]
            .to_string()
            .contains("PCIe link and firmware"),
        "{}",
        s.story()
    );
    let left = b.lab.leftovers(Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:#?}");
    b.ok("spark-2", "without the hung stand-in");
}

/// Slurm's `%T|%E` of a node.
fn slurm_state(b: &Bench, node: &str) -> String {
    let o = b.lab.slurm(&format!("sinfo -h -N -n {node} -o '%T|%E'"));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// `--drain` on a flapped node drains it alone, with the finding as the reason; `--resume` on a
/// healthy check returns it; a node drained by someone else is never resumed.
fn drain_and_resume(b: &Bench) {
    b.exec_ok(
        "spark-2",
        "ip link set enP2p1s0f0np0 down && ip link set enP2p1s0f0np0 up",
    );
    b.wait_carrier("spark-2", "enP2p1s0f0np0");
    b.wait_carrier("spark-3", "enP2p1s0f1np1");
    let s = b.check_with("spark-2", "", "--drain");
    assert_eq!(s.one().1, "link flapped", "{}", s.story());
    let state = slurm_state(b, "spark-2");
    assert!(
        state.starts_with("drain") && state.contains("|fabricplan check: link flapped cable "),
        "{state}: {}",
        s.story()
    );
    for n in ["spark-1", "spark-3"] {
        assert!(!slurm_state(b, n).starts_with("drain"), "{n}");
    }
    let s = b.check_with("spark-2", "", "--drain --resume");
    assert_eq!(s.code, Some(0), "{}", s.story());
    assert!(
        s.json["service"].to_string().contains("resumed spark-2"),
        "{}",
        s.story()
    );
    let back = lab::wait(Duration::from_secs(10), || {
        !slurm_state(b, "spark-2").starts_with("drain")
    });
    assert!(back, "{}", slurm_state(b, "spark-2"));

    // the far end of that link saw the flap too (without --drain: said, not drained)
    let s = b.check("spark-3");
    assert_eq!(s.one().1, "link flapped", "{}", s.story());
    assert!(!slurm_state(b, "spark-3").starts_with("drain"));
    // drained by someone else: a passing check never resumes it
    let o = b
        .lab
        .slurm("scontrol update nodename=spark-3 state=drain reason='rack maintenance'");
    assert!(o.status.success(), "{o:?}");
    let s = b.check_with("spark-3", "", "--resume");
    assert_eq!(s.code, Some(0), "{}", s.story());
    assert!(
        s.json["service"].to_string().contains("not by a check"),
        "{}",
        s.story()
    );
    assert!(slurm_state(b, "spark-3").contains("rack maintenance"));
    let o = b.lab.slurm("scontrol update nodename=spark-3 state=resume");
    assert!(o.status.success(), "{o:?}");
    let back = lab::wait(Duration::from_secs(10), || {
        !slurm_state(b, "spark-3").starts_with("drain")
    });
    assert!(back, "{}", slurm_state(b, "spark-3"));
}

/// The `HealthCheckProgram` script of docs/src/check.md, as written there (its three paths set to
/// the lab's, `fabricplan` on its PATH), run on a node: a flap drains it with the finding and
/// writes the metrics; the next run, healthy, returns it.
fn health_check_recipe(b: &Bench) {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/check.md"))
            .expect("docs/src/check.md");
    let start = doc
        .find("#!/bin/sh\n# fabricplan-health")
        .expect("the health-check script in the docs");
    let script = &doc[start..start + doc[start..].find("```").expect("its end")];
    let dir = b.lab.dir().join("recipe");
    std::fs::create_dir_all(&dir).unwrap();
    let metrics = dir.join("fabricplan.prom");
    let script: String = script
        .lines()
        .map(|l| match l.split_once('=') {
            Some(("PLAN", _)) => format!("PLAN='{}'", b.plan.display()),
            Some(("STATE", _)) => format!("STATE='{}'", b.state("spark-1").display()),
            Some(("METRICS", _)) => format!("METRICS='{}'", metrics.display()),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let path = dir.join("fabricplan-health");
    std::fs::write(&path, script + "\n").unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fabricplan"), dir.join("fabricplan")).unwrap();
    let run = || {
        b.lab.exec(
            "spark-1",
            &format!(
                "SLURM_CONF='{}' PATH='{}':\"$PATH\" sh '{}'",
                b.lab.slurm_conf().display(),
                dir.display(),
                path.display()
            ),
        )
    };
    b.exec_ok(
        "spark-1",
        "ip link set enp1s0f1np1 down && ip link set enp1s0f1np1 up",
    );
    b.wait_carrier("spark-1", "enp1s0f1np1");
    b.wait_carrier("spark-3", "enp1s0f0np0");
    let o = run();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let state = slurm_state(b, "spark-1");
    assert!(
        state.starts_with("drain") && state.contains("|fabricplan check: link flapped cable "),
        "{state}"
    );
    let prom = std::fs::read_to_string(&metrics).expect("the metrics file");
    assert!(
        prom.contains("fabricplan_check_status{node=\"spark-1\",plan=\"ring3-lab\"} 2"),
        "{prom}"
    );
    let o = run();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let back = lab::wait(Duration::from_secs(10), || {
        !slurm_state(b, "spark-1").starts_with("drain")
    });
    assert!(back, "{}", slurm_state(b, "spark-1"));
    let prom = std::fs::read_to_string(&metrics).unwrap();
    assert!(prom.contains("plan=\"ring3-lab\"} 0"), "{prom}");
    // the far end of the flapped cable (spark-3.f0) saw it too; its next check takes it in
    let s = b.check("spark-3");
    assert_eq!(s.one().1, "link flapped", "{}", s.story());
}

/// The docs' text between `start` and the end of its code block.
fn doc_block(start: &str) -> String {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/check.md"))
            .expect("docs/src/check.md");
    let at = doc
        .find(start)
        .unwrap_or_else(|| panic!("`{start}` in the docs"));
    doc[at..at + doc[at..].find("```").expect("its end")].to_string()
}

/// The `Prolog`/`Epilog` script and the systemd service's `ExecStart` of docs/src/check.md, as
/// written there (only the site's paths set to the lab's), with `SLURMD_NODENAME` set as slurmd
/// sets it for a prolog: the prolog passes on a
/// healthy node and drains it on a flap, exiting non-zero as a failing prolog must; the
/// service's command passes and writes its metrics. The `Prolog=` and `Epilog=` lines name the
/// script the prolog's comment names.
fn prolog_and_timer_recipes(b: &Bench) {
    let script = doc_block("#!/bin/sh\n# /usr/local/sbin/fabricplan-prolog");
    let conf = doc_block("Prolog=/usr/local/sbin/fabricplan-prolog");
    assert_eq!(
        conf.lines().collect::<Vec<_>>(),
        [
            "Prolog=/usr/local/sbin/fabricplan-prolog",
            "Epilog=/usr/local/sbin/fabricplan-prolog"
        ]
    );
    let dir = b.lab.dir().join("recipe");
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("prolog-spark-2.json");
    let site = |text: &str| {
        text.replace("/etc/fabricplan/site.toml", &b.plan.display().to_string())
            .replace(
                "/var/lib/fabricplan/check-site.json",
                &state.display().to_string(),
            )
    };
    let path = dir.join("fabricplan-prolog");
    std::fs::write(&path, site(&script)).unwrap();
    if !dir.join("fabricplan").exists() {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fabricplan"), dir.join("fabricplan"))
            .unwrap();
    }
    let prolog = || {
        b.lab.exec(
            "spark-2",
            &format!(
                "SLURMD_NODENAME=spark-2 SLURM_CONF='{}' PATH='{}':\"$PATH\" sh '{}'",
                b.lab.slurm_conf().display(),
                dir.display(),
                path.display()
            ),
        )
    };
    let o = prolog();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(state.exists(), "the prolog's state");
    b.exec_ok(
        "spark-2",
        "ip link set enp1s0f1np1 down && ip link set enp1s0f1np1 up",
    );
    b.wait_carrier("spark-2", "enp1s0f1np1");
    b.wait_carrier("spark-1", "enp1s0f0np0");
    let o = prolog();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let drained = slurm_state(b, "spark-2");
    assert!(
        drained.starts_with("drain") && drained.contains("|fabricplan check: link flapped cable "),
        "{drained}"
    );
    let o = b.lab.slurm("scontrol update nodename=spark-2 state=resume");
    assert!(o.status.success(), "{o:?}");
    let back = lab::wait(Duration::from_secs(10), || {
        !slurm_state(b, "spark-2").starts_with("drain")
    });
    assert!(back, "{}", slurm_state(b, "spark-2"));
    // spark-1 saw the same flap at its end: its own check takes it in before the next step
    let s = b.check("spark-1");
    assert_eq!(s.one().1, "link flapped", "{}", s.story());

    // the systemd service's command, on spark-3
    let unit = doc_block("[Unit]\nDescription=fabricplan: this node");
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    let metrics = dir.join("timer-spark-3.prom");
    let cmd = site(exec)
        .replace(
            "/usr/local/bin/fabricplan",
            env!("CARGO_BIN_EXE_fabricplan"),
        )
        .replace(
            "/var/lib/node_exporter/textfile/fabricplan.prom",
            &metrics.display().to_string(),
        )
        .replace(
            &state.display().to_string(),
            &dir.join("timer-spark-3.json").display().to_string(),
        );
    assert!(
        !cmd.contains("/etc/") && !cmd.contains("/var/lib/"),
        "{cmd}"
    );
    let o = b.lab.exec(
        "spark-3",
        &format!("SLURM_CONF='{}' {cmd}", b.lab.slurm_conf().display()),
    );
    // spark-3's first check against its own state: nothing since, all healthy
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let prom = std::fs::read_to_string(&metrics).expect("the service's metrics");
    assert!(
        prom.contains("fabricplan_check_status{node=\"spark-3\",plan=\"ring3-lab\"} 0"),
        "{prom}"
    );
}

/// slurmd itself runs the docs' health-check script (`HealthCheckProgram`, every 2 s here; the
/// state per host, as `/var/lib` is on a real node): a flapped cable drains both its nodes with the
/// finding within an interval or two, the third stays in service, and the next checks return them.
fn slurmd_runs_the_health_check(b: &Bench) {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/check.md"))
            .expect("docs/src/check.md");
    let start = doc
        .find("#!/bin/sh\n# fabricplan-health")
        .expect("the script");
    let script = &doc[start..start + doc[start..].find("```").expect("its end")];
    let dir = b.lab.dir().join("recipe");
    let conf = b.lab.slurm_conf();
    let mut lines: Vec<String> = Vec::new();
    for l in script.lines() {
        lines.push(match l.split_once('=') {
            Some(("PLAN", _)) => format!("PLAN='{}'", b.plan.display()),
            Some(("STATE", _)) => format!("STATE='{}'/slurmd-$(hostname).json", dir.display()),
            Some(("METRICS", _)) => format!("METRICS='{}'/slurmd-$(hostname).prom", dir.display()),
            _ => l.to_string(),
        });
        if l.starts_with("#!") {
            // what slurmd does not give its health check: the lab's Slurm and fabricplan
            lines.push(format!("export SLURM_CONF='{}'", conf.display()));
            lines.push(format!("export PATH='{}':\"$PATH\"", dir.display()));
        }
    }
    let path = dir.join("fabricplan-health-slurmd");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let original = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(
        &conf,
        format!(
            "{original}HealthCheckProgram={}\nHealthCheckInterval=2\nHealthCheckNodeState=ANY\n",
            path.display()
        ),
    )
    .unwrap();
    let o = b.lab.slurm("scontrol reconfigure");
    assert!(o.status.success(), "{o:?}");
    // every node's health check has run once (its state is there) before the flap
    let ran = lab::wait(Duration::from_secs(30), || {
        NODES
            .iter()
            .all(|n| dir.join(format!("slurmd-{n}.json")).exists())
    });
    assert!(ran, "slurmd never ran the health check");
    b.exec_ok(
        "spark-2",
        "ip link set enp1s0f0np0 down && ip link set enp1s0f0np0 up",
    );
    let drained = lab::wait(Duration::from_secs(30), || {
        ["spark-2", "spark-3"]
            .iter()
            .all(|n| slurm_state(b, n).contains("|fabricplan check: link flapped cable "))
    });
    assert!(
        drained,
        "spark-2: {}; spark-3: {}",
        slurm_state(b, "spark-2"),
        slurm_state(b, "spark-3")
    );
    assert!(!slurm_state(b, "spark-1").starts_with("drain"));
    let back = lab::wait(Duration::from_secs(30), || {
        NODES
            .iter()
            .all(|n| !slurm_state(b, n).starts_with("drain"))
    });
    assert!(back, "{:?}", NODES.map(|n| slurm_state(b, n)));
    std::fs::write(&conf, original).unwrap();
    let o = b.lab.slurm("scontrol reconfigure");
    assert!(o.status.success(), "{o:?}");
}

/// slurmd itself runs the docs' `Prolog` script before a job on a node (the site's paths set to
/// the lab's, the state per host): a healthy node runs the job; after a flap of one of its
/// cables the prolog fails, the job does not run there and the node is drained.
fn slurmd_runs_the_prolog(b: &Bench) {
    let script = doc_block("#!/bin/sh\n# /usr/local/sbin/fabricplan-prolog");
    let dir = b.lab.dir().join("recipe");
    std::fs::create_dir_all(&dir).unwrap();
    if !dir.join("fabricplan").exists() {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fabricplan"), dir.join("fabricplan"))
            .unwrap();
    }
    let conf = b.lab.slurm_conf();
    let mut lines: Vec<String> = Vec::new();
    for l in script.lines() {
        lines.push(
            l.replace(
                "/etc/fabricplan/site.toml",
                &format!("'{}'", b.plan.display()),
            )
            .replace(
                "/var/lib/fabricplan/check-site.json",
                &format!("'{}'/prolog-$(hostname).json", dir.display()),
            ),
        );
        if l.starts_with("#!") {
            lines.push(format!("export SLURM_CONF='{}'", conf.display()));
            lines.push(format!("export PATH='{}':\"$PATH\"", dir.display()));
        }
    }
    let path = dir.join("fabricplan-prolog-slurmd");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let original = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(&conf, format!("{original}Prolog={}\n", path.display())).unwrap();
    let o = b.lab.slurm("scontrol reconfigure");
    assert!(o.status.success(), "{o:?}");
    let o = b.lab.slurm("timeout 60 srun -w spark-3 true");
    assert!(o.status.success(), "a healthy node runs the job: {o:?}");
    assert!(dir.join("prolog-spark-3.json").exists(), "the prolog ran");
    b.exec_ok(
        "spark-3",
        "ip link set enp1s0f1np1 down && ip link set enp1s0f1np1 up",
    );
    b.wait_carrier("spark-3", "enp1s0f1np1");
    b.wait_carrier("spark-2", "enp1s0f0np0");
    let o = b.lab.slurm("timeout 60 srun -w spark-3 true");
    assert!(!o.status.success(), "the job ran on a flapped node: {o:?}");
    let drained = lab::wait(Duration::from_secs(10), || {
        slurm_state(b, "spark-3").starts_with("drain")
    });
    // drained by the prolog's check with its finding (Slurm's own drain for a failed prolog
    // keeps a reason already set; `Prolog error` would still say the node is out)
    let state = slurm_state(b, "spark-3");
    assert!(
        drained
            && (state.contains("|fabricplan check: link flapped cable ")
                || state.contains("Prolog")),
        "{state}"
    );
    std::fs::write(&conf, original).unwrap();
    let o = b.lab.slurm("scontrol reconfigure");
    assert!(o.status.success(), "{o:?}");
    let o = b.lab.slurm("scontrol update nodename=spark-3 state=resume");
    assert!(o.status.success(), "{o:?}");
}

/// Benchmark, not a timed test (`cargo test --test lab_check -- --ignored --nocapture`): wall
/// time and peak RSS of `check` on a lab node, healthy and with MTU 1500 on one half, under GNU
/// time. `FABRICPLAN_BIN` names the binary measured (default: this build's).
#[test]
#[ignore]
fn bench_check_wall_and_memory() {
    if !lab_enabled() {
        return;
    }
    let twin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lab/plans/ring3.toml");
    let loaded = fabricplan::kinds::load(&twin).expect("ring3 twin loads");
    let lab = Lab::build(&lab::twin::lab_spec("chb", &loaded.plan).lldp()).expect("lab");
    lab.wait_lldp(Duration::from_secs(30))
        .expect("LLDP neighbours");
    let plan = lab::twin::plan_file(&lab, &twin).expect("plan file");
    let bin = std::env::var("FABRICPLAN_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_fabricplan").to_string());
    let state = lab.dir().join("bench-state.json");
    let measure = |what: &str| {
        let mut rows = Vec::new();
        for _ in 0..10 {
            let o = lab.exec(
                "spark-2",
                &format!(
                    "/usr/bin/time -f 'TIME %e %M' '{bin}' check '{}' --state '{}' >/dev/null",
                    plan.display(),
                    state.display()
                ),
            );
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            let line = err
                .lines()
                .rev()
                .find(|l| l.starts_with("TIME "))
                .unwrap_or_else(|| panic!("{err}"));
            let v: Vec<f64> = line[5..]
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            rows.push((v[0], v[1], o.status.code()));
        }
        let mut wall: Vec<f64> = rows.iter().map(|r| r.0).collect();
        wall.sort_by(f64::total_cmp);
        let rss = rows.iter().map(|r| r.1).fold(0.0, f64::max);
        eprintln!(
            "BENCH {what}: wall median {:.2} s (min {:.2}, max {:.2}), peak RSS max {:.0} KiB, exit {:?}",
            wall[wall.len() / 2],
            wall[0],
            wall[wall.len() - 1],
            rss,
            rows[0].2
        );
    };
    measure("healthy");
    lab.set_mtu("spark-2", "enp1s0f0np0", 1500).unwrap();
    measure("MTU 1500 on spark-2.f0.a");
    lab.set_mtu("spark-2", "enp1s0f0np0", 9000).unwrap();
    let fp = lab.footprint();
    drop(lab);
    assert!(fp.remaining().is_empty(), "{:?}", fp.remaining());
}
