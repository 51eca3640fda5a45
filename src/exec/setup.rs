//! The optional setup stage (`fabricplan run --setup`): install the tooling and build
//! nccl-tests with MPI=1 on every node. The only part of fabricplan that changes a host, so it
//! runs only when asked; checking stays read-only.

use std::time::Duration;

use futures::future::join_all;

use super::launch::{Launcher, Opening};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::trap::Trap;
use crate::plan::{NodeId, Plan};
use crate::render::quote;

/// The upstream nccl-tests repository, when the plan names no mirror.
pub const NCCL_TESTS_REPO: &str = "https://github.com/NVIDIA/nccl-tests";

/// The setup script for one node.
pub fn script(plan: &Plan, node: NodeId) -> Option<String> {
    let setup = plan.setup.as_ref()?;
    let q = |s: &str| quote(s).unwrap_or_default();
    let mut s = String::from(
        "set -e; SUDO=; [ \"$(id -u)\" = 0 ] || SUDO='sudo -n'; export DEBIAN_FRONTEND=noninteractive; ",
    );
    if !setup.packages.is_empty() {
        let pkgs: Vec<String> = setup.packages.iter().map(|p| q(p)).collect();
        s.push_str(&format!(
            "$SUDO apt-get update -qq; $SUDO apt-get install -y -qq {}; ",
            pkgs.join(" ")
        ));
    }
    if setup.build_nccl_tests {
        // nccl-tests-dir is the build output (…/nccl-tests/build); the checkout is its parent
        let dir = plan
            .node(node)
            .nccl_tests_dir
            .clone()
            .unwrap_or_else(|| "$HOME/nccl-tests/build".into());
        let checkout = dir
            .trim_end_matches('/')
            .trim_end_matches("/build")
            .to_string();
        let repo = setup
            .nccl_tests_repo
            .clone()
            .unwrap_or_else(|| NCCL_TESTS_REPO.into());
        // `$HOME` is the one expansion kept (the default lives there); the rest is data
        let checkout_q = match checkout.strip_prefix("$HOME") {
            Some("") => "\"$HOME\"".to_string(),
            Some(rest) if rest.starts_with('/') => format!("\"$HOME\"{}", q(rest)),
            _ => q(&checkout),
        };
        s.push_str(&format!(
            "if [ ! -x {c}/build/all_reduce_perf ]; then [ -d {c} ] || git clone --depth 1 -- {r} {c}; \
MPI_HOME=/usr/lib/$(uname -m)-linux-gnu/openmpi; make -C {c} MPI=1 MPI_HOME=\"$MPI_HOME\" NCCL_HOME=/usr -j\"$(nproc)\"; fi; ",
            c = checkout_q,
            r = q(&repo)
        ));
    }
    s.push_str("echo setup-ok");
    Some(s)
}

