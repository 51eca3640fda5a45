//! The lab a plan describes (shared by the suites that run lab twins through the real binary).

use std::path::{Path, PathBuf};

use fabricplan::plan::{Endpoint, Member, Plan};

use super::{Lab, LabSpec};

/// The plan file to give fabricplan for a lab built from `plan`'s [`lab_spec`]: a copy of the
/// twin in the lab directory with every fabric address translated to the lab's (identical to
/// the twin unless the lab had to move its fabric subnets off addresses in use on this machine;
/// see [`Lab::addr`]). Relative paths in the plan still resolve: the copy keeps the file name
/// and nothing in a twin refers to files beside it.
pub fn plan_file(lab: &Lab, plan: &Path) -> Result<PathBuf, String> {
    let text =
        std::fs::read_to_string(plan).map_err(|e| format!("read {}: {e}", plan.display()))?;
    let dir = lab.dir().join("plans");
    std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let name = plan.file_name().ok_or("plan path has no file name")?;
    let out = dir.join(name);
    std::fs::write(&out, lab.translate(&text))
        .map_err(|e| format!("write {}: {e}", out.display()))?;
    Ok(out)
}

/// One host per node (named like the node: the plan's ssh_config aliases are the lab's), one
/// veth cable per direct/ring segment, one switch port per member of a switched segment, every
/// ISL shaped with tbf to its declared capacity, every host port to a lab-sized profile's half
/// rate. Netdevs are the node's pins or its profile's;
/// addresses and prefixes are the plan's.
pub fn lab_spec(tag: &str, plan: &Plan) -> LabSpec {
    let mut spec = LabSpec::new(tag);
    for n in &plan.nodes {
        spec = spec.host(&n.name);
    }
    for s in &plan.switches {
        spec = spec.switch(&s.name);
    }
    let netdev = |e: &Endpoint| {
        plan.pinned(e)
            .netdev
            .or_else(|| plan.profile_half(e).map(|h| h.netdev.clone()))
            .unwrap_or_else(|| panic!("no netdev for {}", plan.endpoint_name(e)))
    };
    for seg in &plan.segments {
        let cidr = |m: &Member| format!("{}/{}", m.address, seg.subnet.prefix_len());
        let host = |m: &Member| plan.node(m.endpoint.node).name.clone();
        if seg.members.iter().any(|m| m.switch.is_some()) {
            for m in &seg.members {
                let sw = m
                    .switch
                    .expect("every member of a switched segment has a switch");
                spec = spec.switch_port(
                    &plan.switches[sw.0].name,
                    &host(m),
                    &netdev(&m.endpoint),
                    &cidr(m),
                );
            }
        } else {
            assert_eq!(seg.members.len(), 2, "segment {} is a cable", seg.name);
            let (a, b) = (&seg.members[0], &seg.members[1]);
            spec = spec.cable(
                &host(a),
                &netdev(&a.endpoint),
                &cidr(a),
                &host(b),
                &netdev(&b.endpoint),
                &cidr(b),
            );
        }
    }
    // A lab-sized profile's half rate is the line rate of every host port (a real GB10 half is
    // 100 Gb/s: nothing to shape on a veth).
    let half_rate = plan
        .nodes
        .iter()
        .filter_map(|n| plan.profiles[n.profile.0].half_rate_gbps)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
    if let Some(r) = half_rate.filter(|r| *r <= 25.0) {
        spec = spec.port_rate(&format!("{}mbit", (r * 1000.0).round() as u64));
    }
    for isl in &plan.isls {
        let rate = format!("{}mbit", (isl.capacity_gbps * 1000.0).round() as u64);
        spec = spec.isl(
            &plan.switches[isl.a.0].name,
            &plan.switches[isl.b.0].name,
            Some(&rate),
        );
    }
    spec
}
