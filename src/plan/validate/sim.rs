//! `[sim]`: faults injected on the simulated fabric, checked against the plan's names.

use super::{Ctx, span};
use crate::plan::diag::{Problem, did_you_mean};
use crate::plan::model::*;
use crate::plan::raw::*;

/// Fault kinds the simulated fabric understands, with the grammar of their target.
pub const SIM_FAULT_GRAMMAR: [(&str, &str); 13] = [
    ("throttle", "NODE[.PORT[.HALF]]"),
    ("mtu1500", "NODE[.PORT[.HALF]]"),
    ("crossed", "NODE.PORT"),
    ("dead-host", "NODE"),
    ("server-dies", "NODE"),
    ("rstp-block", "SWITCH-SWITCH"),
    ("nccl-socket", "NODE"),
    ("pcie-degraded", "NODE[.PORT[.HALF]]"),
    ("firmware", "NODE=VERSION"),
    ("swapped", "NODE.PORT=NODE.PORT"),
    ("flap", "NODE[.PORT[.HALF]]"),
    ("phy-errors", "NODE[.PORT[.HALF]][=RATE]"),
    ("congestion", "SWITCH|NODE"),
];

/// Fault kinds the simulated fabric understands.
pub const SIM_FAULTS: [&str; 13] = {
    let mut out = [""; 13];
    let mut i = 0;
    while i < out.len() {
        out[i] = SIM_FAULT_GRAMMAR[i].0;
        i += 1;
    }
    out
};

/// Every fault as `KIND:TARGET`, one list for an error's help and `--help`.
pub fn sim_fault_list() -> String {
    SIM_FAULT_GRAMMAR
        .iter()
        .map(|(k, t)| format!("{k}:{t}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--sim-fault`'s help: the same list as [`sim_fault_list`], written out for clap (a test
/// holds the two equal).
pub const SIM_FAULT_HELP: &str = "With --sim: inject a fault, `KIND:TARGET` (repeatable), e.g. `throttle:spark-a.f0.a`. Faults: throttle:NODE[.PORT[.HALF]], mtu1500:NODE[.PORT[.HALF]], crossed:NODE.PORT, dead-host:NODE, server-dies:NODE, rstp-block:SWITCH-SWITCH, nccl-socket:NODE, pcie-degraded:NODE[.PORT[.HALF]], firmware:NODE=VERSION, swapped:NODE.PORT=NODE.PORT, flap:NODE[.PORT[.HALF]], phy-errors:NODE[.PORT[.HALF]][=RATE], congestion:SWITCH|NODE";

pub(super) fn sim(
    ctx: &mut Ctx,
    raw: Option<&RawSim>,
    nodes: &[Node],
    switches: &[Switch],
) -> SimConfig {
    let Some(r) = raw else {
        return SimConfig {
            seed: 1,
            faults: Vec::new(),
        };
    };
    let mut faults = Vec::new();
    for f in &r.faults {
        match check_sim_fault(f.get_ref(), nodes, switches) {
            Ok(()) => faults.push(f.get_ref().clone()),
            Err(msg) => ctx.push(
                Problem::error("plan::sim-fault", msg)
                    .at(span(f), "here")
                    .help(format!("faults: {}", sim_fault_list())),
            ),
        }
    }
    SimConfig {
        seed: r.seed.unwrap_or(1),
        faults,
    }
}

/// Check a `KIND:TARGET` fault against the plan's names.
pub fn check_sim_fault(f: &str, nodes: &[Node], switches: &[Switch]) -> Result<(), String> {
    let Some((kind, target)) = f.split_once(':') else {
        return Err(format!("fault `{f}` is not `KIND:TARGET`"));
    };
    if !SIM_FAULTS.contains(&kind) {
        return Err(match did_you_mean(kind, SIM_FAULTS.iter().copied()) {
            Some(s) => format!("unknown fault `{kind}`; did you mean `{s}`?"),
            None => format!(
                "unknown fault `{kind}`; the faults are {}",
                sim_fault_list()
            ),
        });
    }
    if kind == "rstp-block" {
        let Some((a, b)) = target
            .split_once('-')
            .filter(|(a, b)| {
                switches.iter().any(|s| s.name == *a) && switches.iter().any(|s| s.name == *b)
            })
            .or_else(|| {
                // switch names may contain `-`: try every split
                target
                    .match_indices('-')
                    .map(|(i, _)| (&target[..i], &target[i + 1..]))
                    .find(|(a, b)| {
                        switches.iter().any(|s| s.name == *a)
                            && switches.iter().any(|s| s.name == *b)
                    })
            })
        else {
            return Err(format!(
                "fault `{f}`: `{target}` does not name two switches `A-B`"
            ));
        };
        let _ = (a, b);
        return Ok(());
    }
    if kind == "congestion" {
        if switches.iter().any(|s| s.name == target) || nodes.iter().any(|n| n.name == target) {
            return Ok(());
        }
        return Err(format!(
            "fault `{f}`: `{target}` is not a declared switch or node"
        ));
    }
    let declared = |node: &str| {
        if nodes.iter().any(|n| n.name == node) {
            Ok(())
        } else {
            Err(format!(
                "fault `{f}` names node `{node}`, which is not declared"
            ))
        }
    };
    match kind {
        "firmware" => {
            let Some((node, version)) = target.split_once('=') else {
                return Err(format!("fault `{f}`: the target is `NODE=VERSION`"));
            };
            declared(node)?;
            if !super::names::is_safe_token(version) {
                return Err(format!(
                    "fault `{f}`: `{version}` is not a firmware version (letters, digits, `-_.:/`)"
                ));
            }
            Ok(())
        }
        "swapped" => {
            let ends = target
                .split_once('=')
                .filter(|(a, b)| a.contains('.') && b.contains('.') && a != b);
            let Some((a, b)) = ends else {
                return Err(format!(
                    "fault `{f}`: the target is two different ends `NODE.PORT=NODE.PORT`"
                ));
            };
            for end in [a, b] {
                declared(end.split('.').next().unwrap_or(""))?;
            }
            Ok(())
        }
        "phy-errors" => {
            let (halves, rate) = target.split_once('=').unwrap_or((target, "1"));
            if !rate.parse::<f64>().is_ok_and(|r| r.is_finite() && r > 0.0) {
                return Err(format!(
                    "fault `{f}`: `{rate}` is not a number of symbol errors per second above 0"
                ));
            }
            declared(halves.split('.').next().unwrap_or(""))
        }
        _ => declared(target.split('.').next().unwrap_or("")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_lists_every_fault_with_its_target() {
        assert!(SIM_FAULT_HELP.ends_with(&format!("Faults: {}", sim_fault_list())));
        let e = check_sim_fault("bogus:spark-a", &[], &[]).unwrap_err();
        assert!(
            e.contains("throttle:NODE[.PORT[.HALF]]") && e.contains("swapped:"),
            "{e}"
        );
    }
}
