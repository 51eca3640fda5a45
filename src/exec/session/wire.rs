//! The session's wire: the loop that runs on the host ([`LOOP`], plain POSIX sh), the command
//! line that starts it, the requests written to it and the answers read back. Pure.

use crate::render::quote;

/// The control loop, as kept in `loop.sh` (comment lines are taken out before it is sent).
const LOOP_SOURCE: &str = include_str!("loop.sh");

/// What every answer line starts with.
pub const PREFIX: &str = "@fp ";

/// The loop's text as sent: its comment lines taken out.
pub fn loop_script() -> String {
    LOOP_SOURCE
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The command that starts a session answering to `token`: `/bin/sh -c LOOP
/// fabricplan-session TOKEN`, one line a login shell runs as it is (the loop itself is quoted
/// as one word: the login shell may be bash, csh or fish).
pub fn command(token: &str) -> String {
    format!(
        "/bin/sh -c {} fabricplan-session {}",
        quote(&loop_script()).unwrap_or_default(),
        quote(token).unwrap_or_default()
    )
}

/// The argument vector that starts a session without a login shell in front (a local process,
/// a Slurm step's task).
pub fn argv(token: &str) -> Vec<String> {
    vec![
        "/bin/sh".to_string(),
        "-c".to_string(),
        loop_script(),
        "fabricplan-session".to_string(),
        token.to_string(),
    ]
}

/// A fresh random word (16 hex digits): a session's hello token, a request's end line.
pub fn random_word() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// The line that ends a request's script: a random word no line of `script` equals.
pub fn end_line(script: &str) -> String {
    loop {
        let end = format!("@fp-end-{}", random_word());
        if !script.lines().any(|l| l == end) {
            return end;
        }
    }
}

/// How a job is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// To its end (`r`).
    Run,
    /// Staged: waiting at its gate for `g ID` (`s`).
    Staged,
    /// Until stopped (`b`, a server): its start says when, by the host's clock.
    Background,
}

impl Verb {
    fn letter(self) -> char {
        match self {
            Verb::Run => 'r',
            Verb::Staged => 's',
            Verb::Background => 'b',
        }
    }
}

/// A request to run `script` as job `id`.
pub fn run_request(id: u64, script: &str, verb: Verb) -> Vec<u8> {
    let end = end_line(script);
    let verb = verb.letter();
    let mut out = format!("{verb} {id} {end}\n{script}");
    if !script.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&end);
    out.push('\n');
    out.into_bytes()
}

/// Release (`go`) or withdraw staged job `id`.
pub fn gate_request(id: u64, go: bool) -> Vec<u8> {
    format!("{} {id}\n", if go { 'g' } else { 'w' }).into_bytes()
}

/// Stop job `id`: TERM to the process group its watcher recorded, KILL after 2 s; the job then
/// answers as any job does, with what it wrote.
pub fn stop_request(id: u64) -> Vec<u8> {
    format!("k {id}\n").into_bytes()
}

/// The request that ends the session.
pub const EXIT: &[u8] = b"x\n";

/// The controller's heartbeat: the loop's watchdog ends a session that hears nothing for two
/// 10 s windows in a row.
pub const BEAT: &[u8] = b"h\n";

/// The gate a staged job's script waits at: it says it is armed (into the session's queue,
/// `DIR/q`) and reads one line on its stdin; `go` runs the rest, anything else (a withdrawal,
/// the end of input) ends it unrun.
pub fn gate(id: u64, dir: &str) -> String {
    format!(
        "printf 'A %s\\n' {id} 1<>{q} && read -r fp_go && [ \"$fp_go\" = go ] && ",
        q = quote(&format!("{dir}/q")).unwrap_or_default()
    )
}

/// One answer line of the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The session is up: its token, the loop's pid, the bound on each output stream of a
    /// job (bytes), its directory.
    Hello {
        token: String,
        pid: u32,
        limit: u64,
        dir: String,
    },
    /// It could not start, and why.
    Failed(String),
    /// A job started in this process group (a background job: at this time, ns by the host's
    /// clock).
    Started {
        id: u64,
        pgid: u32,
        started_ns: Option<u64>,
    },
    /// A staged job waits at its gate.
    Armed(u64),
    /// A job ended with this status; its stdout, its stderr and the processes it left behind
    /// follow.
    Done { id: u64, status: i32 },
    /// The session ends.
    Bye,
}

