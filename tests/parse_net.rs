//! Snapshot and property tests for the iperf3 and ping parsers.

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
        let parsed = parse::parse(Tool::Iperf3, &text);
        insta::assert_json_snapshot!(parsed.to_json(Tool::Iperf3));
        insta::assert_snapshot!("iperf3_summary", parsed.summary());
    });
}

#[test]
fn ping_fixture_snapshots() {
    insta::glob!("fixtures/parse/ping/*", |path| {
        let text = std::fs::read_to_string(path).expect("fixture readable");
        let parsed = parse::parse(Tool::Ping, &text);
        insta::assert_json_snapshot!(parsed.to_json(Tool::Ping));
        insta::assert_snapshot!("ping_summary", parsed.summary());
    });
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-6)
}

#[test]
fn iperf3_json_client_numbers() {
    let r = parse::iperf3::parse(&fixture("iperf3/json-tcp-client-3.12.json"));
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
    let r = parse::iperf3::parse(&fixture("iperf3/text-tag-output-parallel.txt"));
    assert_eq!(r.status, Status::Ok);
    assert!(close(r.gbps, 93.2));
    assert!(close(r.sender_gbps, 93.3));
    assert_eq!(r.retransmits, Some(4));
    assert_eq!(r.streams, Some(2));
    assert_eq!(r.intervals, 1);
}

#[test]
fn iperf3_forced_units() {
    let r = parse::iperf3::parse(&fixture("iperf3/text-forced-units-mbits.txt"));
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
        let r = parse::iperf3::parse(&fixture(f));
        assert_eq!(r.status, Status::Error, "{f}");
        assert_eq!(
            r.error.map(|e| e.kind),
            Some(ErrorKind::ConnectFailed),
            "{f}"
        );
    }
    let r = parse::iperf3::parse(&fixture("iperf3/text-server-busy.txt"));
    assert_eq!(r.error.map(|e| e.kind), Some(ErrorKind::Other));
    let r = parse::iperf3::parse(&fixture("iperf3/text-truncated.txt"));
    assert_eq!(r.status, Status::Incomplete);
    assert_eq!(r.intervals, 2);
    let r = parse::iperf3::parse(&fixture("iperf3/iperf2-not-iperf3.txt"));
    assert_eq!(r.status, Status::Unrecognized);
    assert!(r.summary().contains("iperf 2"));
}

#[test]
fn ping_jumbo_numbers() {
    let r = parse::ping::parse(&fixture("ping/jumbo-ok.txt"));
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
    let r = parse::ping::parse(&fixture("ping/jumbo-local-too-long.txt"));
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
    let r = parse::ping::parse(&fixture("ping/jumbo-frag-needed.txt"));
    let m = r.mtu_error.expect("mtu error");
    assert_eq!(m.kind, ErrorKind::FragNeeded);
    assert_eq!(m.from.as_deref(), Some("198.19.0.1"));
    let r = parse::ping::parse(&fixture("ping/unreachable.txt"));
    assert_eq!(r.error.map(|e| e.kind), Some(ErrorKind::Unreachable));
    let r = parse::ping::parse(&fixture("ping/partial-loss.txt"));
    assert_eq!(r.status, Status::Ok);
    assert!(close(r.loss_pct, 33.3333));
    let r = parse::ping::parse(&fixture("ping/truncated.txt"));
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
        let r = parse::iperf3::parse(&s);
        let _ = r.summary();
    }

    #[test]
    fn ping_never_panics_on_arbitrary_text(s in ".{0,400}") {
        let r = parse::ping::parse(&s);
        let _ = r.summary();
    }

    #[test]
    fn iperf3_never_panics_on_mutated_fixtures(
        idx in 0usize..64, cut in 0usize..20000, insert in "[\\[\\]{}\" 0-9a-zA-Z.:/%()\t\n-]{0,24}", drop_len in 0usize..64
    ) {
        let all = fixtures("iperf3");
        let text = &all[idx % all.len()];
        let m = mutate(text, cut, &insert, drop_len);
        let r = parse::iperf3::parse(&m);
        let _ = r.summary();
        let _ = parse::parse(Tool::Iperf3, &m).to_json(Tool::Iperf3);
    }

    #[test]
    fn ping_never_panics_on_mutated_fixtures(
        idx in 0usize..64, cut in 0usize..2000, insert in "[\\[\\]() 0-9a-zA-Z.:/=%+,\n-]{0,24}", drop_len in 0usize..64
    ) {
        let all = fixtures("ping");
        let text = &all[idx % all.len()];
        let m = mutate(text, cut, &insert, drop_len);
        let r = parse::ping::parse(&m);
        let _ = r.summary();
        let _ = parse::parse(Tool::Ping, &m).to_json(Tool::Ping);
    }
}
