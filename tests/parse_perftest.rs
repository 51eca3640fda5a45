//! perftest parsers: snapshot of every fixture, explicit checks of key numbers, and property
//! tests (no panic on any input; truncation / line deletion never invents a row).

use fabricplan::parse::{ErrorKind, Status, Tool, parse};
use fabricplan::tools::perftest::parse::{self as perftest, BwReport, LatReport, Role};
use proptest::prelude::*;
use std::path::Path;

fn tool_for(path: &Path) -> Tool {
    let dir = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    Tool::from_name(dir).unwrap_or_else(|| panic!("fixture folder {dir} is not a tool name"))
}

#[test]
fn fixtures() {
    insta::glob!("fixtures/parse/ib_*/*.txt", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let tool = tool_for(path);
        let parsed = parse(tool, &text);
        insta::assert_json_snapshot!(parsed.to_json());
        // summaries never come out empty
        assert!(!parsed.summary().is_empty());
    });
}

fn fixture(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/parse")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn bw(rel: &str) -> BwReport {
    perftest::parse_bw(&fixture(rel))
}

fn lat(rel: &str) -> LatReport {
    perftest::parse_lat(&fixture(rel))
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 0.005)
}

#[test]
fn mib_is_converted_to_gbps() {
    let r = bw("ib_write_bw/bw-mib-client.txt");
    assert_eq!(r.status, Status::Ok);
    // 11664.85 MiB/s * 1048576 * 8 / 1e9
    assert!(close(r.bw_avg_gbps, 97.85), "{:?}", r.bw_avg_gbps);
    assert_eq!(r.bytes, Some(65536));
    assert_eq!(r.iterations, Some(5000));
    assert_eq!(r.setup.role, Some(Role::Client));
    assert_eq!(r.setup.gid_index, Some(3));
    assert_eq!(r.setup.mtu, Some(4096));
    assert_eq!(r.setup.remote_ipv4.as_deref(), Some("192.168.1.39"));
}

#[test]
fn gbits_client_and_summary() {
    let r = bw("ib_write_bw/bw-gbits-client.txt");
    assert_eq!(r.bw_avg_gbps, Some(109.00));
    assert_eq!(r.bw_peak_gbps, Some(109.01));
    assert_eq!(
        r.summary().lines().next(),
        Some("ib_write_bw client: 109.00 Gb/s avg (peak 109.01) at 65536 B, 5000 iterations")
    );
    assert!(
        r.summary()
            .contains("device rocep1s0f0, Ethernet, GID 3, MTU 4096, 1 QP")
    );
}

/// A row faster than any link is rejected: no value read, the summary says which line and why.
#[test]
fn a_row_above_any_link_is_rejected_and_said() {
    let r = bw("ib_write_bw/bw-above-any-link-client.txt");
    assert_eq!(r.status, Status::Incomplete);
    assert_eq!(r.bw_avg_gbps, None);
    assert!(r.rows.is_empty());
    let s = r.summary();
    assert!(
        s.contains("rejected: line 23: row of 65536 B: BW peak 18000000000 Gb/s is above the 100,000 Gb/s no link carries, row rejected"),
        "{s}"
    );
    assert!(!s.contains("not closed"), "{s}");
}

#[test]
fn sweep_mixes_six_and_two_decimal_rows() {
    let r = bw("ib_write_bw/bw-gbits-a-sweep-client.txt");
    assert_eq!(r.status, Status::Ok);
    assert_eq!(r.rows.len(), 23);
    assert_eq!(r.rows.first().map(|r| r.bw_avg_gbps), Some(0.042184));
    assert_eq!(r.bytes, Some(8388608));
    let s = bw("ib_write_bw/bw-mib-a-sweep-server.txt");
    assert_eq!(s.rows.len(), 1);
    assert_eq!(s.setup.role, Some(Role::Server));
    assert!(s.copied_from_client);
}

#[test]
fn duration_peak_zero_is_not_an_error() {
    let r = bw("ib_write_bw/bw-gbits-duration-client.txt");
    assert_eq!(r.status, Status::Ok);
    assert!(r.setup.duration_mode);
    assert_eq!(r.bw_peak_gbps, Some(0.0));
    assert_eq!(r.bw_avg_gbps, Some(108.98));
}

