//! From what the tools printed (the parsers' typed reports) and the context of the job (path,
//! counters, expected value) to verdicts with the trap named. Pure: nothing here reads the plan;
//! the caller hands over the gate specs it settled.

use super::GateSpec;
use super::judge::{Outcome, Verdict};
use super::trap::Trap;
use crate::parse::{ErrorKind, Rejected, ToolError};
use crate::tools::nccl_tests::parse::NcclReport;
use crate::tools::perftest::parse::{BwReport, LatReport};

/// The rate the trap signatures are written for: a GB10 half's ib_write_bw on a healthy direct
/// cable (the field reports' 111.9 Gb/s). The signatures (single digits, 8-25 Gb/s) scale from
/// it to a flow's own standalone rate.
pub const REFERENCE_HALF_GBPS: f64 = 111.9;

/// The firmware-throttle band on a GB10 half, Gb/s (the field reports' 12.74 sits inside): a
/// flow measured in it is read as a throttle. It scales with the flow's standalone rate like
/// every signature here ([`throttle_band`]).
pub const THROTTLE_BAND_GBPS: (f64, f64) = (8.0, 25.0);

/// The firmware-throttle band for a flow whose standalone rate is `standalone` (GB10's when
/// unknown): [`THROTTLE_BAND_GBPS`] scaled to it.
pub fn throttle_band(standalone: Option<f64>) -> (f64, f64) {
    let scale = standalone.unwrap_or(REFERENCE_HALF_GBPS) / REFERENCE_HALF_GBPS;
    (THROTTLE_BAND_GBPS.0 * scale, THROTTLE_BAND_GBPS.1 * scale)
}

/// Whether a flow judged by `gate`, expected `expected` in its round, would fail to pass if one
/// of its halves were throttled anywhere in the band: its pass mark lies above the band's top.
/// A flow whose share of a crowded ISL is below the band passes with a throttled half at one
/// end, and so clears neither end of a throttle. Without an expected value, or a pass mark,
/// the gate cannot be placed against the band and is taken to show it.
pub fn shows_throttle(gate: &GateSpec, expected: Option<f64>, standalone: Option<f64>) -> bool {
    let Some(mark) = gate.pass.and_then(|t| t.resolve(expected)) else {
        return true;
    };
    mark > throttle_band(standalone).1
}

/// What the gate engine knows about a job beyond the tool's output.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// `rdma-bw spark-b.f0.a -> spark-a.f0.a`
    pub gate: String,
    pub expected_gbps: Option<f64>,
    /// What the flow reaches alone on a healthy path (the profile's half rate, less switch
    /// penalties): the scale of the trap signatures.
    pub standalone_gbps: Option<f64>,
    /// The flow crosses an ISL.
    pub crosses_isl: bool,
    /// packet_seq_err growth on the involved devices during the job.
    pub seq_err_delta: Option<i64>,
    /// RDMA data counters (bytes) moved on every rank's device during an NCCL job.
    pub fabric_bytes_per_rank: Vec<(String, Option<i64>)>,
    /// NCCL_IB_HCA as rendered, and the cabled devices of every rank it should list.
    pub nccl_hca: Option<String>,
    pub cabled_devices: Vec<String>,
}

/// What the capacity model expects of an NCCL run, as numbers: the 16 KiB time, and a
/// function of the message size for the bus bandwidth.
pub struct NcclExpectation<'a> {
    pub small_time_us: Option<f64>,
    pub busbw_gbs: &'a dyn Fn(u64) -> f64,
    /// Every rank is a unified-memory box (GB10): GPUDirect RDMA off is expected there.
    pub unified_memory: bool,
}

/// The rows of the largest message sizes: those at least a quarter of the largest (with the
/// usual `-f 2` sweep, the top three). Bus bandwidth is judged there, where the fabric and not
/// the latency sets it.
fn large_rows(parsed: &NcclReport) -> Vec<&crate::tools::nccl_tests::parse::Row> {
    let max = parsed.rows.iter().map(|r| r.size_bytes).max().unwrap_or(0);
    parsed
        .rows
        .iter()
        .filter(|r| r.size_bytes >= max / 4 && r.size_bytes > 0)
        .collect()
}

