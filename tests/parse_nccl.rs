//! nccl-tests / NCCL log / mpirun parsers: a snapshot per fixture, key facts asserted explicitly,
//! and property tests (no panic on anything; a truncated or line-dropped capture never yields a
//! row that the full capture did not contain).

use fabricplan::parse::{ErrorKind, Status, Tool, mpirun, parse};
use fabricplan::tools::nccl_tests::parse::{self as nccl_tests, nccl_log};
use proptest::prelude::*;
use std::path::Path;

const NCCL_DIR: &str = "tests/fixtures/parse/nccl-tests";
const JSON_DIR: &str = "tests/fixtures/parse/nccl-json";
const MPI_DIR: &str = "tests/fixtures/parse/mpirun";

fn fixture(dir: &str, name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn nccl(name: &str) -> nccl_tests::NcclReport {
    nccl_tests::parse(&fixture(NCCL_DIR, name))
}

fn mpi(name: &str) -> mpirun::MpirunReport {
    mpirun::parse(&fixture(MPI_DIR, name))
}

// ------------------------------------------------------------------------------- snapshots

#[test]
fn snapshots_nccl_tests() {
    insta::glob!("fixtures/parse/nccl-tests/*", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let parsed = parse(Tool::NCCL_TESTS, &text);
        insta::assert_json_snapshot!(parsed.to_json());
    });
}

#[test]
fn snapshots_nccl_json() {
    insta::glob!("fixtures/parse/nccl-json/*", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let parsed = parse(Tool::NCCL_TESTS, &text);
        insta::assert_json_snapshot!(parsed.to_json());
    });
}

#[test]
fn snapshots_mpirun() {
    insta::glob!("fixtures/parse/mpirun/*", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let parsed = parse(Tool::MPIRUN, &text);
        insta::assert_json_snapshot!(parsed.to_json());
    });
}

#[test]
fn summaries_snapshot() {
    let mut out = String::new();
    for dir in [NCCL_DIR, JSON_DIR, MPI_DIR] {
        let tool = if dir == MPI_DIR {
            Tool::MPIRUN
        } else {
            Tool::NCCL_TESTS
        };
        let mut names: Vec<String> =
            std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(dir))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
        names.sort();
        for n in names {
            let s = parse(tool, &fixture(dir, &n)).summary();
            out.push_str(&format!("== {n}\n{s}\n"));
        }
    }
    insta::assert_snapshot!(out);
}

// ------------------------------------------------------------------------------- key facts

#[test]
fn allreduce_2node_roce_gdr_off() {
    let r = nccl("allreduce-2node-ib-2025.txt");
    assert_eq!(r.status, Status::Ok);
    assert_eq!(r.collective.as_deref(), Some("all_reduce_perf"));
    assert_eq!(r.transport.as_deref(), Some("NET/IB"));
    assert_eq!(r.roce, Some(true));
    assert_eq!(r.gdr, Some(false));
    assert!(!r.mixed_transport);
    assert_eq!(r.net_devices, vec!["rocep1s0f0:1", "roceP2p1s0f0:1"]);
    assert_eq!(r.nccl_version.as_deref(), Some("2.29.7+cuda13.0"));
    assert_eq!(r.nccl_tests_version.as_deref(), Some("2.19.6"));
    assert_eq!(r.ranks, 2);
    assert_eq!(r.hosts, vec!["spark-a", "spark-b"]);
    assert_eq!(r.rows.len(), 25);
    assert_eq!(r.wrong_total, Some(0));
    assert_eq!(r.out_of_bounds, Some(0));
    assert_eq!(r.out_of_bounds_ok, Some(true));
    assert_eq!(r.avg_busbw_check, None);
    assert_eq!(
        r.env.get("NCCL_IB_GID_INDEX").map(String::as_str),
        Some("3")
    );
    let p = r.params.as_ref().unwrap();
    assert_eq!(
        (p.min_bytes, p.max_bytes, p.iters),
        (Some(8), Some(134217728), Some(20))
    );
    let row = r.rows.iter().find(|r| r.size_bytes == 16384).unwrap();
    let t = row.in_place.as_ref().unwrap().time_us;
    assert!((28.0..31.0).contains(&t), "16 KiB in-place {t}");
    let avg = r.avg_busbw_gbs.unwrap();
    assert!(avg > 1.0 && avg < 10.0, "avg busbw {avg}");
    assert!(r.summary().contains("over NET/IB (RoCE, GDR off)"));
}