/// Run the setup stage on every node the launcher opened the run on (`opening`: those it
/// cannot reach are reported by the run itself), written the way it runs one-shot scripts;
/// one verdict per node.
pub async fn run(plan: &Plan, launcher: &dyn Launcher, opening: &Opening) -> Vec<Verdict> {
    let jobs: Vec<(NodeId, String)> = plan
        .nodes
        .iter()
        .filter(|n| !opening.unavailable.iter().any(|u| u.node == n.name))
        .filter_map(|n| script(plan, n.id).map(|s| (n.id, launcher.style().oneshot(n, &s))))
        .collect();
    let outs = join_all(
        jobs.iter()
            .map(|(n, s)| launcher.exec(plan.node(*n), s, Duration::from_secs(3600))),
    )
    .await;
    jobs.iter()
        .zip(outs)
        .map(|((n, _), out)| {
            let gate = format!("setup {}", plan.node(*n).name);
            match out {
                Ok(o) if o.success() && o.stdout.contains("setup-ok") => {
                    Verdict::check(gate, Outcome::Ok, "tooling installed", None)
                }
                Ok(o) => Verdict::check(
                    gate,
                    Outcome::Fail,
                    format!(
                        "exit {}: {}",
                        o.status,
                        o.stderr
                            .lines()
                            .rev()
                            .find(|l| !l.trim().is_empty())
                            .unwrap_or("")
                            .trim()
                    ),
                    Some(Trap::ToolError),
                ),
                Err(e) => Verdict::check(
                    gate,
                    Outcome::Fail,
                    e.to_string(),
                    Some(e.trap().unwrap_or(Trap::Unreachable)),
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn setup_script_installs_and_builds_with_mpi() {
        let text = r#"format-version = 1
name = "s"
[[node]]
name = "a"
nccl-tests-dir = "/opt/nccl-tests/build"
[[node]]
name = "b"
[[cable]]
kind = "direct"
ends = ["a.f0", "b.f0"]
halves = ["a"]
subnets = { a = "198.51.100.0/30" }
[setup]
build-nccl-tests = true
"#;
        let plan = crate::kinds::load_str(Path::new("s.toml"), text, Path::new("."))
            .unwrap()
            .plan;
        let s = script(&plan, NodeId(0)).unwrap();
        assert!(
            s.contains("apt-get install -y -qq perftest rdma-core"),
            "{s}"
        );
        assert!(s.contains("make -C /opt/nccl-tests MPI=1"), "{s}");
        let out = std::process::Command::new("/bin/sh")
            .arg("-n")
            .arg("-c")
            .arg(&s)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "syntax: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // no [setup]: nothing to run
        let plain = text.replace("[setup]\nbuild-nccl-tests = true\n", "");
        let plan = crate::kinds::load_str(Path::new("s.toml"), &plain, Path::new("."))
            .unwrap()
            .plan;
        assert!(script(&plan, NodeId(0)).is_none());
    }

    /// Regression: an `nccl-tests-dir` under `$HOME` was wrapped in double quotes unescaped
    /// (`$(...)` ran) and the repository reached `git clone` where a leading `-` is an option.
    #[test]
    fn hostile_setup_values_stay_data() {
        let dir = tempfile::tempdir().unwrap();
        let pwned = dir.path().join("pwned");
        let text = format!(
            r#"format-version = 1
name = "s"
[[node]]
name = "a"
nccl-tests-dir = "$HOME/x$(touch {p})`touch {p}`/build"
[[node]]
name = "b"
[[cable]]
kind = "direct"
ends = ["a.f0", "b.f0"]
halves = ["a"]
subnets = {{ a = "198.51.100.0/30" }}
[setup]
packages = ["perftest"]
build-nccl-tests = true
nccl-tests-repo = "--upload-pack=touch {p}"
"#,
            p = pwned.display()
        );
        let plan = crate::kinds::load_str(Path::new("s.toml"), &text, Path::new("."))
            .unwrap()
            .plan;
        let s = script(&plan, NodeId(0)).unwrap();
        // every command the script runs is a stub that records its arguments
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let log = dir.path().join("log");
        for tool in ["apt-get", "git", "make", "uname", "nproc", "id", "sudo"] {
            let p = bin.join(tool);
            std::fs::write(
                &p,
                format!(
                    "#!/bin/sh\nprintf '{tool}' >> {l}; for a in \"$@\"; do printf ' [%s]' \"$a\" >> {l}; done; echo >> {l}\n",
                    l = log.display()
                ),
            )
            .unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&s)
            .env("PATH", &bin)
            .env("HOME", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(!pwned.exists(), "a plan value ran as a command:\n{s}");
        let calls = std::fs::read_to_string(&log).unwrap();
        let clone = calls.lines().find(|l| l.starts_with("git")).unwrap();
        assert!(
            clone.contains("[--] [--upload-pack=touch"),
            "the repository must come after `--`: {clone}"
        );
        assert!(
            clone.contains(&format!("[{}/x$(touch", dir.path().display())),
            "$HOME expanded, the rest literal: {clone}"
        );
    }
}