/// The trap a tool error points at.
pub fn trap_of_error(kind: ErrorKind) -> Trap {
    match kind {
        ErrorKind::NoDevice => Trap::NoDevice,
        ErrorKind::PortState => Trap::PortDown,
        ErrorKind::ConnectFailed => Trap::ServerGoneOrFirewall,
        ErrorKind::ListenFailed => Trap::ToolError,
        ErrorKind::QpRtrFailed | ErrorKind::QpRtsFailed => Trap::QpRtrFailed,
        ErrorKind::Gid => Trap::NoGid,
        ErrorKind::Resource => Trap::MemoryRegistration,
        ErrorKind::ProcessEntry => Trap::Docker0Subnet,
        ErrorKind::NotEnoughSlots
        | ErrorKind::DaemonLaunchFailed
        | ErrorKind::DaemonLost
        | ErrorKind::RouteFailed => Trap::MpiLaunch,
        ErrorKind::ExecNotFound => Trap::ExecutableMissing,
        ErrorKind::RunAsRoot => Trap::MpiRunAsRoot,
        ErrorKind::Timeout => Trap::Timeout,
        ErrorKind::MessageTooLong | ErrorKind::FragNeeded => Trap::MtuMismatch,
        ErrorKind::Unreachable => Trap::Unreachable,
        ErrorKind::NotRunning => Trap::ToolError,
        ErrorKind::CompletionError
        | ErrorKind::NonzeroExit
        | ErrorKind::ExitedImproperly
        | ErrorKind::Signal
        | ErrorKind::NcclFailure
        | ErrorKind::CudaFailure
        | ErrorKind::Other => Trap::ToolError,
    }
}

/// A tool's reported error as a FAIL verdict.
pub fn error_verdict(gate: &str, error: Option<&ToolError>) -> Option<Verdict> {
    let err = error?;
    Some(Verdict::check(
        gate,
        Outcome::Fail,
        format!(
            "{}: {}",
            err.kind.as_str(),
            err.message.lines().next().unwrap_or("")
        ),
        Some(trap_of_error(err.kind)),
    ))
}

/// A FAIL saying the tool's output is not a measurement, when its parser rejected a value no
/// run can produce (negative, NaN, above what any link or memory carries: see
/// [`crate::parse::ceiling`]): an output that says such a thing says nothing a gate may be
/// judged on, neither the rejected row nor the rows beside it.
pub fn not_a_measurement(gate: &str, rejected: &[Rejected]) -> Option<Verdict> {
    let first = rejected.first()?;
    let more = match rejected.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    Some(Verdict::check(
        gate,
        Outcome::Fail,
        format!(
            "the tool's output is not a measurement: line {}: {}{more}",
            first.line, first.reason
        ),
        Some(Trap::Unparseable),
    ))
}

/// Bandwidth per half: the gate, with the trap chosen by signature.
pub fn bandwidth(spec: &GateSpec, parsed: &BwReport, ctx: &Context) -> Vec<Verdict> {
    if let Some(v) = error_verdict(&ctx.gate, parsed.error.as_ref()) {
        return vec![v];
    }
    if let Some(v) = not_a_measurement(&ctx.gate, &parsed.rejected) {
        return vec![v];
    }
    let Some(bw) = parsed.bw_avg_gbps else {
        return vec![Verdict::check(
            &ctx.gate,
            Outcome::Fail,
            "no complete result row in the tool's output",
            Some(Trap::Unparseable),
        )];
    };
    let mut v = spec.judge(&ctx.gate, &[bw], ctx.expected_gbps);
    if v.outcome != Outcome::Ok && spec.trap_text.is_none() {
        let seq = ctx.seq_err_delta.unwrap_or(0);
        // the signatures are GB10 figures (single digits; 8-25 Gb/s of ~111.9 expected): scale
        // them to the flow's own standalone rate, so a 25G site or a lab is read the same way
        let scale = ctx.standalone_gbps.unwrap_or(REFERENCE_HALF_GBPS) / REFERENCE_HALF_GBPS;
        let single_digits = bw < 10.0 * scale;
        let (low, high) = throttle_band(ctx.standalone_gbps);
        let throttle_band = (low..=high).contains(&bw);
        let of = match ctx.expected_gbps {
            Some(e) if e > 0.0 => format!(
                "{bw:.2} Gb/s is {:.0}% of the {e:.1} Gb/s expected here",
                100.0 * bw / e
            ),
            _ => format!("{bw:.2} Gb/s"),
        };
        let standalone = ctx.standalone_gbps.unwrap_or(REFERENCE_HALF_GBPS);
        let (trap, why) = if single_digits && ctx.crosses_isl {
            // single digits across the ISL: check its RSTP role before anything else
            (
                Trap::IslBlockedRstp,
                format!("{of}: single digits across the ISL, which forwards almost nothing"),
            )
        } else if single_digits && seq > 0 {
            (
                Trap::SoftwareForwarding,
                format!(
                    "{of}, and packet_seq_err grew by {seq}: frames reordered by a software path"
                ),
            )
        } else if throttle_band {
            (
                Trap::FirmwareThrottle,
                format!(
                    "{of}: inside the firmware-throttle band ({low:.0}-{high:.0} Gb/s for a {standalone:.1} Gb/s half)"
                ),
            )
        } else {
            (Trap::BelowLineRate, of)
        };
        v = v.with_trap(trap);
        v.detail = why;
    }
    let mut out = vec![v];
    if let Some(seq) = ctx.seq_err_delta
        && seq > 0
        && out[0].outcome == Outcome::Ok
    {
        // near line rate plus growth: DCQCN at work on an oversubscribed hop
        out.push(
            Verdict::check(
                format!("{} packet_seq_err", ctx.gate),
                Outcome::Warn,
                format!("packet_seq_err grew by {seq} at near line rate: congestion control backing off on a contended hop"),
                Some(Trap::CongestionControl),
            ),
        );
    }
    out
}