#[test]
fn socket_fallback_is_reported() {
    let r = nccl("allreduce-socket-fallback.txt");
    assert_eq!(r.transport.as_deref(), Some("NET/Socket"));
    assert!(r.avg_busbw_gbs.unwrap() < 3.0);
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].starts_with("[2026-01-14 09:12:44] spark-b"));
    let mixed = nccl("mixed-transport-one-rank-socket.txt");
    assert_eq!(mixed.transport.as_deref(), Some("NET/Socket"));
    assert!(mixed.mixed_transport);
}

#[test]
fn intra_node_p2p_is_not_a_network_run() {
    let r = nccl("p2p-single-node-not-net.txt");
    assert_eq!(r.transport, None);
    assert_eq!(r.roce, Some(false));
    assert!(nccl_log::scan(&fixture(NCCL_DIR, "p2p-single-node-not-net.txt")).intra_node_only);
}

#[test]
fn wrong_counts_and_oob_failed() {
    let r = nccl("oob-failed.txt");
    assert_eq!(r.wrong_total, Some(65536 * 2 + 12));
    assert_eq!(r.out_of_bounds, Some(3));
    assert_eq!(r.out_of_bounds_ok, Some(false));
    assert_eq!(r.status, Status::Error);
    assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Other));
    assert_eq!(r.exit_code, Some(1));
    assert_eq!(r.mpirun_errors.len(), 2);
    assert_eq!(
        nccl("avg-busbw-check-failed.txt")
            .avg_busbw_check
            .as_deref(),
        Some("FAILED")
    );
    assert_eq!(nccl("avg-busbw-check-ok.txt").status, Status::Ok);
}

#[test]
fn old_layouts() {
    let r = nccl("v2019-float-error.txt");
    assert_eq!(r.layout.as_deref(), Some("float-error-2019"));
    assert_eq!(r.wrong_total, None);
    let row = r.rows.iter().find(|r| r.size_bytes == 4096).unwrap();
    assert_eq!(row.out_of_place.as_ref().unwrap().max_error, Some(1e-6));
    assert_eq!(row.redop.as_deref(), Some("sum"));
    assert_eq!(r.ranks, 4);
    let b = nccl("v2019-broadcast-root-na.txt");
    assert_eq!(b.rows[0].root, Some(0));
    assert_eq!(b.rows[0].in_place.as_ref().unwrap().max_error, None);
    let v1 = nccl("v1-2017.txt");
    assert_eq!(v1.layout.as_deref(), Some("v1-2017"));
    assert_eq!(v1.status, Status::Ok);
    assert_eq!(v1.out_of_bounds, Some(0));
    assert!(v1.params.is_some());
}

#[test]
fn duplicate_headers_are_independent_runs() {
    let r = nccl("nompi-duplicate-headers.txt");
    assert!(r.duplicate_headers);
    assert_eq!(r.ranks, 1);
    assert_eq!(r.processes, 2);
    assert_eq!(r.hosts, vec!["spark-a", "spark-b"]);
    let sizes: Vec<u64> = r.rows.iter().map(|r| r.size_bytes).collect();
    assert_eq!(
        sizes,
        vec![8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288]
    );
}

#[test]
fn cycles_keep_all_rows() {
    let r = nccl("cycles-N2-sizes-restart.txt");
    assert!(!r.duplicate_headers);
    assert_eq!(r.rows.len(), 14);
    assert_eq!(r.rows[7].size_bytes, 1024);
}

