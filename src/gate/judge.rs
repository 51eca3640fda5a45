//! `GateSpec::judge`: a measurement against its thresholds, to OK / WARN / FAIL with the
//! threshold and unit, and for WARN/FAIL the trap and its fix.

use serde::Serialize;

use super::GateSpec;
use super::flow::Flow;
use super::part::Part;
use super::threshold::{Metric, Threshold};
use super::trap::Trap;

/// The outcome of one gate.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum Outcome {
    Ok,
    Warn,
    Fail,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "OK",
            Outcome::Warn => "WARN",
            Outcome::Fail => "FAIL",
        }
    }
}

/// One gate's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Verdict {
    /// What was judged: `rdma-bw spark-b.f0.a -> spark-a.f0.a`.
    pub gate: String,
    pub metric: Option<Metric>,
    pub outcome: Outcome,
    /// The measured value in `unit` (None when nothing could be measured).
    pub measured: Option<f64>,
    #[serde(default)]
    pub unit: String,
    /// The threshold in words: `>= 89.5 Gb/s (80% of expected 111.9)`.
    #[serde(default)]
    pub threshold: String,
    pub expected: Option<f64>,
    /// The trap and its fix, for a WARN or FAIL that has one; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trap: Option<Trap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trap_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// Evidence in a sentence (the tool's error, the counter delta, ...).
    #[serde(default)]
    pub detail: String,
    /// Every attempt's value, when the gate repeats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<f64>,
    /// The earlier gate this one's failure follows from (one root cause, one FAIL: a verdict
    /// that follows from another is shown, but not counted again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follows: Option<String>,
    /// The parts this verdict's evidence points at when it is a WARN or FAIL (one of them is
    /// broken), most specific first. Empty when the gate implicates no part of the fabric.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub implicates: Vec<Part>,
    /// The parts an OK verdict vouches for: each worked, up to what was measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clears: Vec<Part>,
    /// Where the evidence saw an end reach, when it tells (a cabling check's who-answered):
    /// what `detail` says in words, for the diagnosis to read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reached: Vec<Reached>,
    /// The flow it measured, when it is about one (its client's and server's ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<Flow>,
}

/// One end (`from`, `NODE.PORT.HALF`) seen reaching another (`to`: `NODE.PORT`, or a switch
/// and its port).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Reached {
    pub from: String,
    pub to: String,
}

impl Verdict {
    /// A verdict that is not a threshold comparison (transport, #wrong, unreachable, ...).
    pub fn check(
        gate: impl Into<String>,
        outcome: Outcome,
        detail: impl Into<String>,
        trap: Option<Trap>,
    ) -> Verdict {
        Verdict {
            gate: gate.into(),
            metric: None,
            outcome,
            measured: None,
            unit: String::new(),
            threshold: String::new(),
            expected: None,
            trap: if outcome == Outcome::Ok { None } else { trap },
            trap_name: if outcome == Outcome::Ok {
                None
            } else {
                trap.map(|t| t.name().to_string())
            },
            fix: if outcome == Outcome::Ok {
                None
            } else {
                trap.map(|t| t.fix().to_string())
            },
            detail: detail.into(),
            attempts: Vec::new(),
            follows: None,
            implicates: Vec::new(),
            clears: Vec::new(),
            reached: Vec::new(),
            flow: None,
        }
    }

    /// Say which parts this verdict's evidence is about: implicated when it is a WARN or FAIL,
    /// cleared when it is OK.
    pub fn about(mut self, parts: Vec<Part>) -> Verdict {
        self.set_about(parts);
        self
    }

    /// [`Verdict::about`] in place.
    pub fn set_about(&mut self, parts: Vec<Part>) {
        if self.outcome == Outcome::Ok {
            self.clears = parts;
            self.implicates.clear();
        } else {
            self.implicates = parts;
            self.clears.clear();
        }
    }

    /// The flow it measured (see [`Verdict::flow`]).
    pub fn on_flow(mut self, flow: Option<Flow>) -> Verdict {
        self.flow = flow;
        self
    }

    /// Where the evidence saw ends reach (see [`Verdict::reached`]).
    pub fn reaching(mut self, reached: Vec<Reached>) -> Verdict {
        self.reached = reached;
        self
    }

    pub fn following(mut self, gate: impl Into<String>) -> Verdict {
        self.follows = Some(gate.into());
        self
    }

    /// Replace the trap (a more specific signature was recognised).
    pub fn with_trap(mut self, trap: Trap) -> Verdict {
        if self.outcome != Outcome::Ok {
            self.trap = Some(trap);
            self.trap_name = Some(trap.name().to_string());
            self.fix = Some(trap.fix().to_string());
        }
        self
    }
}