/// Latency: t_typical against its gate.
pub fn latency(spec: &GateSpec, parsed: &LatReport, ctx: &Context) -> Vec<Verdict> {
    if let Some(v) = error_verdict(&ctx.gate, parsed.error.as_ref()) {
        return vec![v];
    }
    if let Some(v) = not_a_measurement(&ctx.gate, &parsed.rejected) {
        return vec![v];
    }
    match parsed.t_typical_us.or(parsed.t_avg_us) {
        Some(t) => vec![spec.judge(&ctx.gate, &[t], None)],
        None => vec![Verdict::check(
            &ctx.gate,
            Outcome::Fail,
            "no complete latency row in the tool's output",
            Some(Trap::Unparseable),
        )],
    }
}

/// NCCL: transport, correctness, the 16 KiB time, bus bandwidth, the fabric counters, GDR.
pub fn nccl(
    small: &GateSpec,
    busbw: &GateSpec,
    parsed: &NcclReport,
    ctx: &Context,
    model: &NcclExpectation<'_>,
) -> Vec<Verdict> {
    let g = |what: &str| format!("{} {what}", ctx.gate);
    let mut out = Vec::new();
    if let Some(mut v) = error_verdict(&g("run"), parsed.error.as_ref()) {
        if v.trap == Some(Trap::ToolError) {
            v = v.with_trap(Trap::MpiLaunch);
        }
        out.push(v);
    }
    out.extend(nccl_transport(&g("transport"), parsed));
    if out.iter().all(|v| v.gate != g("run"))
        && let Some(v) = not_a_measurement(&g("run"), &parsed.rejected)
    {
        out.push(v);
        return out;
    }
    if parsed.rows.is_empty() {
        if out.is_empty() {
            out.push(Verdict::check(
                g("run"),
                Outcome::Fail,
                "no nccl-tests result rows",
                Some(Trap::Unparseable),
            ));
        }
        return out;
    }
    out.push(nccl_correctness(&g("correctness"), parsed));
    // 16 KiB in-place time, when the sweep covers it, against the model's time for these ranks
    if let Some(row) = parsed.rows.iter().find(|r| r.size_bytes == 16384)
        && let Some(t) = row.in_place.as_ref().map(|h| h.time_us)
    {
        out.push(small.judge(g("16 KiB time"), &[t], model.small_time_us));
    }
    out.extend(nccl_busbw(busbw, &g, parsed, model));
    out.extend(fabric_counters(&g("fabric counters"), ctx));
    out.extend(hca_covers_every_half(&g("NCCL_IB_HCA"), ctx));
    if parsed.gdr == Some(false) {
        // reported on GB10, whose unified memory has no GPU memory to expose; elsewhere every
        // message takes a detour through host memory
        out.push(if model.unified_memory {
            Verdict::check(
                g("GPUDirect RDMA"),
                Outcome::Ok,
                "GDR 0: GPUDirect RDMA off, data staged through host memory (expected on GB10)",
                None,
            )
        } else {
            Verdict::check(
                g("GPUDirect RDMA"),
                Outcome::Warn,
                "GDR 0: GPUDirect RDMA off, every message staged through host memory",
                Some(Trap::GdrOff),
            )
        });
    }
    follow_the_fallback(&g("transport"), &mut out);
    out
}

