//! Firmware and PCIe per half, from what discovery read (read-only): a half whose PCIe link
//! trained below its maximum is a WARN, and its expected bandwidth is capped at what the link
//! carries ([`pcie_caps`], applied by [`crate::capacity::capped`]), so a shortfall that matches
//! the cap follows from the link, not from the cable; nodes of one profile on different NIC
//! firmware are a WARN naming who has what; a node not on its profile's pinned firmware is a
//! FAIL whose fix is the update on that host.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::checks::Check;
use super::resolve::HalfResolution;
use crate::capacity::{DEFAULT_HALF_GBPS, HalfCaps};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::Part;
use crate::gate::trap::Trap;
use crate::plan::{NodeId, Plan};

/// The halves whose PCIe link carries less than their rate, with what it carries.
pub fn pcie_caps(plan: &Plan, all: &HashMap<NodeId, Vec<HalfResolution>>) -> HalfCaps {
    let mut caps = HalfCaps::new();
    for halves in all.values() {
        for h in halves {
            let Some(cap) = h
                .hardware
                .as_ref()
                .and_then(|hw| hw.pcie.as_ref())
                .and_then(|l| l.carries_gbps())
            else {
                continue;
            };
            if cap < half_rate(plan, h) {
                caps.insert(h.endpoint.clone(), cap);
            }
        }
    }
    caps
}

fn half_rate(plan: &Plan, h: &HalfResolution) -> f64 {
    plan.profile_of(h.endpoint.node)
        .half_rate_gbps
        .unwrap_or(DEFAULT_HALF_GBPS)
}

/// Per half whose PCIe link trained below its maximum: a WARN saying what it carries now.
pub fn pcie_checks(plan: &Plan, all: &HashMap<NodeId, Vec<HalfResolution>>) -> Vec<Check> {
    let mut out = Vec::new();
    let mut nodes: Vec<&NodeId> = all.keys().collect();
    nodes.sort();
    for h in nodes.into_iter().flat_map(|n| &all[n]) {
        let Some(hw) = &h.hardware else { continue };
        let Some(link) = hw.pcie.as_ref().filter(|l| l.degraded()) else {
            continue;
        };
        let rate = half_rate(plan, h);
        let dev = h.device.clone().unwrap_or_default();
        let at = hw
            .pci
            .as_deref()
            .map(|p| format!(" ({p})"))
            .unwrap_or_default();
        let carries = link.carries_gbps();
        let what = match carries {
            Some(c) if c < rate => format!(
                "it carries at most {c:.1} Gb/s, below the half's {rate:.1}: its bandwidth is expected at {c:.1}"
            ),
            Some(c) => format!("it still carries {c:.1} Gb/s, above the half's {rate:.1}"),
            None => "what it carries cannot be read".to_string(),
        };
        let full = link
            .max_carries_gbps()
            .map(|m| format!(" ({m:.1} at its maximum)"))
            .unwrap_or_default();
        let mut v = Verdict::check(
            format!("pcie {}", h.name),
            Outcome::Warn,
            format!(
                "{dev}{at} trained at {} of {}: {what}{full}",
                link.now(),
                link.max()
            ),
            Some(Trap::PcieDegraded),
        );
        v.expected = carries.map(|c| c.min(rate));
        v.unit = "Gb/s".into();
        let e = &h.endpoint;
        let node = &plan.node(e.node).name;
        out.push((
            v.about(vec![Part::half(node, &e.port, &e.half)]),
            Vec::new(),
        ));
    }
    out
}

/// Each node's firmware (its planned halves' devices; several joined by `+`) and the PCI
/// address a firmware tool is pointed at.
fn firmware_of(all: &HashMap<NodeId, Vec<HalfResolution>>) -> BTreeMap<NodeId, (String, String)> {
    let mut out = BTreeMap::new();
    for (n, halves) in all {
        let hws: Vec<_> = halves.iter().filter_map(|h| h.hardware.as_ref()).collect();
        let versions: BTreeSet<&str> = hws.iter().filter_map(|h| h.firmware.as_deref()).collect();
        if versions.is_empty() {
            continue;
        }
        let pci = hws
            .iter()
            .filter_map(|h| h.pci.clone())
            .min()
            .unwrap_or_else(|| "PCI-ADDRESS".into());
        let joined: Vec<&str> = versions.into_iter().collect();
        out.insert(*n, (joined.join("+"), pci));
    }
    out
}