#[test]
fn truncation_and_prefixes() {
    let r = nccl("truncated-midrow.txt");
    assert_eq!(r.status, Status::Incomplete);
    assert_eq!(r.rows.len(), 14);
    assert_eq!(nccl("truncated-no-footer.txt").status, Status::Incomplete);
    let t = nccl("tag-output-prefixes.txt");
    assert_eq!(t.status, Status::Ok);
    assert_eq!(t.rows.len(), 11);
    assert_eq!(t.transport.as_deref(), Some("NET/IB"));
    let k = nccl("rank-tag-and-harness-prefixes.txt");
    assert_eq!(k.status, Status::Ok);
    assert_eq!(k.ranks, 8);
    assert_eq!(k.gdr, Some(true));
    let g = nccl("glued-numbers-row-rejected.txt");
    assert_eq!((g.rows.len(), g.rejected_rows), (23, 2));
    assert_eq!(nccl("crlf-line-endings.txt").rows.len(), 11);
    let md = nccl("markdown-damage.txt");
    assert_eq!(md.rows.len(), 18);
    assert_eq!(md.status, Status::Ok);
}

#[test]
fn extra_columns() {
    let p = nccl("per-iteration-I1.txt");
    assert_eq!(p.rows.len(), 13);
    assert!(p.rows[0].out_of_place.as_ref().unwrap().per_iter.is_some());
    let s = nccl("timestamps-S1.txt");
    assert_eq!(s.rows[0].timestamp.as_deref(), Some("2026-02-03 10:41:10"));
    let c = nccl("cputime-C1.txt");
    assert!(c.cputime);
    assert_eq!(c.rows.len(), 13);
}

#[test]
fn test_errors() {
    let e = nccl("nccl-failure-retry-exc.txt");
    assert_eq!(
        e.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::NcclFailure)
    );
    assert_eq!(e.exit_code, Some(3));
    assert_eq!(e.warnings.len(), 1);
    assert_eq!(
        nccl("cuda-failure.txt").error.map(|e| e.kind),
        Some(ErrorKind::CudaFailure)
    );
    let t = nccl("test-timeout.txt");
    assert_eq!(t.error.map(|e| e.kind), Some(ErrorKind::Timeout));
    assert_eq!(t.rows.len(), 10);
    assert_eq!(nccl("invalid-gpus.txt").status, Status::Error);
    let pe = nccl("process-entry-docker0-in-run.txt");
    assert_eq!(pe.error.map(|e| e.kind), Some(ErrorKind::ProcessEntry));
    assert_eq!(
        nccl("unrecognized-shell-noise.txt").status,
        Status::Unrecognized
    );
}

#[test]
fn json_file() {
    let r = nccl_tests::parse(&fixture(JSON_DIR, "json-2.18.json"));
    assert_eq!(r.status, Status::Ok);
    assert_eq!(r.rows.len(), 25);
    assert_eq!(r.collective.as_deref(), Some("all_reduce_perf"));
    assert_eq!(r.nccl_version.as_deref(), Some("2.29.7"));
    assert_eq!(r.hosts, vec!["spark-a", "spark-b"]);
    assert_eq!(r.rows[0].root, Some(-1));
    let n = nccl_tests::parse_json(&fixture(JSON_DIR, "json-nan-and-unchecked-wrong.json"));
    assert!(
        n.rows
            .iter()
            .find(|r| r.size_bytes == 64)
            .unwrap()
            .out_of_place
            .is_none()
    );
    assert_eq!(n.rows[0].in_place.as_ref().unwrap().wrong, None);
    let f = nccl_tests::parse_json(&fixture(JSON_DIR, "json-oob-failed-min-bw.json"));
    assert_eq!(f.status, Status::Error);
    assert_eq!(f.wrong_total, Some(2048));
    assert_eq!(f.avg_busbw_check.as_deref(), Some("FAILED"));
    let t = nccl_tests::parse_json(&fixture(JSON_DIR, "json-truncated-unfinished.json"));
    assert_eq!(t.status, Status::Incomplete);
}

