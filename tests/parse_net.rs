//! Snapshot and property tests for the iperf3 and ping parsers.

use fabricplan::kinds::iperf3::parse as iperf3;
use fabricplan::parse::{self, ErrorKind, Status, Tool};
use proptest::prelude::*;

fn fixture(rel: &str) -> String {
    let path = format!("{}/tests/fixtures/parse/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("fixture readable")
}

#[test]
fn iperf3_fixture_snapshots() {
    insta::glob!("fixtures/parse/iperf3/*", |path| {
        let text = std::fs::read_to_string(path).expect("fixture readable");
        let parsed = parse::parse(Tool::new(&iperf3::TOOL), &text);
        insta::assert_json_snapshot!(parsed.to_json());
        insta::assert_snapshot!("iperf3_summary", parsed.summary());
    });
}

#[test]
fn ping_fixture_snapshots() {
    insta::glob!("fixtures/parse/ping/*", |path| {
        let text = std::fs::read_to_string(path).expect("fixture readable");
        let parsed = parse::parse(Tool::PING, &text);
        insta::assert_json_snapshot!(parsed.to_json());
        insta::assert_snapshot!("ping_summary", parsed.summary());
    });
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-6)
}

#[test]
fn iperf3_json_client_numbers() {
    let r = iperf3::parse(&fixture("iperf3/json-tcp-client-3.12.json"));
    assert_eq!(r.status, Status::Ok);
    assert!(close(r.gbps, 19.657420545804134));
    assert!(close(r.sender_gbps, 19.66770005069346));
    assert_eq!(r.retransmits, Some(8));
    assert_eq!(r.streams, Some(1));
    assert_eq!(r.intervals, 1);
    assert_eq!(r.version.as_deref(), Some("3.12"));
}

#[test]
fn iperf3_text_parallel_uses_sum() {
    let r = iperf3::parse(&fixture("iperf3/text-tag-output-parallel.txt"));
    assert_eq!(r.status, Status::Ok);
    assert!(close(r.gbps, 93.2));
    assert!(close(r.sender_gbps, 93.3));
    assert_eq!(r.retransmits, Some(4));
    assert_eq!(r.streams, Some(2));
    assert_eq!(r.intervals, 1);
}

#[test]
fn iperf3_forced_units() {
    let r = iperf3::parse(&fixture("iperf3/text-forced-units-mbits.txt"));
    assert!(close(r.gbps, 19.460));
}

#[test]
fn iperf3_errors() {
    for f in [
        "iperf3/json-connect-refused.json",
        "iperf3/json-connect-refused-3.16.json",
        "iperf3/text-connect-refused.txt",
        "iperf3/text-connect-refused-3.14.txt",
        "iperf3/text-connect-refused-timestamps.txt",
        "iperf3/json-stream-error.txt",
    ] {
        let r = iperf3::parse(&fixture(f));
        assert_eq!(r.status, Status::Error, "{f}");
        assert_eq!(
            r.error.map(|e| e.kind),
            Some(ErrorKind::ConnectFailed),
            "{f}"
        );
    }
    let r = iperf3::parse(&fixture("iperf3/text-server-busy.txt"));
    assert_eq!(r.error.map(|e| e.kind), Some(ErrorKind::Other));
    let r = iperf3::parse(&fixture("iperf3/text-truncated.txt"));
    assert_eq!(r.status, Status::Incomplete);
    assert_eq!(r.intervals, 2);
    let r = iperf3::parse(&fixture("iperf3/iperf2-not-iperf3.txt"));
    assert_eq!(r.status, Status::Unrecognized);
    assert!(r.summary().contains("iperf 2"));
}

#[test]
fn ping_jumbo_numbers() {
    let r = fabricplan::tools::ping::parse::parse(&fixture("ping/jumbo-ok.txt"));
    assert_eq!(r.status, Status::Ok);
    assert_eq!(r.payload_bytes, Some(8972));
    assert_eq!(
        (r.transmitted, r.received, r.replies),
        (Some(3), Some(3), 3)
    );
    assert!(close(r.rtt_avg_ms, 0.044));
    assert!(r.mtu_error.is_none());
}