/// `28.45.1200` before `28.39.2048`: numeric parts compared as numbers.
pub(crate) fn newer(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |s: &str| -> Vec<u64> {
        s.split(['.', '-', '+'])
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    parts(a).cmp(&parts(b))
}

/// Per profile: the pinned firmware (a FAIL per node that differs, else one OK), or, unpinned,
/// a WARN when its nodes differ, implicating the nodes off the most common version (the newest
/// on a tie).
pub fn firmware_checks(plan: &Plan, all: &HashMap<NodeId, Vec<HalfResolution>>) -> Vec<Check> {
    let found = firmware_of(all);
    let mut out = Vec::new();
    for (pi, profile) in plan.profiles.iter().enumerate() {
        let of_profile: Vec<(&NodeId, &(String, String))> = found
            .iter()
            .filter(|(n, _)| plan.node(**n).profile.0 == pi)
            .collect();
        if of_profile.is_empty() {
            continue;
        }
        match &profile.firmware {
            Some(pinned) => out.extend(pinned_checks(plan, &profile.name, pinned, &of_profile)),
            None => out.extend(drift_check(plan, &profile.name, &of_profile)),
        }
    }
    out
}

fn pinned_checks(
    plan: &Plan,
    profile: &str,
    pinned: &str,
    nodes: &[(&NodeId, &(String, String))],
) -> Vec<Check> {
    let mut out = Vec::new();
    for (n, (runs, pci)) in nodes.iter().filter(|(_, (v, _))| v != pinned) {
        let name = &plan.node(**n).name;
        let v = Verdict::check(
            format!("firmware {name}"),
            Outcome::Fail,
            format!(
                "{name} runs {runs}; profile `{profile}` pins {pinned}. On {name}: `sudo mlxfwmanager -u -d {pci} -i IMAGE` with the {pinned} image (or `sudo mstflint -d {pci} -i IMAGE burn`), then shut down and unplug for 30 s"
            ),
            Some(Trap::FirmwareNotPinned),
        );
        out.push((v.about(vec![Part::node(name)]), Vec::new()));
    }
    if out.is_empty() {
        let names: Vec<Part> = nodes
            .iter()
            .map(|(n, _)| Part::node(&plan.node(**n).name))
            .collect();
        let v = Verdict::check(
            format!("firmware {profile}"),
            Outcome::Ok,
            format!("every node of profile `{profile}` runs the pinned {pinned}"),
            None,
        );
        out.push((v.about(names), Vec::new()));
    }
    out
}

fn drift_check(plan: &Plan, profile: &str, nodes: &[(&NodeId, &(String, String))]) -> Vec<Check> {
    let mut by_version: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (n, (v, _)) in nodes {
        by_version.entry(v).or_default().push(&plan.node(**n).name);
    }
    if by_version.len() < 2 {
        return Vec::new();
    }
    let mut versions: Vec<(&str, Vec<&str>)> = by_version.into_iter().collect();
    versions.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(newer(b.0, a.0)));
    let who: Vec<String> = versions
        .iter()
        .map(|(v, ns)| format!("{v} on {}", ns.join(", ")))
        .collect();
    let odd: Vec<Part> = versions[1..]
        .iter()
        .flat_map(|(_, ns)| ns.iter().map(|n| Part::node(n)))
        .collect();
    let v = Verdict::check(
        format!("firmware {profile}"),
        Outcome::Warn,
        format!(
            "nodes of profile `{profile}` run different NIC firmware: {}",
            who.join("; ")
        ),
        Some(Trap::FirmwareDrift),
    );
    vec![(v.about(odd), Vec::new())]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::probe::{Hardware, PcieLink};
    use crate::plan::Endpoint;
    use std::path::Path;

    fn plan(pin: &str) -> Plan {
        let text = format!(
            r#"format-version = 1
name = "fw"
[[profile]]
name = "site"
half-rate-gbps = 100.0
{pin}
[[profile.port]]
name = "f0"
half = [{{ name = "a", device = "mlx5_0", netdev = "eth2" }}]
[[node]]
name = "n1"
profile = "site"
[[node]]
name = "n2"
profile = "site"
[[node]]
name = "n3"
profile = "site"
[[switch]]
name = "sw"
[[cable]]
kind = "switched"
attach = {{ "n1.f0" = "sw", "n2.f0" = "sw", "n3.f0" = "sw" }}
subnets = {{ a = "198.51.100.0/24" }}
"#
        );
        crate::plan::load_str(
            Path::new("p.toml"),
            &text,
            Path::new("."),
            &crate::plan::NoKinds,
        )
        .map(|l| l.plan)
        .unwrap_or_else(|e| panic!("{e:?}"))
    }

    fn half(node: usize, fw: &str, width: u32) -> HalfResolution {
        HalfResolution {
            endpoint: Endpoint {
                node: NodeId(node),
                port: "f0".into(),
                half: "a".into(),
            },
            name: format!("n{}.f0.a", node + 1),
            address: "198.51.100.1".parse().unwrap(),
            prefix: 30,
            device: Some("mlx5_0".into()),
            netdev: Some("eth2".into()),
            gid_index: Some(3),
            active: true,
            mtu: Some(9000),
            rate_hint: None,
            link_downed: None,
            carrier_changes: None,
            address_found: true,
            problems: Vec::new(),
            issue: None,
            landed_on: None,
            port_counters: Default::default(),
            fix_command: None,
            hardware: Some(Hardware {
                firmware: Some(fw.into()),
                pci: Some("0000:01:00.0".into()),
                pcie: Some(PcieLink {
                    speed: "16.0 GT/s PCIe".into(),
                    width: Some(width),
                    max_speed: "16.0 GT/s PCIe".into(),
                    max_width: Some(8),
                }),
                ..Hardware::default()
            }),
        }
    }

    fn all(v: &[(&str, u32)]) -> HashMap<NodeId, Vec<HalfResolution>> {
        v.iter()
            .enumerate()
            .map(|(i, (fw, w))| (NodeId(i), vec![half(i, fw, *w)]))
            .collect()
    }

    #[test]
    fn a_narrow_link_is_a_warn_and_a_cap() {
        let p = plan("");
        let a = all(&[("1.2", 8), ("1.2", 4), ("1.2", 2)]);
        let caps = pcie_caps(&p, &a);
        // x8 of Gen4 carries 112 > 100: no cap; x4 56.1, x2 28.0
        assert_eq!(caps.len(), 2);
        assert!((caps[&a[&NodeId(2)][0].endpoint] - 28.04).abs() < 0.01);
        let c = pcie_checks(&p, &a);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].0.outcome, Outcome::Warn);
        assert_eq!(c[0].0.implicates, vec![Part::half("n2", "f0", "a")]);
        assert!(
            c[1].0.detail.starts_with("mlx5_0 (0000:01:00.0) trained at 16 GT/s x2 of 16 GT/s x8: it carries at most 28.0 Gb/s, below the half's 100.0"),
            "{}",
            c[1].0.detail
        );
        assert!(c.iter().all(|(_, blocks)| blocks.is_empty()));
    }

    #[test]
    fn firmware_drift_names_the_odd_node_and_a_pin_fails_it() {
        let p = plan("");
        let c = firmware_checks(
            &p,
            &all(&[("28.45.1200", 8), ("28.39.2048", 8), ("28.45.1200", 8)]),
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].0.outcome, Outcome::Warn);
        assert_eq!(
            c[0].0.detail,
            "nodes of profile `site` run different NIC firmware: 28.45.1200 on n1, n3; 28.39.2048 on n2"
        );
        assert_eq!(c[0].0.implicates, vec![Part::node("n2")]);
        // a tie: the newest is the reference
        let c = firmware_checks(&p, &all(&[("28.39.2048", 8), ("28.45.1200", 8)]));
        assert_eq!(c[0].0.implicates, vec![Part::node("n1")]);
        // all alike: nothing to say
        assert!(firmware_checks(&p, &all(&[("1", 8), ("1", 8)])).is_empty());
        let p = plan("firmware = \"28.45.1200\"");
        let c = firmware_checks(
            &p,
            &all(&[("28.45.1200", 8), ("28.39.2048", 8), ("28.45.1200", 8)]),
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].0.outcome, Outcome::Fail);
        assert_eq!(c[0].0.trap, Some(Trap::FirmwareNotPinned));
        assert!(
            c[0].0
                .detail
                .contains("sudo mlxfwmanager -u -d 0000:01:00.0"),
            "{}",
            c[0].0.detail
        );
        let c = firmware_checks(&p, &all(&[("28.45.1200", 8), ("28.45.1200", 8)]));
        assert_eq!(c[0].0.outcome, Outcome::Ok);
        assert_eq!(c[0].0.clears.len(), 2);
    }
}