#[test]
fn mpirun_kinds() {
    let kind = |n: &str| mpi(n).error.map(|e| e.kind);
    assert_eq!(
        kind("process-entry-docker0.txt"),
        Some(ErrorKind::ProcessEntry)
    );
    assert_eq!(
        mpi("process-entry-docker0.txt").host.as_deref(),
        Some("spark-a")
    );
    for n in [
        "not-enough-slots-v4.txt",
        "not-enough-slots-v5.txt",
        "not-enough-slots-short-2016.txt",
    ] {
        assert_eq!(kind(n), Some(ErrorKind::NotEnoughSlots), "{n}");
    }
    assert_eq!(mpi("not-enough-slots-v4.txt").requested_slots, Some(4));
    assert_eq!(
        kind("daemon-launch-failed-ssh.txt"),
        Some(ErrorKind::DaemonLaunchFailed)
    );
    assert!(
        mpi("daemon-launch-failed-ssh.txt")
            .error
            .unwrap()
            .message
            .contains("No route to host")
    );
    assert_eq!(
        kind("daemon-failed-after-launch-orted-missing.txt"),
        Some(ErrorKind::DaemonLaunchFailed)
    );
    let lost = mpi("daemon-lost.txt");
    assert_eq!(lost.error.map(|e| e.kind), Some(ErrorKind::DaemonLost));
    assert_eq!(lost.host.as_deref(), Some("spark-b"));
    let route = mpi("daemon-route-unreachable.txt");
    assert_eq!(route.host.as_deref(), Some("spark-c"));
    assert_eq!(route.error.map(|e| e.kind), Some(ErrorKind::RouteFailed));
    let nz = mpi("nonzero-exit-v4.txt");
    assert_eq!((nz.exit_code, nz.rank), (Some(3), Some(1)));
    let v5 = mpi("nonzero-exit-v5-prterun.txt");
    assert_eq!((v5.exit_code, v5.rank), (Some(1), Some(0)));
    let sig = mpi("signal-segv.txt");
    assert_eq!(sig.error.map(|e| e.kind), Some(ErrorKind::Signal));
    assert_eq!(
        (sig.signal, sig.host.as_deref()),
        (Some(11), Some("spark-b"))
    );
    assert_eq!(mpi("signal-killed-no-name.txt").signal, Some(9));
    let imp = mpi("exiting-improperly.txt");
    assert_eq!(imp.error.map(|e| e.kind), Some(ErrorKind::ExitedImproperly));
    assert_eq!(imp.host.as_deref(), Some("spark-a"));
    assert_eq!(kind("exec-not-found.txt"), Some(ErrorKind::ExecNotFound));
    let mp = mpi("mpich-bad-termination.txt");
    assert_eq!(mp.error.map(|e| e.kind), Some(ErrorKind::Signal));
    assert_eq!((mp.exit_code, mp.signal), (Some(9), Some(9)));
    assert_eq!(mp.host.as_deref(), Some("gpu-node-02"));
    let ok = mpi("openib-warning-ok-run.txt");
    assert_eq!(ok.status, Status::Ok);
    assert_eq!(ok.warnings.len(), 1);
    assert_eq!(mpi("clean-run-ok.txt").status, Status::Ok);
    assert_eq!(mpi("unrecognized.txt").status, Status::Unrecognized);
    let md = mpi("markdown-no-frames-wrapped.txt");
    assert_eq!(
        (md.signal, md.host.as_deref()),
        (Some(6), Some("hgx-a-002"))
    );
}

// ------------------------------------------------------------------------------- properties

fn all_fixtures() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for dir in [NCCL_DIR, JSON_DIR, MPI_DIR] {
        let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut names: Vec<_> = std::fs::read_dir(full)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for p in names {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            out.push((name, std::fs::read_to_string(&p).unwrap()));
        }
    }
    out
}

fn row_key(r: &nccl_tests::Row) -> String {
    serde_json::to_string(r).unwrap()
}

fn check_subset(name: &str, full: &str, mutated: &str) -> Result<(), TestCaseError> {
    let whole: Vec<String> = nccl_tests::parse(full).rows.iter().map(row_key).collect();
    let part = nccl_tests::parse(mutated);
    let _ = mpirun::parse(mutated);
    let _ = part.summary();
    // the duplicate-header filter depends on lines after a row; its rows are still complete
    if name.starts_with("nompi-") {
        return Ok(());
    }
    for r in &part.rows {
        prop_assert!(
            whole.contains(&row_key(r)),
            "{name}: row not in full capture: {r:?}"
        );
    }
    Ok(())
}

// ------------------------------------------------------------------- Open MPI refusals (truth)