/// NET/IB, or the fallback to TCP sockets (or no INFO lines to tell).
fn nccl_transport(gate: &str, parsed: &NcclReport) -> Option<Verdict> {
    match parsed.transport.as_deref() {
        Some("NET/IB") => Some(Verdict::check(
            gate,
            Outcome::Ok,
            "NET/IB: NCCL rode the RDMA fabric",
            None,
        )),
        Some(t) => Some(Verdict::check(
            gate,
            Outcome::Fail,
            format!(
                "{t}: NCCL fell back to TCP sockets{}",
                fallback_where(parsed)
            ),
            Some(Trap::TcpFallback),
        )),
        None if !parsed.rows.is_empty() => Some(Verdict::check(
            gate,
            Outcome::Fail,
            "the log does not show NET/IB (NCCL_DEBUG=INFO lines missing)",
            Some(Trap::TcpFallback),
        )),
        None => None,
    }
}

/// Where the fallback starts, as the ranks' own lines say: `; on spark-3 NET/IB found no
/// device (`NET/IB : No device found`)`.
fn fallback_where(parsed: &NcclReport) -> String {
    match (parsed.fallback_hosts.as_slice(), parsed.ib_unavailable) {
        ([], _) => String::new(),
        (hosts, true) => format!(
            "; on {} NET/IB found no device (`NET/IB : No device found`)",
            hosts.join(", ")
        ),
        (hosts, false) => format!("; over sockets on {}", hosts.join(", ")),
    }
}

/// `#wrong` 0 at every size and no value out of bounds.
fn nccl_correctness(gate: &str, parsed: &NcclReport) -> Verdict {
    let wrong = parsed.wrong_total.unwrap_or(0);
    let oob = parsed.out_of_bounds.unwrap_or(0);
    if wrong > 0 || oob > 0 {
        Verdict::check(
            gate,
            Outcome::Fail,
            format!("#wrong {wrong} elements, out of bounds {oob}"),
            Some(Trap::WrongResults),
        )
    } else {
        Verdict::check(
            gate,
            Outcome::Ok,
            "#wrong 0 at every size, out of bounds 0",
            None,
        )
    }
}

/// Bus bandwidth at the largest sizes against the model's there (the average over every size
/// is mostly latency).
fn nccl_busbw(
    busbw: &GateSpec,
    g: &dyn Fn(&str) -> String,
    parsed: &NcclReport,
    model: &NcclExpectation<'_>,
) -> Option<Verdict> {
    let large = large_rows(parsed);
    if large.is_empty() {
        return None;
    }
    let best = |r: &crate::tools::nccl_tests::parse::Row| {
        [&r.out_of_place, &r.in_place]
            .into_iter()
            .flatten()
            .map(|h| h.busbw_gbs)
            .fold(0.0, f64::max)
    };
    let n = large.len() as f64;
    let measured = large.iter().map(|r| best(r)).sum::<f64>() / n;
    let expected = large
        .iter()
        .map(|r| (model.busbw_gbs)(r.size_bytes))
        .sum::<f64>()
        / n;
    let (lo, hi) = (
        large.iter().map(|r| r.size_bytes).min().unwrap_or(0),
        large.iter().map(|r| r.size_bytes).max().unwrap_or(0),
    );
    let what = if lo == hi {
        format!("busbw at {}", crate::text::size::format(hi))
    } else {
        format!(
            "busbw at {}-{}",
            crate::text::size::format(lo),
            crate::text::size::format(hi)
        )
    };
    let mut v = busbw.judge(g(&what), &[measured], Some(expected).filter(|e| *e > 0.0));
    let avg = parsed
        .avg_busbw_gbs
        .map(|a| format!("; average over every size {a:.2} GB/s"))
        .unwrap_or_default();
    let extra = if v.outcome == Outcome::Ok || v.detail.is_empty() {
        String::new()
    } else {
        format!("; {}", v.detail)
    };
    v.detail = format!(
        "{measured:.2} GB/s of the {expected:.2} expected at the largest sizes{avg}{extra}"
    );
    Some(v)
}