fn fmt_val(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

impl GateSpec {
    fn bound(&self, t: Option<Threshold>, expected: Option<f64>) -> Option<f64> {
        t.and_then(|t| t.resolve(expected))
    }

    /// The outcome of one value.
    fn outcome(&self, value: f64, expected: Option<f64>) -> Outcome {
        let pass = self.bound(self.pass, expected);
        let warn = self.bound(self.warn, expected);
        let better = |v: f64, b: f64| {
            if self.unit.higher_is_better() {
                v >= b
            } else {
                v <= b
            }
        };
        match (pass, warn) {
            (None, _) => Outcome::Ok,
            (Some(p), _) if better(value, p) => Outcome::Ok,
            (Some(_), Some(w)) if better(value, w) => Outcome::Warn,
            _ => Outcome::Fail,
        }
    }

    /// The threshold in words.
    pub fn describe(&self, expected: Option<f64>) -> String {
        let unit = self.unit.symbol();
        let cmp = if self.unit.higher_is_better() {
            ">="
        } else {
            "<="
        };
        // values first, then where relative ones come from: `>= 89.52 Gb/s, warn >= 30.21 Gb/s
        // (80%, 27% of 111.9 expected)`
        let value = |t: Threshold| match t {
            Threshold::Absolute { value } => Some(format!("{cmp} {} {unit}", fmt_val(value))),
            Threshold::PctOfExpected { pct } => {
                expected.map(|e| format!("{cmp} {} {unit}", fmt_val(e * pct / 100.0)))
            }
        };
        let pct = |t: Threshold| match t {
            Threshold::PctOfExpected { pct } => Some(format!("{pct}%")),
            Threshold::Absolute { .. } => None,
        };
        let ts: Vec<Threshold> = match (self.pass, self.warn) {
            (None, _) => return "reported, not gated".to_string(),
            (Some(p), Some(w)) if p != w => vec![p, w],
            (Some(p), _) => vec![p],
        };
        let Some(values) = ts
            .iter()
            .map(|t| value(*t))
            .collect::<Option<Vec<String>>>()
        else {
            return format!(
                "{cmp} {} of the expected value (none known)",
                ts.iter()
                    .filter_map(|t| pct(*t))
                    .collect::<Vec<_>>()
                    .join(", warn ")
            );
        };
        let mut s = values[0].clone();
        if let Some(w) = values.get(1) {
            s.push_str(&format!(", warn {w}"));
        }
        let pcts: Vec<String> = ts.iter().filter_map(|t| pct(*t)).collect();
        if let (false, Some(e)) = (pcts.is_empty(), expected) {
            s.push_str(&format!(
                " ({} of {} expected)",
                pcts.join(", "),
                fmt_val(e)
            ));
        }
        s
    }

    /// Judge one measurement.
    pub fn judge(&self, gate: impl Into<String>, values: &[f64], expected: Option<f64>) -> Verdict {
        let attempts: Vec<Option<f64>> = values.iter().copied().map(Some).collect();
        self.judge_attempts(gate, &attempts, expected)
    }

    /// Judge the attempts of a measurement (`None`: an attempt that measured nothing): OK when
    /// `pass_if` of them pass, WARN when that many at least warn, FAIL otherwise. The value
    /// reported is the best one, the one the verdict rests on.
    pub fn judge_attempts(
        &self,
        gate: impl Into<String>,
        attempts: &[Option<f64>],
        expected: Option<f64>,
    ) -> Verdict {
        let unit = self.unit.symbol().to_string();
        let gate = gate.into();
        let values: Vec<f64> = attempts.iter().flatten().copied().collect();
        if values.is_empty() {
            return Verdict {
                gate,
                metric: Some(self.metric),
                outcome: Outcome::Fail,
                measured: None,
                unit,
                threshold: self.describe(expected),
                expected,
                trap: Some(Trap::Unparseable),
                trap_name: Some(Trap::Unparseable.name().into()),
                fix: Some(Trap::Unparseable.fix().into()),
                detail: "no measurement".into(),
                attempts: Vec::new(),
                follows: None,
                implicates: Vec::new(),
                clears: Vec::new(),
                reached: Vec::new(),
                flow: None,
            };
        }
        let outcomes: Vec<Outcome> = attempts
            .iter()
            .map(|v| v.map_or(Outcome::Fail, |v| self.outcome(v, expected)))
            .collect();
        let oks = outcomes.iter().filter(|o| **o == Outcome::Ok).count();
        let not_fail = outcomes.iter().filter(|o| **o != Outcome::Fail).count();
        let need = usize::try_from(self.pass_if)
            .unwrap_or(usize::MAX)
            .clamp(1, attempts.len().max(1));
        let outcome = if oks >= need {
            Outcome::Ok
        } else if not_fail >= need {
            Outcome::Warn
        } else {
            Outcome::Fail
        };
        let measured = if self.unit.higher_is_better() {
            values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        } else {
            values.iter().copied().fold(f64::INFINITY, f64::min)
        };
        let (trap, trap_name, fix) = if outcome == Outcome::Ok {
            (None, None, None)
        } else {
            (Some(self.trap), Some(self.trap_name()), Some(self.fix()))
        };
        let detail = self.attempts_detail(attempts, oks, need, expected);
        Verdict {
            gate,
            metric: Some(self.metric),
            outcome,
            measured: Some(measured),
            unit,
            threshold: self.describe(expected),
            expected,
            trap,
            trap_name,
            fix,
            detail,
            attempts: if attempts.len() > 1 {
                values
            } else {
                Vec::new()
            },
            follows: None,
            implicates: Vec::new(),
            clears: Vec::new(),
            reached: Vec::new(),
            flow: None,
        }
    }

    /// The attempts in a sentence when the gate repeats (`2/3 attempts >= 89.52 Gb/s, 2 needed:
    /// 95.10, no result, 91.00`); empty for a single attempt.
    fn attempts_detail(
        &self,
        attempts: &[Option<f64>],
        oks: usize,
        need: usize,
        expected: Option<f64>,
    ) -> String {
        if attempts.len() <= 1 {
            return String::new();
        }
        let unit = self.unit.symbol();
        let bound = self
            .bound(self.pass, expected)
            .map(|b| {
                format!(
                    " {} {} {unit}",
                    if self.unit.higher_is_better() {
                        ">="
                    } else {
                        "<="
                    },
                    fmt_val(b)
                )
            })
            .unwrap_or_default();
        format!(
            "{oks}/{} attempts{bound}, {need} needed: {}",
            attempts.len(),
            attempts
                .iter()
                .map(|v| v.map_or("no result".to_string(), fmt_val))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::test_metrics::{BW, INFO, LAT};

    #[test]
    fn bandwidth_default_relative_to_expected() {
        let g = GateSpec::default_for(&BW);
        assert_eq!(g.judge("x", &[109.0], Some(111.9)).outcome, Outcome::Ok);
        // R2b: two flows on one ISL direction, expected ~82 each
        assert_eq!(g.judge("x", &[81.9], Some(82.0)).outcome, Outcome::Ok);
        // a flat 90 Gb/s gate would have failed it; the throttle still fails
        let v = g.judge("x", &[12.74], Some(111.9));
        assert_eq!(v.outcome, Outcome::Fail);
        assert_eq!(v.trap, Some(Trap::FirmwareThrottle));
        assert!(v.fix.unwrap().contains("firmware"));
        assert_eq!(g.judge("x", &[60.0], Some(111.9)).outcome, Outcome::Warn);
    }

    #[test]
    fn latency_lower_is_better() {
        let g = GateSpec::default_for(&LAT);
        assert_eq!(g.judge("x", &[1.45], None).outcome, Outcome::Ok);
        assert_eq!(g.judge("x", &[3.0], None).outcome, Outcome::Ok);
        assert_eq!(g.judge("x", &[3.01], None).outcome, Outcome::Warn);
        assert_eq!(g.judge("x", &[10.5], None).outcome, Outcome::Fail);
        assert!(
            g.judge("x", &[1.45], None)
                .threshold
                .starts_with("<= 3.00 us")
        );
    }

    #[test]
    fn k_of_n_attempts() {
        let mut g = GateSpec::default_for(&BW);
        g.pass = Some(Threshold::Absolute { value: 90.0 });
        g.warn = Some(Threshold::Absolute { value: 30.0 });
        g.attempts = 3;
        g.pass_if = 2;
        let v = g.judge("x", &[95.0, 20.0, 91.0], None);
        assert_eq!(v.outcome, Outcome::Ok);
        assert_eq!(v.attempts.len(), 3);
        assert_eq!(
            g.judge("x", &[95.0, 20.0, 50.0], None).outcome,
            Outcome::Warn
        );
        assert_eq!(
            g.judge("x", &[95.0, 20.0, 10.0], None).outcome,
            Outcome::Fail
        );
    }

    #[test]
    fn no_value_is_a_fail_not_a_pass() {
        let g = GateSpec::default_for(&BW);
        assert_eq!(g.judge("x", &[], Some(111.9)).outcome, Outcome::Fail);
    }

    #[test]
    fn ungated_metric_reports_ok() {
        let g = GateSpec::default_for(&INFO);
        let v = g.judge("x", &[12.0], None);
        assert_eq!(v.outcome, Outcome::Ok);
        assert_eq!(v.threshold, "reported, not gated");
    }
}