/// Real Open MPI 4.1.4 captures: `mpirun -np 1 hostname` as root without the override was read
/// as status ok; a refused launch's message was its frame.
#[test]
fn run_as_root_refusal_is_an_error_with_its_words() {
    let r = mpi("real-4.1.4-run-as-root.txt");
    assert_eq!(r.status, Status::Error);
    let e = r.error.expect("an error");
    assert_eq!(e.kind, ErrorKind::RunAsRoot);
    assert_eq!(e.kind.as_str(), "run-as-root");
    assert!(
        e.message
            .starts_with("mpirun has detected an attempt to run as root.")
    );
    assert!(e.message.contains("--allow-run-as-root"));
    assert!(
        !e.message
            .lines()
            .any(|l| l.trim().chars().all(|c| c == '-'))
    );
}

#[test]
fn real_launch_failures_carry_their_facts() {
    let x = mpi("real-4.1.4-exec-not-found.txt");
    let e = x.error.clone().unwrap();
    assert_eq!(e.kind, ErrorKind::ExecNotFound);
    assert!(
        e.message.contains("Executable: /nonexistent"),
        "{}",
        e.message
    );
    assert!(e.message.contains("Node: vm"));
    assert_eq!(x.executable.as_deref(), Some("/nonexistent"));
    assert_eq!((x.host.as_deref(), x.rank), (Some("vm"), Some(0)));
    let s = mpi("real-4.1.4-not-enough-slots.txt");
    assert_eq!(s.error.map(|e| e.kind), Some(ErrorKind::NotEnoughSlots));
    assert_eq!(s.requested_slots, Some(99));
    assert_eq!(s.executable.as_deref(), Some("hostname"));
    assert!(
        s.errors[0].message.ends_with("application:\nhostname"),
        "{}",
        s.errors[0].message
    );
    let d = mpi("real-4.1.4-daemon-launch-failed.txt");
    assert_eq!(d.error.map(|e| e.kind), Some(ErrorKind::DaemonLaunchFailed));
    // the box that names the process wins over the generic "Primary job" box of the same kind
    let nz = mpi("real-4.1.4-nonzero-exit.txt");
    let e = nz.error.unwrap();
    assert_eq!(e.kind, ErrorKind::NonzeroExit);
    assert!(e.message.contains("Exit code:    3"), "{}", e.message);
    assert!(e.message.contains("Process name: [[26348,1],0]"));
    let sig = mpi("real-4.1.4-signal-segv.txt");
    assert_eq!(sig.error.map(|e| e.kind), Some(ErrorKind::Signal));
    assert_eq!(
        (sig.signal, sig.rank, sig.host.as_deref()),
        (Some(11), Some(0), Some("vm"))
    );
    let killed = mpi("real-4.1.4-signal-killed.txt");
    assert_eq!((killed.signal, killed.rank), (Some(9), Some(1)));
    assert_eq!(killed.signal_name.as_deref(), Some("Killed"));
}

#[test]
fn openib_cpc_box_is_a_warning_not_an_error() {
    let dash = "-".repeat(74);
    let t = format!(
        "{dash}\nNo OpenFabrics connection schemes reported that they were able to be\nused on a specific port.  As such, the openib BTL (OpenFabrics\nsupport) will be disabled for this port.\n\n  Local host:           spark-a\n  Local device:         mlx5_0\n  Local port:           1\n  CPCs attempted:       rdmacm, udcm\n{dash}\n[1,0]<stdout>:# Avg bus bandwidth    : 2.1 \n"
    );
    let r = mpirun::parse(&t);
    assert_eq!(r.status, Status::Ok);
    assert!(r.error.is_none());
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].starts_with("No OpenFabrics connection schemes"));
}

