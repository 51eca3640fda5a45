//! What a login shell costs on a lab host. sshd runs every command through the user's login
//! shell with `-c`, and Debian's and Ubuntu's bash (built with SSH_SOURCE_BASHRC) then read
//! `~/.bashrc`, where real GPU hosts set up conda, pyenv, nvm or Lmod. A lab host whose `/root`
//! is empty starts a command in ~3 ms and hides that cost; so each host gets a `~/.bashrc` that
//! takes a configurable time of the host's own (a `sleep`: the shared CPU plays no part) and
//! appends what it ran for (the first 200 and the last 80 characters of bash's `-c` string: a
//! long script names itself at its end, as fabricplan's session does) to a counter file,
//! and an `/etc/passwd` view in which root's login shell is bash.
//!
//! The cost is read at each login from `<lab>/bin/.login-ms` (the hosts' `/usr/local/bin`):
//! [`super::LabSpec::login_cost`], [`super::Lab::set_login_cost`], else
//! `FABRICPLAN_LAB_LOGIN_MS` (unset: 0).

use std::fs;
use std::path::Path;

/// Where each host's bashrc appends what it ran for (in the host's private `/root`).
pub const SHELLS_FILE: &str = "/root/.fabricplan-lab-shells";

/// The hosts' `~/.bashrc`.
pub const BASHRC: &str = r#"# fabricplan lab: what a login shell costs on this host
fp_s=${BASH_EXECUTION_STRING//$'\n'/ }
if [ ${#fp_s} -gt 280 ]; then fp_s="${fp_s:0:200} ... ${fp_s: -80}"; fi
printf '%s\n' "$fp_s" >> /root/.fabricplan-lab-shells
fp_ms=0
read -r fp_ms < /usr/local/bin/.login-ms 2>/dev/null
if [ "${fp_ms:-0}" -gt 0 ] 2>/dev/null; then
  printf -v fp_s '%d.%03d' $((fp_ms / 1000)) $((fp_ms % 1000))
  sleep "$fp_s"
fi
unset fp_s fp_ms
"#;

/// The login cost from `FABRICPLAN_LAB_LOGIN_MS` (0 when unset); a value that is not a whole
/// number of ms is refused.
pub fn from_env() -> Result<u64, String> {
    match std::env::var("FABRICPLAN_LAB_LOGIN_MS") {
        Ok(v) => v
            .trim()
            .parse()
            .map_err(|e| format!("FABRICPLAN_LAB_LOGIN_MS={v:?}: {e}")),
        Err(_) => Ok(0),
    }
}

/// Writes `etc/bashrc` and `etc/passwd` (the machine's, root's shell set to bash) into the
/// lab's `etc` directory; the hosts mount them at `/root/.bashrc` and `/etc/passwd`.
pub fn write_views(etc: &Path) -> Result<(), String> {
    if !Path::new("/bin/bash").exists() {
        return Err("the lab's hosts need /bin/bash as root's login shell".into());
    }
    let system = fs::read_to_string("/etc/passwd").map_err(|e| format!("read /etc/passwd: {e}"))?;
    let passwd: String = system
        .lines()
        .map(|l| {
            let mut f: Vec<&str> = l.split(':').collect();
            if f.first() == Some(&"root") && f.len() == 7 {
                f[6] = "/bin/bash";
            }
            format!("{}\n", f.join(":"))
        })
        .collect();
    fs::write(etc.join("passwd"), passwd)
        .and_then(|_| fs::write(etc.join("bashrc"), BASHRC))
        .map_err(|e| format!("write {}: {e}", etc.display()))
}

/// Sets the login cost (ms) every host's bashrc takes from now on.
pub fn set_cost(bin: &Path, ms: u64) -> Result<(), String> {
    let p = bin.join(".login-ms");
    fs::write(&p, format!("{ms}\n")).map_err(|e| format!("write {}: {e}", p.display()))
}