/// Did the fabric carry it: the RDMA byte counters of every rank moved.
fn fabric_counters(gate: &str, ctx: &Context) -> Option<Verdict> {
    if ctx.fabric_bytes_per_rank.is_empty() {
        return None;
    }
    let dead: Vec<&str> = ctx
        .fabric_bytes_per_rank
        .iter()
        .filter(|(_, d)| d.is_some_and(|d| d <= 0))
        .map(|(h, _)| h.as_str())
        .collect();
    if !dead.is_empty() {
        Some(Verdict::check(
            gate,
            Outcome::Fail,
            format!("RDMA byte counters did not move on {}", dead.join(", ")),
            Some(Trap::FabricNotUsed),
        ))
    } else if ctx.fabric_bytes_per_rank.iter().all(|(_, d)| d.is_some()) {
        Some(Verdict::check(
            gate,
            Outcome::Ok,
            "RDMA byte counters moved on every rank",
            None,
        ))
    } else {
        None
    }
}

/// NCCL_IB_HCA lists every cabled half of every rank (one half alone caps a cable near its rate).
fn hca_covers_every_half(gate: &str, ctx: &Context) -> Option<Verdict> {
    let hca = ctx.nccl_hca.as_ref()?;
    let listed: Vec<&str> = hca.split(',').map(str::trim).collect();
    let missing: Vec<&str> = ctx
        .cabled_devices
        .iter()
        .map(String::as_str)
        .filter(|d| !listed.contains(d))
        .collect();
    (!missing.is_empty()).then(|| {
        Verdict::check(
            gate,
            Outcome::Warn,
            format!(
                "NCCL_IB_HCA leaves out cabled device(s) {}",
                missing.join(", ")
            ),
            Some(Trap::HalfMissingFromHca),
        )
    })
}