/// The NCCL job's output is mpirun's output: its refusals are the nccl-tests report's errors.
#[test]
fn mpirun_refusals_inside_an_nccl_capture() {
    for (name, kind) in [
        ("real-4.1.4-run-as-root.txt", ErrorKind::RunAsRoot),
        ("real-4.1.4-exec-not-found.txt", ErrorKind::ExecNotFound),
        ("real-4.1.4-not-enough-slots.txt", ErrorKind::NotEnoughSlots),
        ("daemon-route-unreachable.txt", ErrorKind::RouteFailed),
        ("exiting-improperly.txt", ErrorKind::ExitedImproperly),
    ] {
        let text = format!(
            "+ mpirun -np 2 /opt/nccl-tests/build/all_reduce_perf -b 8 -e 128M\n{}",
            fixture(MPI_DIR, name)
        );
        let r = nccl_tests::parse(&text);
        assert_eq!(r.status, Status::Error, "{name}");
        let e = r.error.as_ref().unwrap();
        assert_eq!(e.kind, kind, "{name}");
        assert!(!e.message.starts_with("---"), "{name}: {}", e.message);
        assert!(r.summary().contains(kind.as_str()), "{name}");
    }
}

// ------------------------------------------------------------------- NCCL log without a table

#[test]
fn nccl_info_without_a_table_is_incomplete_with_what_the_log_proves() {
    let t = "spark-a:2011:2011 [0] NCCL INFO Bootstrap : Using enp1s0f0np0:10.0.0.1<0>\n\
spark-a:2011:2011 [0] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)\n\
spark-a:2011:2011 [0] NCCL INFO cudaDriverVersion 13000\n\
NCCL version 2.29.7+cuda13.0\n\
spark-a:2011:2030 [0] NCCL INFO NET/IB : Using [0]rocep1s0f0:1/RoCE [RO]; OOB enp1s0f0np0:10.0.0.1<0>\n\
spark-b:3022:3022 [0] NCCL INFO NET/IB : Using [0]rocep1s0f0:1/RoCE [RO]; OOB enp1s0f0np0:10.0.0.2<0>\n\
spark-a:2011:2030 [0] NCCL INFO Using network IB\n\
spark-a:2011:2030 [0] NCCL INFO ncclCommInitRank comm 0x55d0c8a0 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n\
spark-a:2011:2034 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n\
spark-a:2011:2034 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n\
spark-b:3022:3040 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0/GDRDMA\n\
spark-a:2011:2030 [0] NCCL INFO comm 0x55d0c8a0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId f01000 commId 0x9b1c2d3e4f506172 - Init COMPLETE\n";
    let r = nccl_tests::parse(t);
    assert_eq!(r.status, Status::Incomplete);
    assert!(r.error.is_none());
    assert!(r.rows.is_empty());
    assert_eq!(r.nranks, Some(2));
    assert_eq!(r.hosts, vec!["spark-a", "spark-b"]);
    assert_eq!(r.net_devices, vec!["rocep1s0f0:1"]);
    assert_eq!(r.transport.as_deref(), Some("NET/IB"));
    assert_eq!(r.roce, Some(true));
    assert_eq!(r.gdr, Some(true));
    assert_eq!(r.nccl_version.as_deref(), Some("2.29.7+cuda13.0"));
    let s = r.summary();
    assert!(s.contains("2 ranks on spark-a, spark-b"), "{s}");
    assert!(s.contains("no results table"), "{s}");
    let json = parse(Tool::NCCL_TESTS, t).to_json();
    assert_eq!(json["status"], "incomplete");
    assert_eq!(json["nranks"], 2);
}

// ------------------------------------------------------------------- impossible values

#[test]
fn negative_time_row_is_rejected_and_named() {
    let full = fixture(NCCL_DIR, "allreduce-2node-ib-2025.txt");
    let row = full
        .lines()
        .find(|l| l.trim_start().starts_with("16384 "))
        .unwrap();
    let bad_row = row.replacen("29.", "-29.", 1);
    assert_ne!(row, bad_row);
    let r = nccl_tests::parse(&full.replace(row, &bad_row));
    assert_eq!(r.status, Status::Incomplete);
    assert_eq!(r.rows.len(), 24);
    assert!(r.rows.iter().all(|x| x.size_bytes != 16384));
    assert_eq!(r.rejected.len(), 1);
    assert!(r.rejected[0].reason.contains("`-29."), "{:?}", r.rejected);
    assert!(r.rejected[0].reason.contains("negative"));
    assert!(r.summary().contains("negative"));
    let avg = full
        .lines()
        .find(|l| l.contains("Avg bus bandwidth"))
        .unwrap();
    let colon = avg.find(": ").unwrap();
    let neg = format!("{}: -{}", &avg[..colon], avg[colon + 2..].trim_start());
    let r = nccl_tests::parse(&full.replace(avg, &neg));
    assert_eq!(r.status, Status::Incomplete);
    assert_eq!(r.avg_busbw_gbs, None);
    assert!(r.rejected[0].reason.contains("average bus bandwidth `-"));
    for bad in ["nan", "inf", "-nan"] {
        let nan_row = row.replacen("29.71", bad, 1);
        let r = nccl_tests::parse(&full.replace(row, &nan_row));
        assert_eq!(r.status, Status::Incomplete, "{bad}");
        assert_eq!(r.rejected.len(), 1, "{bad}");
    }
}

