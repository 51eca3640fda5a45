//! The SSH transport's host key policy on a real sshd: strict by default (an unknown host is
//! refused with its key's fingerprint and the `ssh-keyscan` line to run), `accept-new` records
//! an unknown host's key and connects pinned to it, a changed key is refused and named as
//! changed (with accept-new too), a host that no longer offers the recorded key's type is
//! refused, and one that offers a later recorded type than the first is reached through it.
//! Needs root, like every lab test.

mod lab;

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use lab::{Lab, LabSpec, lab_enabled};
use serde_json::Value;

/// `fabricplan detect --host HOST` with the lab's ssh_config (or `config`) against the
/// known_hosts file `known`: exit code, the host's report, stderr.
fn detect(
    lab: &Lab,
    config: Option<&Path>,
    host: &str,
    known: &Path,
    extra: &[&str],
) -> (i32, Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .args([
            "detect",
            "--host",
            host,
            "--format",
            "json",
            "--known-hosts",
        ])
        .arg(known)
        .arg("--ssh-config")
        .arg(
            config
                .map(Path::to_path_buf)
                .unwrap_or_else(|| lab.ssh_config_path()),
        )
        .args(extra)
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .expect("detect runs");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "detect output is not JSON ({e}): {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code().unwrap_or(-1), v[0].clone())
}

fn error(report: &Value) -> String {
    report["error"].as_str().unwrap_or("").to_string()
}