#[test]
fn ping_mtu_errors() {
    let r = fabricplan::tools::ping::parse::parse(&fixture("ping/jumbo-local-too-long.txt"));
    assert_eq!(r.status, Status::Error);
    let m = r.mtu_error.clone().expect("mtu error");
    assert_eq!(
        (m.kind, m.mtu, m.from),
        (ErrorKind::MessageTooLong, Some(1500), None)
    );
    assert_eq!(r.errors, Some(3));
    assert_eq!(
        r.summary(),
        "ping 127.0.0.1: jumbo ping refused locally: message too long, mtu=1500"
    );
    let r = fabricplan::tools::ping::parse::parse(&fixture("ping/jumbo-frag-needed.txt"));
    let m = r.mtu_error.expect("mtu error");
    assert_eq!(m.kind, ErrorKind::FragNeeded);
    assert_eq!(m.from.as_deref(), Some("198.19.0.1"));
    let r = fabricplan::tools::ping::parse::parse(&fixture("ping/unreachable.txt"));
    assert_eq!(r.error.map(|e| e.kind), Some(ErrorKind::Unreachable));
    let r = fabricplan::tools::ping::parse::parse(&fixture("ping/partial-loss.txt"));
    assert_eq!(r.status, Status::Ok);
    assert!(close(r.loss_pct, 33.3333));
    let r = fabricplan::tools::ping::parse::parse(&fixture("ping/truncated.txt"));
    assert_eq!((r.status, r.replies), (Status::Incomplete, 2));
}

