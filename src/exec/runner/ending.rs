//! How a tool ended, when not by itself, and what it left running: verdicts that name the host
//! or the tool, never the path. A tool the kernel killed for memory (SIGKILL long before its
//! time) says nothing about the cable; one stopped by the output bound wrote without end; a
//! process a tool left behind is stopped by its session and said. Pure.

use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::{Part, Software};
use crate::gate::trap::Trap;

/// A signal's name (Linux numbering), for what a person reads.
fn signal_name(n: i32) -> String {
    let name = match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => return format!("signal {n}"),
    };
    name.to_string()
}

/// A duration as a person reads it: `6 ms`, `2.4 s`.
fn took_words(took: std::time::Duration) -> String {
    let ms = took.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", took.as_secs_f64())
    }
}

/// How a tool on `host` ended, when not by itself with a status of its own: `status` is what
/// its job reported (124: its remote timeout fired; 128 + n: signal n), `took` how long it ran,
/// `timeout_s` its remote timeout. The verdict names the host or the tool, never the path: a
/// tool the kernel killed for memory (SIGKILL long before its time) says nothing about the
/// cable. `None` for an exit of the tool's own.
pub fn ending(
    gate: &str,
    host: &str,
    status: i32,
    took: std::time::Duration,
    timeout_s: u32,
) -> Option<Verdict> {
    // `timeout -k 5 T` sends TERM at T and KILL 5 s later; a second of slack for the clocks
    let at_deadline = took.as_secs_f64() + 1.0 >= f64::from(timeout_s);
    let (trap, detail) = match status {
        124 => (
            Trap::Timeout,
            format!("no result within {timeout_s} s: stopped by the remote timeout on {host}"),
        ),
        137 if at_deadline => (
            Trap::Timeout,
            format!(
                "no result within {timeout_s} s: killed by the remote timeout on {host} (it ignored SIGTERM)"
            ),
        ),
        153 => (
            Trap::OutputFlood,
            format!(
                "the tool on {host} wrote past the output bound on one stream and was stopped there (SIGXFSZ after {})",
                took_words(took)
            ),
        ),
        s if s > 128 && s < 128 + 65 => {
            let sig = signal_name(s - 128);
            let hint = if s == 137 {
                format!(": out of memory on {host}? (the kernel's OOM killer sends SIGKILL)")
            } else {
                String::new()
            };
            (
                Trap::ToolKilled,
                format!(
                    "the tool on {host} was killed by {sig} after {}{hint}",
                    took_words(took)
                ),
            )
        }
        _ => return None,
    };
    let parts = match trap {
        Trap::Timeout => Vec::new(),
        Trap::OutputFlood => vec![Part::software(host, Software::Tools)],
        _ => vec![Part::node(host), Part::software(host, Software::Tools)],
    };
    let v = Verdict::check(gate, Outcome::Fail, detail, Some(trap));
    Some(if parts.is_empty() { v } else { v.about(parts) })
}

/// What a tool on `host` left running when it ended (each `PID NAME`, stopped since by its
/// session): a WARN about the tools there; none when it left nothing.
pub fn left_running(gate: &str, host: &str, left: &[String]) -> Option<Verdict> {
    if left.is_empty() {
        return None;
    }
    let shown: Vec<&str> = left.iter().take(5).map(String::as_str).collect();
    let more = if left.len() > shown.len() {
        format!(" and {} more", left.len() - shown.len())
    } else {
        String::new()
    };
    Some(
        Verdict::check(
            format!("{gate} cleanup on {host}"),
            Outcome::Warn,
            format!(
                "left {} process{} running on {host} when it ended ({}{more}); fabricplan stopped {}",
                left.len(),
                if left.len() == 1 { "" } else { "es" },
                shown.join(", "),
                if left.len() == 1 { "it" } else { "them" }
            ),
            Some(Trap::LeftRunning),
        )
        .about(vec![Part::software(host, Software::Tools)]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_early_signal_names_the_host_and_the_deadline_is_a_timeout() {
        let g = "rdma-bw spark-a.f0.a -> spark-b.f0.a";
        let v = ending(g, "spark-a", 137, Duration::from_millis(6), 10).unwrap();
        assert_eq!(v.trap, Some(Trap::ToolKilled));
        assert!(
            v.detail.contains("killed by SIGKILL after 6 ms"),
            "{}",
            v.detail
        );
        assert!(
            v.detail.contains("out of memory on spark-a?"),
            "{}",
            v.detail
        );
        assert_eq!(v.implicates[0], Part::node("spark-a"));
        // the remote timeout's KILL, at its deadline: a timeout, about no part of its own
        let v = ending(g, "spark-a", 137, Duration::from_millis(15_200), 10).unwrap();
        assert_eq!(v.trap, Some(Trap::Timeout));
        assert!(v.implicates.is_empty());
        let v = ending(g, "spark-a", 124, Duration::from_secs(10), 10).unwrap();
        assert_eq!(v.trap, Some(Trap::Timeout));
        let v = ending(g, "spark-a", 143, Duration::from_millis(2_400), 10).unwrap();
        assert!(v.detail.contains("SIGTERM after 2.4 s"), "{}", v.detail);
        let v = ending(g, "spark-a", 153, Duration::from_millis(900), 10).unwrap();
        assert_eq!(v.trap, Some(Trap::OutputFlood));
        assert_eq!(
            v.implicates,
            vec![Part::software("spark-a", Software::Tools)]
        );
        // the tool's own exits are the tool's to explain
        for own in [0, 1, 2, 127, 255] {
            assert!(
                ending(g, "spark-a", own, Duration::ZERO, 10).is_none(),
                "{own}"
            );
        }
    }

    #[test]
    fn what_was_left_running_is_one_warn_about_the_tools_there() {
        assert!(left_running("g", "spark-b", &[]).is_none());
        let left: Vec<String> = (0..7).map(|i| format!("{} sleep", 100 + i)).collect();
        let v = left_running("g", "spark-b", &left).unwrap();
        assert_eq!(v.outcome, Outcome::Warn);
        assert_eq!(v.trap, Some(Trap::LeftRunning));
        assert!(
            v.detail.starts_with("left 7 processes running on spark-b"),
            "{}",
            v.detail
        );
        assert!(v.detail.contains("and 2 more"), "{}", v.detail);
    }
}