#[test]
fn empty_input_is_empty_not_unrecognized() {
    for tool in [Tool::NCCL_TESTS, Tool::MPIRUN] {
        for text in ["", "\n\n  \n"] {
            let p = parse(tool, text);
            assert_eq!(p.status(), Status::Empty);
            assert_eq!(fabricplan::parse::input_exit_code(&p), 1);
            assert_eq!(p.to_json()["status"], "empty");
        }
    }
    let p = parse(Tool::NCCL_TESTS, "hello\n");
    assert_eq!(p.status(), Status::Unrecognized);
    assert_eq!(fabricplan::parse::input_exit_code(&p), 1);
    let p = parse(Tool::NCCL_TESTS, &fixture(NCCL_DIR, "cuda-failure.txt"));
    assert_eq!(p.status(), Status::Error);
    assert_eq!(fabricplan::parse::input_exit_code(&p), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC*") {
        let _ = nccl_tests::parse(&s).summary();
        let _ = nccl_tests::parse_json(&s);
        let _ = mpirun::parse(&s).summary();
        let _ = nccl_log::scan(&s);
    }

    #[test]
    fn line_shaped_noise_never_panics(lines in proptest::collection::vec(
        "(#|\\[1,0\\]<stdout>:|> |=   |-{74}|[0-9 .e+N/A-]{0,40}|Rank|NCCL INFO|via NET/|process rank |Exit code: ){0,3}[ -~]{0,60}", 0..40)) {
        let s = lines.join("\n");
        let _ = nccl_tests::parse(&s).summary();
        let _ = mpirun::parse(&s).summary();
        let _ = nccl_log::scan(&s);
    }

    #[test]
    fn truncated_fixture_never_yields_a_partial_row(idx in 0usize..1000, cut in 0.0f64..1.0) {
        let fx = all_fixtures();
        let (name, text) = &fx[idx % fx.len()];
        let mut at = (text.len() as f64 * cut) as usize;
        while !text.is_char_boundary(at) { at -= 1; }
        check_subset(name, text, &text[..at])?;
    }

    #[test]
    fn dropped_lines_never_yield_a_foreign_row(idx in 0usize..1000, drops in proptest::collection::vec(0usize..400, 1..6)) {
        let fx = all_fixtures();
        let (name, text) = &fx[idx % fx.len()];
        let kept: Vec<&str> = text
            .split_inclusive('\n')
            .enumerate()
            .filter(|(i, _)| !drops.contains(i))
            .map(|(_, l)| l)
            .collect();
        check_subset(name, text, &kept.concat())?;
    }
}

/// Found by `tests/parse_fuzz.rs` (45,000 cases per parser): a `-J` document with
/// `"average_bus_bandwidth":{"bandwidth":-1}` was read with a negative average.
#[test]
fn fuzz_regression_json_negative_average_is_rejected() {
    let ok = fixture(JSON_DIR, "json-2.18.json");
    let at = ok.find("\"bandwidth\":").unwrap() + "\"bandwidth\":".len();
    let end = at + ok[at..].find([',', '}']).unwrap();
    let bad = format!("{}-1{}", &ok[..at], &ok[end..]);
    let r = nccl_tests::parse(&bad);
    assert_eq!(r.avg_busbw_gbs, None);
    assert!(r.rejected[0].reason.contains("`-1`"), "{:?}", r.rejected);
    assert_ne!(r.status, Status::Ok);
    fabricplan::parse::check_invariants(&parse(Tool::NCCL_TESTS, &bad)).unwrap();
}