/// A fresh key's public half, `TYPE BASE64`.
fn fresh_key(dir: &Path, kind: &str) -> String {
    let p = dir.join(format!("k-{kind}"));
    let _ = std::fs::remove_file(&p);
    let out = lab::run(&[
        "ssh-keygen",
        "-q",
        "-t",
        kind,
        "-N",
        "",
        "-f",
        &p.display().to_string(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(p.with_extension("pub")).unwrap();
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn host_keys_strict_accept_new_changed_and_key_types() {
    if !lab_enabled() {
        return;
    }
    let lab = Lab::build(&LabSpec::new("hk").hosts_only().host("h1")).expect("lab builds");
    let dir = tempfile::tempdir().unwrap();
    let ip = lab.host("h1").mgmt_ip.to_string();
    let real = std::fs::read_to_string(lab.dir().join("ssh/known_hosts"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("h1,"))
        .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .unwrap();
    let known = dir.path().join("known_hosts");

    // unknown host, strict: refused, with its key's fingerprint and the line to run
    std::fs::write(&known, "").unwrap();
    let (code, r) = detect(&lab, None, "h1", &known, &[]);
    let e = error(&r);
    assert_eq!(code, 1, "{r}");
    assert!(
        e.contains("is not in") && e.contains("refused") && e.contains("ssh-ed25519 SHA256:"),
        "{e}"
    );
    assert!(e.contains(&format!("ssh-keyscan -p 22 {ip} >> ")), "{e}");
    assert_eq!(std::fs::read_to_string(&known).unwrap(), "");

    // accept-new: the key recorded, then used pinned
    let (code, r) = detect(&lab, None, "h1", &known, &["--accept-new-host-keys"]);
    assert_eq!(code, 0, "{r}");
    let learned = std::fs::read_to_string(&known).unwrap();
    let lines: Vec<&str> = learned.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "{learned}");
    let line = lines[0];
    assert!(
        line.starts_with(&ip) && line.ends_with(&real),
        "{line} / {real}"
    );
    let (code, r) = detect(&lab, None, "h1", &known, &[]);
    assert_eq!(code, 0, "{r}");

    // a changed key: refused and named as changed, with its line, accept-new or not
    let other = fresh_key(dir.path(), "ed25519");
    std::fs::write(&known, format!("# a comment\n{ip} {other}\n")).unwrap();
    for extra in [&[][..], &["--accept-new-host-keys"][..]] {
        let (code, r) = detect(&lab, None, "h1", &known, extra);
        let e = error(&r);
        assert_eq!(code, 1, "{r}");
        assert!(
            e.contains("HOST KEY CHANGED") && e.contains(&format!("{}:1)", known.display())),
            "{e}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&known).unwrap(),
        format!("# a comment\n{ip} {other}\n")
    );

    // only a key of a type the server does not offer: refused, whatever the policy
    let ecdsa = fresh_key(dir.path(), "ecdsa");
    std::fs::write(&known, format!("{ip} {ecdsa}\n")).unwrap();
    for extra in [&[][..], &["--accept-new-host-keys"][..]] {
        let (code, r) = detect(&lab, None, "h1", &known, extra);
        let e = error(&r);
        assert_eq!(code, 1, "{r}");
        assert!(
            e.contains("of types it no longer offers") && e.contains("ssh-ed25519"),
            "{e}"
        );
    }
    // an extra recorded key of another type does not stand in the way
    std::fs::write(&known, format!("{ip} {ecdsa}\n{ip} {real}\n")).unwrap();
    assert_eq!(detect(&lab, None, "h1", &known, &[]).0, 0);

    second_sshd_with_an_ecdsa_key_only(&lab, &ip);
}

/// A second sshd on h1 (port 2222) whose only host key is ECDSA: with an Ed25519 key (the
/// first type tried) and its real ECDSA key recorded, it is reached through the ECDSA key;
/// with the Ed25519 key alone, refused.
fn second_sshd_with_an_ecdsa_key_only(lab: &Lab, ip: &str) {
    let host_dir = lab.dir().join("hosts/h1");
    // in the lab's directory: the host's /tmp is its own
    let dir = &lab.dir().join("sshd2");
    std::fs::create_dir_all(dir).unwrap();
    let key = dir.join("hostkey-ecdsa");
    let out = lab::run(&[
        "ssh-keygen",
        "-q",
        "-t",
        "ecdsa",
        "-N",
        "",
        "-f",
        &key.display().to_string(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let pub_key = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let pub_key: String = pub_key
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    let config = std::fs::read_to_string(host_dir.join("sshd_config")).unwrap();
    let pid_file = dir.join("sshd2.pid");
    let config: String = config
        .lines()
        .map(|l| {
            if l.starts_with("Port ") {
                "Port 2222".to_string()
            } else if l.starts_with("HostKey ") {
                format!("HostKey {}", key.display())
            } else if l.starts_with("PidFile ") {
                format!("PidFile {}", pid_file.display())
            } else {
                l.to_string()
            }
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let cfg = dir.join("sshd2_config");
    std::fs::write(&cfg, config).unwrap();
    let out = lab.exec(
        "h1",
        &format!(
            "/usr/sbin/sshd -f {} -E {}",
            cfg.display(),
            dir.join("sshd2.log").display()
        ),
    );
    assert!(out.status.success(), "{out:?}");
    let addr: SocketAddr = format!("{ip}:2222").parse().unwrap();
    assert!(lab::wait(Duration::from_secs(10), || {
        TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
    }));
    let client_key = lab.dir().join("ssh/client_key");
    let ssh_config = dir.join("ssh_config");
    std::fs::write(
        &ssh_config,
        format!(
            "Host alt\n  HostName {ip}\n  Port 2222\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n",
            client_key.display()
        ),
    )
    .unwrap();
    let known = dir.join("known_hosts.2222");
    let ed = fresh_key(dir, "ed25519");
    std::fs::write(&known, format!("[{ip}]:2222 {ed}\n[{ip}]:2222 {pub_key}\n")).unwrap();
    let (code, r) = detect(lab, Some(&ssh_config), "alt", &known, &[]);
    std::fs::write(&known, format!("[{ip}]:2222 {ed}\n")).unwrap();
    let (code_ed_only, r_ed_only) = detect(lab, Some(&ssh_config), "alt", &known, &[]);
    let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
    let _ = lab.exec("h1", &format!("kill {}", pid.trim()));
    assert_eq!(code, 0, "{r}");
    assert_eq!(code_ed_only, 1, "{r_ed_only}");
    let e = error(&r_ed_only);
    assert!(
        e.contains("of types it no longer offers") && e.contains("ecdsa-sha2-nistp256"),
        "{e}"
    );
}