#[test]
fn glued_latency_numbers() {
    let r = lat("ib_write_lat/lat-tabs-stripped.txt");
    assert_eq!(r.status, Status::Ok);
    assert_eq!(r.t_stdev_us, Some(2465.90));
    assert_eq!(r.p99_us, Some(1216.65));
    assert_eq!(r.p999_us, Some(3465.10));
    assert_eq!(r.setup.device.as_deref(), Some("mlx5_0"));
}

#[test]
fn cycles_are_not_reported_as_microseconds() {
    let r = lat("ib_write_lat/lat-cycles-histogram.txt");
    assert!(r.cycles);
    assert_eq!(r.t_typical_us, None);
    assert_eq!(r.rows.last().and_then(|r| r.t_typical), Some(2802.0));
}

#[test]
fn truncation_is_incomplete_and_keeps_complete_rows() {
    let r = bw("ib_write_bw/bw-truncated-mid-row.txt");
    assert_eq!(r.status, Status::Incomplete);
    assert_eq!(r.rows.len(), 12);
    let l = lat("ib_write_lat/lat-truncated.txt");
    assert_eq!(l.status, Status::Incomplete);
    assert_eq!(l.rows.len(), 5);
}

#[test]
fn error_kinds() {
    let cases = [
        (
            "ib_write_bw/err-connect-old-one-line.txt",
            ErrorKind::ConnectFailed,
        ),
        (
            "ib_write_bw/err-connect-new-two-line.txt",
            ErrorKind::ConnectFailed,
        ),
        (
            "ib_write_bw/err-listen-failed-server.txt",
            ErrorKind::ListenFailed,
        ),
        ("ib_write_bw/err-qp-rtr-failed.txt", ErrorKind::QpRtrFailed),
        ("ib_write_bw/err-qp-rtr-zero-gid.txt", ErrorKind::Gid),
        ("ib_write_bw/err-qp-rts-failed.txt", ErrorKind::QpRtsFailed),
        (
            "ib_write_bw/err-completion-old-client.txt",
            ErrorKind::CompletionError,
        ),
        (
            "ib_send_bw/err-completion-new-server.txt",
            ErrorKind::CompletionError,
        ),
        ("ib_write_bw/err-port-state-down.txt", ErrorKind::PortState),
        (
            "ib_write_bw/err-no-device-did-not-detect.txt",
            ErrorKind::NoDevice,
        ),
        ("ib_write_bw/err-gid-incompatible.txt", ErrorKind::Gid),
        ("ib_write_bw/err-resource-mr.txt", ErrorKind::Resource),
        ("ib_write_bw/err-bw-below-limit.txt", ErrorKind::Other),
    ];
    for (f, kind) in cases {
        let r = bw(f);
        assert_eq!(r.status, Status::Error, "{f}");
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(kind), "{f}");
    }
    let r = bw("ib_write_bw/err-bw-below-limit.txt");
    assert_eq!(r.rows.len(), 1, "complete rows are kept with an error");
    let r = bw("ib_write_bw/err-connect-old-one-line.txt");
    assert_eq!(
        r.error.map(|e| e.message),
        Some(
            "Couldn't connect to 192.168.1.39:18515\nUnable to open file descriptor for socket connection Unable to init the socket connection"
                .to_string()
        )
    );
    let r = bw("ib_write_bw/err-completion-old-client.txt");
    assert_eq!(r.wc_status, Some(12));
}

#[test]
fn nothing_perftest_like_is_unrecognized() {
    assert_eq!(
        bw("ib_write_bw/unrecognized-iperf3.txt").status,
        Status::Unrecognized
    );
    assert_eq!(perftest::parse_lat("").status, Status::Empty);
    assert_eq!(bw("ib_write_bw/empty-input.txt").status, Status::Empty);
    assert_eq!(
        bw("ib_write_bw/bw-truncated-after-header.txt").status,
        Status::Incomplete
    );
}

// ---------------------------------------------------------------- properties