fn fixtures(dir: &str) -> Vec<String> {
    let root = format!("{}/tests/fixtures/parse/{dir}", env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<String> = std::fs::read_dir(root)
        .expect("fixture dir")
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect();
    out.sort();
    out
}

/// Cut, splice or corrupt a fixture at arbitrary (char-boundary-snapped) points.
fn mutate(text: &str, cut: usize, insert: &str, drop_len: usize) -> String {
    let mut at = cut % (text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let mut end = (at + drop_len).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{}{}", &text[..at], insert, &text[end..])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn iperf3_never_panics_on_arbitrary_text(s in ".{0,400}") {
        let r = iperf3::parse(&s);
        let _ = r.summary();
    }

    #[test]
    fn ping_never_panics_on_arbitrary_text(s in ".{0,400}") {
        let r = fabricplan::tools::ping::parse::parse(&s);
        let _ = r.summary();
    }

    #[test]
    fn iperf3_never_panics_on_mutated_fixtures(
        idx in 0usize..64, cut in 0usize..20000, insert in "[\\[\\]{}\" 0-9a-zA-Z.:/%()\t\n-]{0,24}", drop_len in 0usize..64
    ) {
        let all = fixtures("iperf3");
        let text = &all[idx % all.len()];
        let m = mutate(text, cut, &insert, drop_len);
        let r = iperf3::parse(&m);
        let _ = r.summary();
        let _ = parse::parse(Tool::new(&iperf3::TOOL), &m).to_json();
    }

    #[test]
    fn ping_never_panics_on_mutated_fixtures(
        idx in 0usize..64, cut in 0usize..2000, insert in "[\\[\\]() 0-9a-zA-Z.:/=%+,\n-]{0,24}", drop_len in 0usize..64
    ) {
        let all = fixtures("ping");
        let text = &all[idx % all.len()];
        let m = mutate(text, cut, &insert, drop_len);
        let r = fabricplan::tools::ping::parse::parse(&m);
        let _ = r.summary();
        let _ = parse::parse(Tool::PING, &m).to_json();
    }
}

// ------------------------------------------------------------------- impossible values

/// Issue "hardening": ping RTTs of -1 ms, loss -66% with 3 of 3 received, loss 1.8e19 %, and
/// more received than transmitted were read as status ok.
#[test]
fn ping_impossible_values_are_rejected_and_named() {
    let ok = fixture("ping/small-ok.txt");
    assert_eq!(
        fabricplan::tools::ping::parse::parse(&ok).status,
        Status::Ok
    );
    for (from, to, word) in [
        (
            "rtt min/avg/max/mdev = 0.047/0.079/0.145/0.046 ms",
            "rtt min/avg/max/mdev = -1.000/-1.000/-1.000/0.000 ms",
            "negative",
        ),
        (
            "3 received, 0% packet loss",
            "3 received, -66% packet loss",
            "-66",
        ),
        (
            "3 received, 0% packet loss",
            "3 received, 18446744073709551616% packet loss",
            "outside 0-100",
        ),
        (
            "3 received, 0% packet loss",
            "0 received, 0% packet loss",
            "does not match",
        ),
        (
            "3 packets transmitted, 3 received",
            "3 packets transmitted, 5 received",
            "5 received of 3",
        ),
        ("time=0.047 ms", "time=-1 ms", "reply time `-1`"),
        ("time=0.145 ms", "time=nan ms", "not a number"),
    ] {
        let bad = ok.replacen(from, to, 1);
        assert_ne!(bad, ok);
        let r = fabricplan::tools::ping::parse::parse(&bad);
        assert_eq!(r.status, Status::Incomplete, "{to}");
        assert_eq!(r.rejected.len(), 1, "{to}: {:?}", r.rejected);
        assert!(
            r.rejected[0].reason.contains(word),
            "{to}: {:?}",
            r.rejected
        );
        assert!(r.summary().contains("rejected"), "{}", r.summary());
    }
}

/// iperf3 at -19.2 Gb/s was read as status ok.
#[test]
fn iperf3_negative_rate_is_rejected() {
    let ok = fixture("iperf3/text-tcp-client-bitrate.txt");
    let bad = ok.replace(
        "4.46 GBytes  19.2 Gbits/sec",
        "4.46 GBytes  -19.2 Gbits/sec",
    );
    assert_ne!(bad, ok);
    let r = iperf3::parse(&bad);
    assert_eq!(r.status, Status::Incomplete);
    assert_eq!(r.gbps, None);
    assert!(
        r.rejected.iter().any(|x| x.reason.contains("negative")),
        "{:?}",
        r.rejected
    );
    let json = fixture("iperf3/json-tcp-client-3.12.json");
    let needle = "\"sum_received\":";
    let at = json.find(needle).unwrap();
    let bps = json[at..].find("\"bits_per_second\":").unwrap() + at;
    let bad = format!(
        "{}\"bits_per_second\":\t-{}",
        &json[..bps],
        json[bps + 18..].trim_start()
    );
    let r = iperf3::parse(&bad);
    assert_eq!(r.status, Status::Incomplete, "{:?}", r.rejected);
    assert!(
        r.rejected[0]
            .reason
            .contains("sum_received.bits_per_second")
    );
    let udp = fixture("iperf3/text-udp-client.txt");
    let lost = udp.lines().find(|l| l.contains("receiver")).unwrap();
    let open = lost.rfind('(').unwrap();
    let close = lost.rfind("%)").unwrap();
    let bad_line = format!("{}(250%){}", &lost[..open], &lost[close + 2..]);
    let r = iperf3::parse(&udp.replace(lost, &bad_line));
    assert_eq!(r.status, Status::Incomplete);
    assert!(r.rejected[0].reason.contains("`250`%"), "{:?}", r.rejected);
}

#[test]
fn empty_input_is_empty() {
    for tool in [Tool::new(&iperf3::TOOL), Tool::PING] {
        let p = parse::parse(tool, "\n \n");
        assert_eq!(p.status(), Status::Empty);
        assert_eq!(parse::input_exit_code(&p), parse::EXIT_NOTHING_READ);
    }
}