/// Read one line of the loop's output: `None` for a line that is not an answer (what a login
/// shell's start-up files print before the loop starts).
pub fn answer(line: &str) -> Option<Answer> {
    let rest = line.trim_end_matches(['\n', '\r']).strip_prefix(PREFIX)?;
    let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let mut words = rest.split(' ');
    let mut num = || words.next().and_then(|w| w.parse::<u64>().ok());
    match kind {
        "H" => {
            let mut parts = rest.splitn(4, ' ');
            let token = parts.next()?.to_string();
            let pid = parts.next()?.parse().ok()?;
            let blocks: u64 = parts.next()?.parse().ok()?;
            let dir = parts.next()?.to_string();
            Some(Answer::Hello {
                token,
                pid,
                limit: blocks.saturating_mul(512),
                dir,
            })
        }
        "F" => Some(Answer::Failed(rest.to_string())),
        "P" => {
            let id = num()?;
            let pgid = u32::try_from(num()?).ok()?;
            // a group of 0 or 1 is no job's: kill(-0) is our own group, kill(-1) everything
            if pgid < 2 {
                return None;
            }
            Some(Answer::Started {
                id,
                pgid,
                started_ns: num(),
            })
        }
        "A" => Some(Answer::Armed(num()?)),
        "D" => {
            let id = num()?;
            let status = words.next()?.parse().ok()?;
            Some(Answer::Done { id, status })
        }
        "Q" => Some(Answer::Bye),
        _ => None,
    }
}

/// The line that closes an output of a `D` answer.
pub fn is_output_end(line: &str) -> bool {
    line.trim_end_matches(['\n', '\r']) == "."
}

/// One base64 line of an output, decoded (coreutils writes lines of 76 characters, each a
/// whole number of 4-character groups). `None` for a line that is not base64.
pub fn decode_line(line: &str) -> Option<Vec<u8>> {
    data_encoding::BASE64
        .decode(line.trim_end_matches(['\n', '\r']).as_bytes())
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_and_anything_else_is_not_one() {
        assert_eq!(
            answer("@fp H 0123abcd 4242 131072 /tmp/fabricplan-session.x y\n"),
            Some(Answer::Hello {
                token: "0123abcd".into(),
                pid: 4242,
                limit: 64 << 20,
                dir: "/tmp/fabricplan-session.x y".into()
            })
        );
        assert_eq!(
            answer("@fp P 7 31337"),
            Some(Answer::Started {
                id: 7,
                pgid: 31337,
                started_ns: None
            })
        );
        assert_eq!(
            answer("@fp P 7 31337 1700000000123456789"),
            Some(Answer::Started {
                id: 7,
                pgid: 31337,
                started_ns: Some(1_700_000_000_123_456_789)
            })
        );
        assert_eq!(answer("@fp A 7"), Some(Answer::Armed(7)));
        assert_eq!(
            answer("@fp D 7 143"),
            Some(Answer::Done { id: 7, status: 143 })
        );
        assert_eq!(answer("@fp Q"), Some(Answer::Bye));
        assert_eq!(
            answer("@fp F base64 is not installed"),
            Some(Answer::Failed("base64 is not installed".into()))
        );
        for noise in [
            "Welcome to conda",
            "@fp",
            "@fp P x 1",
            "@fp P 1",
            "@fp P 1 0",
            "@fp P 1 1",
            "@fp D 1 x",
            "@fp Z 1",
            " @fp Q",
        ] {
            assert_eq!(answer(noise), None, "{noise}");
        }
    }

    #[test]
    fn a_request_ends_at_a_line_its_script_does_not_hold() {
        let script = "echo a\n@fp-end-x\necho b";
        let r = String::from_utf8(run_request(3, script, Verb::Run)).unwrap();
        let mut lines = r.lines();
        let head = lines.next().unwrap();
        let end = head.strip_prefix("r 3 ").unwrap();
        assert!(end.starts_with("@fp-end-") && end.len() == 8 + 16, "{end}");
        let body: Vec<&str> = lines.collect();
        assert_eq!(body, ["echo a", "@fp-end-x", "echo b", end]);
        assert!(
            String::from_utf8(run_request(4, "true\n", Verb::Staged))
                .unwrap()
                .starts_with("s 4 ")
        );
        assert!(
            String::from_utf8(run_request(5, "true", Verb::Background))
                .unwrap()
                .starts_with("b 5 ")
        );
        assert_eq!(stop_request(5), b"k 5\n");
        assert_eq!(gate_request(4, true), b"g 4\n");
        assert_eq!(gate_request(4, false), b"w 4\n");
    }

    #[test]
    fn the_loop_is_sent_without_its_comments_and_parses() {
        let s = loop_script();
        assert!(!s.lines().any(|l| l.trim_start().starts_with('#')), "{s}");
        for shell in ["/bin/sh", "dash", "bash"] {
            let out = std::process::Command::new(shell)
                .args(["-n", "-c", &s])
                .output();
            if let Ok(o) = out {
                assert!(
                    o.status.success(),
                    "{shell}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            }
        }
        assert!(command("abc").starts_with("/bin/sh -c '"));
        assert!(command("abc").ends_with(" fabricplan-session abc"));
    }

    #[test]
    fn output_lines_decode() {
        assert_eq!(decode_line("aGVsbG8K\n").unwrap(), b"hello\n");
        assert_eq!(decode_line("AP8=").unwrap(), [0u8, 255]);
        assert!(decode_line("not base64!").is_none());
        assert!(is_output_end(".\n") && !is_output_end(".x"));
    }
}