fn all_fixtures() -> Vec<(bool, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parse");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap().flatten() {
        let name = dir.file_name().to_string_lossy().to_string();
        if !name.starts_with("ib_") {
            continue;
        }
        let is_bw = name.ends_with("_bw");
        for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
            out.push((is_bw, std::fs::read_to_string(f.path()).unwrap()));
        }
    }
    out.sort();
    out
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Rows read from `mutated` must each be a row of `original`.
fn rows_subset(is_bw: bool, original: &str, mutated: &str) -> Result<(), TestCaseError> {
    if is_bw {
        let full = perftest::parse_bw(original).rows;
        for r in perftest::parse_bw(mutated).rows {
            prop_assert!(
                full.iter().any(|f| f.bytes == r.bytes
                    && f.iterations == r.iterations
                    && f.bw_avg_gbps == r.bw_avg_gbps
                    && f.bw_peak_gbps == r.bw_peak_gbps
                    && f.msg_rate_mpps == r.msg_rate_mpps
                    && f.cpu_util_pct == r.cpu_util_pct),
                "invented row {:?}",
                r
            );
        }
    } else {
        let full = perftest::parse_lat(original).rows;
        for r in perftest::parse_lat(mutated).rows {
            prop_assert!(full.contains(&r), "invented row {:?}", r);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        let b = perftest::parse_bw(&s);
        let l = perftest::parse_lat(&s);
        let _ = (b.summary(), l.summary());
    }

    #[test]
    fn perftest_flavoured_text_never_panics(
        lines in proptest::collection::vec(
            "( |\t|[0-9]{1,8}|\\.|[0-9]\\.[0-9]{2}|#bytes|BW peak\\[Gb/sec\\]|BW average\\[MiB/sec\\]|MsgRate\\[Mpps\\]|t_min|t_avg|tps average|iterations|:|GID|Device|-{87}|Failed status|\\(|\\)|é){0,12}",
            0..12)
    ) {
        let s = lines.join("\n");
        let _ = perftest::parse_bw(&s).summary();
        let _ = perftest::parse_lat(&s).summary();
    }

    #[test]
    fn truncation_never_invents_a_row(idx in any::<prop::sample::Index>(), at in any::<prop::sample::Index>()) {
        let fx = all_fixtures();
        let (is_bw, text) = idx.get(&fx);
        let cut = floor_char_boundary(text, at.index(text.len() + 1));
        let truncated = text.get(..cut).unwrap_or("");
        rows_subset(*is_bw, text, truncated)?;
        // a cut inside the table never reports ok unless the closing dash line survived
        let r = perftest::parse_bw(truncated);
        if r.status == Status::Ok && !r.rows.is_empty() {
            prop_assert!(truncated.contains(&"-".repeat(87)));
        }
    }

    #[test]
    fn deleting_lines_never_invents_a_row(idx in any::<prop::sample::Index>(), drop in proptest::collection::vec(any::<prop::sample::Index>(), 1..4)) {
        let fx = all_fixtures();
        let (is_bw, text) = idx.get(&fx);
        let lines: Vec<&str> = text.split('\n').collect();
        let gone: Vec<usize> = drop.iter().map(|d| d.index(lines.len())).collect();
        let kept: Vec<&str> = lines
            .iter()
            .enumerate()
            .filter(|(i, _)| !gone.contains(i))
            .map(|(_, l)| *l)
            .collect();
        rows_subset(*is_bw, text, &kept.join("\n"))?;
    }
}

// ---------------------------------------------------------------- impossible values

/// Issue "hardening": a negative or NaN bandwidth, latency or iteration count is no row.
#[test]
fn impossible_rows_are_rejected_and_named() {
    let ok = fixture("ib_write_bw/bw-gbits-client.txt");
    let row = ok
        .lines()
        .find(|l| l.trim_start().starts_with("65536"))
        .unwrap();
    for (from, to) in [("109.01", "-109.01"), ("109.00", "nan"), ("5000", "-5000")] {
        let bad = ok.replace(row, &row.replacen(from, to, 1));
        let r = perftest::parse_bw(&bad);
        assert_eq!(r.status, Status::Incomplete, "{to}");
        assert!(r.rows.is_empty(), "{to}");
        assert_eq!(r.bw_avg_gbps, None);
        assert_eq!(r.rejected.len(), 1, "{to}");
        assert!(
            r.rejected[0].reason.contains(&format!("`{to}`")),
            "{:?}",
            r.rejected
        );
    }
    let lat = fixture("ib_write_lat/lat-client.txt");
    let row = lat
        .lines()
        .find(|l| l.trim_start().starts_with("2 "))
        .unwrap();
    let first_float = row.split_whitespace().nth(2).unwrap();
    let bad = lat.replace(
        row,
        &row.replacen(first_float, &format!("-{first_float}"), 1),
    );
    let r = perftest::parse_lat(&bad);
    assert_eq!(r.status, Status::Incomplete);
    assert_eq!(r.t_min_us, None);
    assert!(r.rejected[0].reason.contains("negative"));
}
