//! What the reports show of an NCCL test: its bus bandwidth and time over the message sizes it
//! swept (compare, report.html's curve), and its series in the metrics file (the average bus
//! bandwidth, the small-message time, the bus bandwidth at each size), labelled by test.

use super::{BUSBW, SMALL_TIME};
use crate::kinds::view::{Family, Sample, Sweep, SweepRow};
use crate::results::{JobResult, RunResults};
use crate::tools::nccl_tests::parse::NcclReport;

pub(super) static AVERAGE: Family = Family {
    name: "fabricplan_nccl_average_bus_bandwidth_bytes_per_second",
    kind: "gauge",
    help: "NCCL average bus bandwidth of a test, as nccl-tests reports it.",
};

pub(super) static SMALL: Family = Family {
    name: "fabricplan_nccl_small_message_time_seconds",
    kind: "gauge",
    help: "NCCL in-place time at the small message size the gate judges (16 KiB).",
};

pub(super) static PER_SIZE: Family = Family {
    name: "fabricplan_nccl_bus_bandwidth_bytes_per_second",
    kind: "gauge",
    help: "NCCL in-place bus bandwidth at one message size.",
};

/// The message size the small-message time is judged at.
pub(super) const SMALL_BYTES: u64 = 16384;

/// The nccl-tests report of a job, when its output was one.
fn report(j: &JobResult) -> Option<&NcclReport> {
    j.parsed.as_ref()?.get::<NcclReport>()
}

/// `nccl all_reduce (all_reduce_perf)`: the test (its round) and the binary that ran.
fn subject(j: &JobResult) -> String {
    let binary = report(j)
        .and_then(|r| r.collective.as_deref())
        .unwrap_or(&j.kind);
    format!("{} ({binary})", j.round_name)
}

/// The in-place bus bandwidth and time of every size the job read.
pub(super) fn sweep(j: &JobResult) -> Sweep {
    let finite = |v: Option<f64>| v.filter(|x| x.is_finite());
    let rows = report(j)
        .map(|r| {
            r.rows
                .iter()
                .map(|row| {
                    let inplace = row.in_place.as_ref();
                    SweepRow {
                        size_bytes: row.size_bytes,
                        bandwidth: finite(inplace.map(|h| h.busbw_gbs)),
                        time: finite(inplace.map(|h| h.time_us)),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    Sweep {
        subject: subject(j),
        bandwidth: BUSBW.metric,
        time: SMALL_TIME.metric,
        rows,
    }
}

/// The labels of a test's series (and the size, for a per-size one).
fn labels(j: &JobResult, size: Option<u64>) -> Vec<(&'static str, String)> {
    let collective = report(j)
        .and_then(|r| r.collective.as_deref())
        .unwrap_or_default()
        .trim_end_matches("_perf")
        .to_string();
    let test = j
        .round_name
        .strip_prefix("nccl ")
        .unwrap_or(&j.round_name)
        .to_string();
    let mut l = vec![
        ("test", test),
        ("collective", collective),
        ("ranks", j.hosts.len().to_string()),
    ];
    if let Some(s) = size {
        l.push(("size_bytes", s.to_string()));
    }
    l
}

/// The job's samples: its gates' values (GB/s to bytes per second, us to seconds), then its
/// bus bandwidth at each size.
pub(super) fn samples(_r: &RunResults, j: &JobResult) -> Vec<Sample> {
    let mut out = Vec::new();
    for v in &j.verdicts {
        let (Some(metric), Some(m)) = (v.metric, v.measured) else {
            continue;
        };
        let (family, size, exp) = if metric == BUSBW.metric {
            (&AVERAGE, None, 9)
        } else if metric == SMALL_TIME.metric {
            (&SMALL, Some(SMALL_BYTES), -6)
        } else {
            continue;
        };
        out.push(Sample {
            family,
            labels: labels(j, size),
            value: m,
            exp,
        });
    }
    for row in sweep(j).rows {
        if let Some(b) = row.bandwidth {
            out.push(Sample {
                family: &PER_SIZE,
                labels: labels(j, Some(row.size_bytes)),
                value: b,
                exp: 9,
            });
        }
    }
    out
}