/// One root cause, one FAIL: over TCP sockets the bandwidth, the small-message time and the
/// counters are all what the fallback makes them.
fn follow_the_fallback(fallback: &str, out: &mut [Verdict]) {
    if !out
        .iter()
        .any(|v| v.gate == fallback && v.trap == Some(Trap::TcpFallback))
    {
        return;
    }
    for v in out.iter_mut() {
        if v.gate != fallback
            && v.outcome != Outcome::Ok
            && matches!(
                v.trap,
                Some(Trap::SlowCollective | Trap::SlowBusBandwidth | Trap::FabricNotUsed)
            )
        {
            v.follows = Some(fallback.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    //! Every classification here reads what the real parsers make of real-format captures: a
    //! renamed parser field or a new error kind breaks these tests, not a verdict.
    use super::*;
    use crate::gate::test_metrics::{BUSBW, BW, LAT, TIME};
    use crate::tools::nccl_tests::parse as nccl_tests;
    use crate::tools::perftest::parse::{parse_bw, parse_lat};

    fn ctx(expected: f64) -> Context {
        Context {
            gate: "rdma-bw x".into(),
            expected_gbps: Some(expected),
            ..Context::default()
        }
    }

    /// An ib_write_bw client's result table in the current format, at `gbps`.
    fn bw(gbps: f64) -> BwReport {
        parse_bw(&format!(
            "---------------------------------------------------------------------------------------\n \
#bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n \
65536      5000             {gbps:.2}             {gbps:.2}              0.207901\n\
---------------------------------------------------------------------------------------\n"
        ))
    }

    fn capture(tool: &str, name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/parse/{tool}/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn nccl_capture(name: &str) -> NcclReport {
        nccl_tests::parse(&capture("nccl-tests", name))
    }

    /// A GB10 pair's expectation: ~30 us at 16 KiB, 23.75 GB/s at large sizes.
    fn pair_model<'a>(f: &'a dyn Fn(u64) -> f64) -> NcclExpectation<'a> {
        NcclExpectation {
            small_time_us: Some(29.7),
            busbw_gbs: f,
            unified_memory: true,
        }
    }

    fn pair_busbw(bytes: u64) -> f64 {
        let t = 29.0 + bytes as f64 / 23.75e3;
        bytes as f64 / t / 1e3
    }

    fn nccl_specs() -> (GateSpec, GateSpec) {
        (GateSpec::default_for(&TIME), GateSpec::default_for(&BUSBW))
    }

    /// A value no run can produce is no measurement: no gate is judged with the output, not
    /// even with the rows beside the rejected one.
    #[test]
    fn an_impossible_value_is_not_a_measurement() {
        let s = GateSpec::default_for(&BW);
        let r = parse_bw(&capture("ib_write_bw", "bw-above-any-link-client.txt"));
        let v = bandwidth(&s, &r, &ctx(111.9));
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].outcome, v[0].trap, v[0].measured),
            (Outcome::Fail, Some(Trap::Unparseable), None)
        );
        assert!(
            v[0].detail.starts_with(
                "the tool's output is not a measurement: line 23: row of 65536 B: BW peak"
            ),
            "{}",
            v[0].detail
        );
        // negative, as a row of its own: the same
        let v = bandwidth(&s, &bw(-12.0), &ctx(111.9));
        assert!(v[0].detail.contains("is negative"), "{}", v[0].detail);
        // nccl: the rejected row takes the time, correctness and busbw gates with it
        let (small, bus) = nccl_specs();
        let c = Context {
            gate: "nccl x".into(),
            ..Context::default()
        };
        let parsed = nccl_capture("busbw-above-any-memory.txt");
        let v = nccl(&small, &bus, &parsed, &c, &pair_model(&pair_busbw));
        let gates: Vec<&str> = v.iter().map(|v| v.gate.as_str()).collect();
        assert_eq!(gates, ["nccl x transport", "nccl x run"]);
        assert_eq!(v[1].trap, Some(Trap::Unparseable));
        assert!(
            v[1].detail
                .contains("busbw `1e+308` GB/s is above the 100,000 GB/s no collective moves"),
            "{}",
            v[1].detail
        );
    }

    #[test]
    fn the_helper_reads_as_a_complete_row() {
        let r = bw(12.74);
        assert_eq!(r.bw_avg_gbps, Some(12.74), "{r:?}");
        assert_eq!(r.error, None);
    }

    #[test]
    fn throttle_signature() {
        let s = GateSpec::default_for(&BW);
        let v = bandwidth(&s, &bw(12.74), &ctx(111.9));
        assert_eq!(v[0].outcome, Outcome::Fail);
        assert_eq!(v[0].trap, Some(Trap::FirmwareThrottle));
        // near miss: 26 Gb/s is not the throttle band
        let v = bandwidth(&s, &bw(26.0), &ctx(111.9));
        assert_ne!(v[0].trap, Some(Trap::FirmwareThrottle));
    }

    /// A flow shows a throttle when its pass mark (80% of its share) is above the band's top
    /// (25 Gb/s on a GB10 half): 31.25 Gb/s expected at least; a flow's share of a crowded ISL
    /// (2.4 Gb/s, 1024 nodes on four switches) passes with a throttled half at one end.
    #[test]
    fn a_flow_shows_a_throttle_only_above_the_band() {
        let s = GateSpec::default_for(&BW);
        assert_eq!(throttle_band(None), (8.0, 25.0));
        assert!(shows_throttle(&s, Some(111.9), Some(111.9)));
        assert!(shows_throttle(&s, Some(31.3), None));
        assert!(!shows_throttle(&s, Some(31.2), None));
        assert!(!shows_throttle(&s, Some(2.4), Some(110.8)));
        // and what it cannot show it passes: 12.74 is above 80% of 2.4
        assert_eq!(bandwidth(&s, &bw(12.74), &ctx(2.4))[0].outcome, Outcome::Ok);
        // on a 25G site the band is 1.7-5.4 Gb/s: a 7 Gb/s share shows it
        let (lo, hi) = throttle_band(Some(24.0));
        assert!(
            (lo - 1.716).abs() < 0.01 && (hi - 5.362).abs() < 0.01,
            "{lo} {hi}"
        );
        assert!(shows_throttle(&s, Some(7.0), Some(24.0)));
        // an absolute pass mark above the band shows it at any share; no expected value, no
        // judgement against the band
        let mut abs = s.clone();
        abs.pass = Some(crate::gate::threshold::Threshold::Absolute { value: 90.0 });
        assert!(shows_throttle(&abs, Some(2.4), None));
        assert!(shows_throttle(&s, None, None));
    }

    #[test]
    fn signatures_scale_with_the_link_rate() {
        let s = GateSpec::default_for(&BW);
        // a 25G site (standalone 24 Gb/s): 3 Gb/s is its throttle band, not "below line rate"
        let mut c = ctx(24.0);
        c.standalone_gbps = Some(24.0);
        assert_eq!(
            bandwidth(&s, &bw(3.0), &c)[0].trap,
            Some(Trap::FirmwareThrottle)
        );
        c.crosses_isl = true;
        assert_eq!(
            bandwidth(&s, &bw(1.0), &c)[0].trap,
            Some(Trap::IslBlockedRstp)
        );
        // near miss: 12 Gb/s on that site is a WARN below line rate, not the throttle
        let mut c = ctx(24.0);
        c.standalone_gbps = Some(24.0);
        let v = bandwidth(&s, &bw(12.0), &c);
        assert_eq!(v[0].outcome, Outcome::Warn);
        assert_eq!(v[0].trap, Some(Trap::BelowLineRate));
    }

    #[test]
    fn rstp_and_software_forwarding_signatures() {
        let s = GateSpec::default_for(&BW);
        let mut c = ctx(111.1);
        c.crosses_isl = true;
        assert_eq!(
            bandwidth(&s, &bw(4.47), &c)[0].trap,
            Some(Trap::IslBlockedRstp)
        );
        let mut c = ctx(111.1);
        c.seq_err_delta = Some(900);
        assert_eq!(
            bandwidth(&s, &bw(4.85), &c)[0].trap,
            Some(Trap::SoftwareForwarding)
        );
        // near miss: same counter growth at line rate is congestion control, a WARN
        let v = bandwidth(&s, &bw(81.9), &{
            let mut c = ctx(82.0);
            c.seq_err_delta = Some(5500);
            c
        });
        assert_eq!(v[0].outcome, Outcome::Ok);
        assert_eq!(v[1].outcome, Outcome::Warn);
        assert_eq!(v[1].trap, Some(Trap::CongestionControl));
    }

    #[test]
    fn connect_failed_names_the_server_or_firewall_trap() {
        let s = GateSpec::default_for(&BW);
        let r = parse_bw(&capture("ib_write_bw", "err-connect-new-two-line.txt"));
        let v = bandwidth(&s, &r, &ctx(111.9));
        assert_eq!(v[0].trap, Some(Trap::ServerGoneOrFirewall));
        // fabricplan starts servers detached itself: the fix is the site's, not its own job
        let fix = v[0].fix.as_ref().unwrap();
        assert!(
            !fix.contains("detached") && fix.contains("DESTINATION"),
            "{fix}"
        );
    }

    #[test]
    fn nccl_socket_fallback_and_counters() {
        let (small, bus) = nccl_specs();
        let parsed = nccl_capture("allreduce-socket-fallback.txt");
        let mut c = Context {
            gate: "nccl".into(),
            ..Context::default()
        };
        c.fabric_bytes_per_rank = vec![("a".into(), Some(0)), ("b".into(), Some(0))];
        let v = nccl(&small, &bus, &parsed, &c, &pair_model(&pair_busbw));
        assert!(
            v.iter()
                .any(|v| v.trap == Some(Trap::TcpFallback) && v.outcome == Outcome::Fail),
            "{v:#?}"
        );
        assert!(v.iter().any(|v| v.trap == Some(Trap::FabricNotUsed)));
        // one root cause, one FAIL: the bandwidth and the counters follow from the fallback
        let consequences: Vec<&Verdict> = v
            .iter()
            .filter(|v| v.outcome != Outcome::Ok && v.trap != Some(Trap::TcpFallback))
            .collect();
        assert!(!consequences.is_empty());
        assert!(
            consequences
                .iter()
                .all(|v| v.follows.as_deref() == Some("nccl transport")),
            "{consequences:#?}"
        );
        // near miss: NET/IB with moving counters passes both (this capture's 10.9 GB/s at its
        // largest sizes is under half of what both GB10 halves carry: a bandwidth WARN only)
        let parsed = nccl_capture("allreduce-2node-ib-2025.txt");
        c.fabric_bytes_per_rank = vec![("a".into(), Some(10)), ("b".into(), Some(12))];
        let v = nccl(&small, &bus, &parsed, &c, &pair_model(&pair_busbw));
        assert!(
            v.iter().all(|v| v.outcome == Outcome::Ok
                || (v.outcome == Outcome::Warn && v.trap == Some(Trap::SlowBusBandwidth))),
            "{v:#?}"
        );
        assert!(
            v.iter()
                .any(|v| v.gate.ends_with("transport") && v.outcome == Outcome::Ok)
        );
        assert!(!v.iter().any(|v| v.trap == Some(Trap::FabricNotUsed)));
    }

    #[test]
    fn wrong_results_fail() {
        let (small, bus) = nccl_specs();
        let parsed = nccl_capture("oob-failed.txt");
        assert!(
            parsed.out_of_bounds.unwrap_or(0) > 0 || parsed.wrong_total.unwrap_or(0) > 0,
            "{parsed:?}"
        );
        let v = nccl(
            &small,
            &bus,
            &parsed,
            &Context::default(),
            &pair_model(&pair_busbw),
        );
        assert!(v.iter().any(|v| v.trap == Some(Trap::WrongResults)));
    }

    #[test]
    fn docker0_trap_from_mpirun_error() {
        let (small, bus) = nccl_specs();
        let parsed = nccl_capture("process-entry-docker0-in-run.txt");
        let v = nccl(
            &small,
            &bus,
            &parsed,
            &Context::default(),
            &pair_model(&pair_busbw),
        );
        assert_eq!(v[0].trap, Some(Trap::Docker0Subnet), "{v:#?}");
        assert!(v[0].fix.as_ref().unwrap().contains("oob_tcp_if_include"));
    }

    #[test]
    fn half_missing_from_hca() {
        let (small, bus) = nccl_specs();
        let parsed = nccl_capture("allreduce-2node-ib-2025.txt");
        let c = Context {
            nccl_hca: Some("rocep1s0f0".into()),
            cabled_devices: vec!["rocep1s0f0".into(), "roceP2p1s0f0".into()],
            ..Context::default()
        };
        let v = nccl(&small, &bus, &parsed, &c, &pair_model(&pair_busbw));
        assert!(v.iter().any(|v| v.trap == Some(Trap::HalfMissingFromHca)));
        let c = Context {
            nccl_hca: Some("rocep1s0f0,roceP2p1s0f0".into()),
            cabled_devices: vec!["rocep1s0f0".into(), "roceP2p1s0f0".into()],
            ..Context::default()
        };
        let v = nccl(&small, &bus, &parsed, &c, &pair_model(&pair_busbw));
        assert!(!v.iter().any(|v| v.trap == Some(Trap::HalfMissingFromHca)));
    }

    #[test]
    fn tool_errors_name_their_traps() {
        let s = GateSpec::default_for(&BW);
        let trap = |name: &str| {
            bandwidth(&s, &parse_bw(&capture("ib_write_bw", name)), &ctx(111.9))[0].trap
        };
        assert_eq!(trap("err-qp-rtr-failed.txt"), Some(Trap::QpRtrFailed));
        assert!(Trap::QpRtrFailed.fix().contains("GID index"));
        assert_eq!(trap("err-ib-device-not-found.txt"), Some(Trap::NoDevice));
        assert_eq!(trap("err-port-state-down.txt"), Some(Trap::PortDown));
        assert_eq!(trap("err-resource-mr.txt"), Some(Trap::MemoryRegistration));
        assert_eq!(trap_of_error(ErrorKind::MessageTooLong), Trap::MtuMismatch);
        assert_eq!(trap_of_error(ErrorKind::FragNeeded), Trap::MtuMismatch);
        // near miss: a complete row without an error is judged on its value, no error trap
        let v = bandwidth(&s, &bw(109.0), &ctx(111.9));
        assert_eq!(v[0].outcome, Outcome::Ok);
        assert_eq!(v[0].trap, None);
    }

    #[test]
    fn latency_reads_t_typical() {
        let s = GateSpec::default_for(&LAT);
        let r = parse_lat(&capture("ib_write_lat", "lat-a-sweep-client.txt"));
        let v = latency(&s, &r, &Context::default());
        assert!(v[0].measured.is_some(), "{v:#?}");
    }

    #[test]
    fn gdr_off_is_reported_not_failed() {
        let (small, bus) = nccl_specs();
        let parsed = nccl_capture("allreduce-2node-ib-2025.txt");
        assert_eq!(parsed.gdr, Some(false), "the capture says GDR 0");
        let v = nccl(
            &small,
            &bus,
            &parsed,
            &Context::default(),
            &pair_model(&pair_busbw),
        );
        let g = v.iter().find(|v| v.gate.contains("GPUDirect")).unwrap();
        assert_eq!(g.outcome, Outcome::Ok);
        assert!(g.detail.contains("GDR 0"));
        // GDR on: nothing to report
        let parsed = nccl_capture("allreduce-native-ib-gdr-2.17.txt");
        assert_eq!(parsed.gdr, Some(true));
        let v = nccl(
            &small,
            &bus,
            &parsed,
            &Context::default(),
            &pair_model(&pair_busbw),
        );
        assert!(!v.iter().any(|v| v.gate.contains("GPUDirect")));
    }
}
