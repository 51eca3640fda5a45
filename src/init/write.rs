//! The plan text: every fact with a comment saying where it came from, every open question a
//! `TODO` comment at its line. The tests are the kinds' starting tables for the fabric's shape;
//! the gates are written from the capacity model's expected values on the drafted plan itself;
//! the commands that apply the proposed addresses close it.

use std::fmt::Write as _;
use std::path::Path;

use super::addresses::derived;
use super::boxes::{BoxInfo, Boxes};
use super::cabling::{Cable, Cabling, Seg, Shape};
use super::{Draft, Options};
use crate::gate::threshold::Threshold;
use crate::plan::Plan;

/// A TOML string.
fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The plan: header, profiles, nodes, switches and ISLs, cables, tests; then the gates (from
/// the capacity model on this very plan) and the commands to apply the proposed addresses.
pub fn plan(boxes: &Boxes, c: &Cabling, opts: &Options) -> Draft {
    let mut todos: Vec<String> = Vec::new();
    let mut s = header(boxes, c, opts, &mut todos);
    for p in boxes.profiles.iter().filter(|p| !p.builtin) {
        profile(&mut s, p);
    }
    for (i, b) in boxes.boxes.iter().enumerate() {
        node(&mut s, boxes, c, i, b, &mut todos);
    }
    for (name, why) in &c.switches {
        let _ = writeln!(s, "[[switch]]\nname = {}  # {why}\n", q(name));
    }
    for (a, b, todo) in &c.isls {
        // one host port's rate: the profile's, else what its halves carry
        let rate = boxes
            .profiles
            .first()
            .and_then(|p| match p.builtin {
                true => crate::plan::Profile::gb10().port_rate_gbps,
                false => p.half_rate.as_ref().map(|r| r.0),
            })
            .unwrap_or(crate::capacity::DEFAULT_HALF_GBPS);
        let _ = writeln!(
            s,
            "# TODO: {todo}\n[[isl]]\nends = [{}, {}]\ncapacity-gbps = {rate}\n",
            q(a),
            q(b)
        );
        todos.push(todo.clone());
    }
    for cable in &c.cables {
        write_cable(&mut s, boxes, cable, &mut todos);
    }
    let shape = shape_of(boxes, c);
    for t in crate::kinds::starters(&shape) {
        let _ = writeln!(s, "{t}");
    }
    Draft {
        text: s,
        todos,
        commands: Vec::new(),
        notes: Vec::new(),
    }
}

/// The header: where the plan came from, what proved the cables, where the subnets came from,
/// and the hosts left out (each a TODO).
fn header(boxes: &Boxes, c: &Cabling, opts: &Options, todos: &mut Vec<String>) -> String {
    let mut s = String::from(
        "# Drafted by `fabricplan init` from what the hosts showed (read-only: sysfs, `ip`, lldpd,\n# the neighbour tables after a ping to the IPv6 all-nodes group). Every fact says where it came\n# from; what could not be decided is a TODO (`init` exits 1 while any is left).\n",
    );
    if let Some(p) = &opts.simulated {
        let _ = writeln!(
            s,
            "# SIMULATED: drafted from the fabric simulated from {p} (--sim), not from hardware."
        );
    }
    let hosts: Vec<String> = boxes.boxes.iter().map(|b| b.given.clone()).collect();
    let _ = writeln!(
        s,
        "# Hosts read: {}.",
        if hosts.is_empty() {
            "none".into()
        } else {
            hosts.join(", ")
        }
    );
    if !c.sources.is_empty() {
        let by: Vec<&str> = c.sources.iter().map(|x| x.text()).collect();
        let _ = writeln!(s, "# Cables proven by who answers: {}.", by.join(", "));
    }
    let proposed = c.cables.iter().flat_map(|x| &x.segs).any(|x| !x.in_use);
    if proposed {
        let _ = writeln!(
            s,
            "# Subnets marked `proposed` were free in {}{}; the commands that apply them close this file.",
            opts.pool,
            if opts.pool_given {
                " (--subnet-pool)"
            } else {
                ", a documentation range (RFC 5737), the default: fine on links no router sees; give --subnet-pool for your site's"
            }
        );
    }
    for l in &boxes.left_out {
        let t = format!("host {}", l.line());
        let _ = writeln!(s, "# TODO: {t}");
        todos.push(t);
    }
    let _ = writeln!(
        s,
        "format-version = 1\nname = {}\ndescription = {}\n",
        q(&opts.name),
        q(&format!(
            "Drafted by fabricplan init from {} host(s)",
            boxes.boxes.len()
        ))
    );
    s
}

fn profile(s: &mut String, p: &super::boxes::ProfileInfo) {
    let _ = writeln!(s, "# {}", p.source);
    let _ = writeln!(s, "[[profile]]\nname = {}", q(&p.name));
    if let Some((rate, why)) = &p.half_rate {
        let _ = writeln!(
            s,
            "half-rate-gbps = {rate}  # the most a half can carry: {why}; measure a healthy link once and set what ib_write_bw reaches"
        );
    }
    for port in &p.ports {
        let halves: Vec<String> = port
            .halves
            .iter()
            .map(|h| {
                format!(
                    "{{ name = {}, device = {}, netdev = {} }}",
                    q(&h.name),
                    q(&h.device),
                    q(&h.netdev)
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "\n[[profile.port]]\nname = {}\nhalf = [{}]",
            q(&port.name),
            halves.join(", ")
        );
    }
    s.push('\n');
}

/// One node: its name (and how it is reached), its profile, one comment per half with what
/// sysfs and `ip` say, and the TODOs about its ports.
fn node(
    s: &mut String,
    boxes: &Boxes,
    c: &Cabling,
    i: usize,
    b: &BoxInfo,
    todos: &mut Vec<String>,
) {
    let p = &boxes.profiles[b.profile];
    let mut facts = vec![format!("hostname {}", b.probe.hostname)];
    facts.extend(
        b.extra
            .machine_id
            .as_ref()
            .map(|m| format!("machine id {m}")),
    );
    facts.extend(b.probe.kernel.as_ref().map(|k| format!("kernel {k}")));
    let _ = writeln!(
        s,
        "[[node]]\nname = {}  # {}: {}",
        q(&b.name),
        if b.name == b.given {
            "as given"
        } else {
            "its hostname"
        },
        facts.join(", ")
    );
    if b.name != b.given {
        let _ = writeln!(
            s,
            "ssh = {{ alias = {} }}  # as given on the command line",
            q(&b.given)
        );
    }
    if p.builtin {
        let _ = writeln!(s, "# {}", p.source);
    } else {
        let _ = writeln!(s, "profile = {}  # {}", q(&p.name), p.source);
    }
    for port in &b.ports {
        for h in &port.halves {
            let _ = writeln!(
                s,
                "# {}.{}: {}",
                port.name,
                h.name,
                half_facts(b, &h.device, &h.netdev)
            );
        }
    }
    for n in c.notes.iter().filter(|n| n.r#box == i) {
        if n.todo {
            let _ = writeln!(s, "# TODO: {}", n.text);
            todos.push(n.text.clone());
        } else {
            let _ = writeln!(s, "# {}", n.text);
        }
    }
    s.push('\n');
}

/// What sysfs and `ip` say of one half.
fn half_facts(b: &BoxInfo, device: &str, netdev: &str) -> String {
    let mut f = vec![format!("{device} / {netdev}")];
    let d = b.probe.device(device);
    let i = b.probe.interface(netdev);
    if let Some(d) = d {
        f.push(if d.state.is_empty() {
            "state ?".into()
        } else {
            d.state.clone()
        });
        if !d.rate.is_empty() {
            f.push(format!("rate {} (OS hint)", d.rate));
        }
        f.extend(
            d.hardware
                .firmware
                .as_ref()
                .map(|x| format!("firmware {x}")),
        );
        if let Some(l) = &d.hardware.pcie {
            f.push(if l.degraded() {
                format!("PCIe {} of {} (below its maximum)", l.now(), l.max())
            } else {
                format!("PCIe {}", l.now())
            });
        }
    }
    if let Some(i) = i {
        f.extend(i.mtu.map(|m| format!("MTU {m}")));
        match i.ipv4.first() {
            Some(a) => {
                let gid = d.and_then(|d| d.roce_v2_index(a.addr()));
                f.push(format!(
                    "{a}{}",
                    gid.map(|g| format!(" (RoCE v2 GID {g})"))
                        .unwrap_or_default()
                ));
            }
            None => f.push("no IPv4 address".into()),
        }
    }
    f.join(", ")
}

/// `["a", "b"]`
fn list(items: &[String]) -> String {
    let v: Vec<String> = items.iter().map(|x| q(x)).collect();
    format!("[{}]", v.join(", "))
}

/// Whether the cable carries every half of `port` on box `b`.
fn all_halves(b: &BoxInfo, port: &str, halves: &[String]) -> bool {
    b.ports
        .iter()
        .find(|p| p.name == port)
        .is_some_and(|p| p.halves.iter().all(|h| halves.contains(&h.name)))
}

fn write_cable(s: &mut String, boxes: &Boxes, cable: &Cable, todos: &mut Vec<String>) {
    let _ = writeln!(s, "[[cable]]");
    for e in &cable.evidence {
        let _ = writeln!(s, "# {e}");
    }
    let name = |i: usize| boxes.boxes[i].name.clone();
    let first_port = match &cable.shape {
        Shape::Direct([a, b]) => {
            let _ = writeln!(
                s,
                "kind = \"direct\"\nname = {}\nends = {}",
                q(&cable.name),
                list(&[
                    format!("{}.{}", name(a.r#box), a.port),
                    format!("{}.{}", name(b.r#box), b.port)
                ])
            );
            (a.r#box, a.port.clone())
        }
        Shape::Ring { nodes, out, inn } => {
            let names: Vec<String> = nodes.iter().map(|n| name(*n)).collect();
            let _ = writeln!(
                s,
                "kind = \"ring\"\nname = {}\nnodes = {}  # node[i].{out} faces node[i+1].{inn}",
                q(&cable.name),
                list(&names)
            );
            if (out.as_str(), inn.as_str()) != ("f0", "f1") {
                let _ = writeln!(s, "ports = {}", list(&[out.clone(), inn.clone()]));
            }
            (nodes[0], out.clone())
        }
        Shape::Switched(attach) => {
            let items: Vec<String> = attach
                .iter()
                .map(|a| {
                    let key = q(&format!("{}.{}", name(a.end.r#box), a.end.port));
                    match &a.switch_port {
                        Some(p) => format!(
                            "{key} = {{ switch = {}, switch-port = {} }}",
                            q(&a.switch),
                            q(p)
                        ),
                        None => format!("{key} = {}", q(&a.switch)),
                    }
                })
                .collect();
            let _ = writeln!(
                s,
                "kind = \"switched\"\nname = {}\nattach = {{ {} }}",
                q(&cable.name),
                items.join(", ")
            );
            attach
                .first()
                .map(|a| (a.end.r#box, a.end.port.clone()))
                .unwrap_or_default()
        }
    };
    if !all_halves(&boxes.boxes[first_port.0], &first_port.1, &cable.halves) {
        let _ = writeln!(
            s,
            "halves = {}  # the halves that answered",
            list(&cable.halves)
        );
    }
    subnets(s, boxes, cable);
    for t in &cable.todos {
        let _ = writeln!(s, "# TODO: {t}");
        todos.push(t.clone());
    }
    s.push('\n');
}

/// `subnets` (or a ring's `link-subnets`) with where each came from, and `addresses` where the
/// ones in use are not the ones the plan derives (always for a switched cable).
fn subnets(s: &mut String, boxes: &Boxes, cable: &Cable) {
    let whence = |x: &Seg| if x.in_use { "in use" } else { "proposed" };
    let segs: Vec<&Seg> = cable.segs.iter().filter(|x| x.subnet.is_some()).collect();
    if let Shape::Ring { .. } = cable.shape {
        let items: Vec<String> = segs
            .iter()
            .map(|x| q(&x.subnet.map(|n| n.to_string()).unwrap_or_default()))
            .collect();
        let from: Vec<&str> = segs.iter().map(|x| whence(x)).collect();
        let _ = writeln!(
            s,
            "link-subnets = [{}]  # link 1 half a, link 1 half b, ...: {}",
            items.join(", "),
            from.join(", ")
        );
        return;
    }
    let items: Vec<String> = segs
        .iter()
        .map(|x| {
            format!(
                "{} = {}",
                x.half,
                q(&x.subnet.map(|n| n.to_string()).unwrap_or_default())
            )
        })
        .collect();
    let from: Vec<String> = segs
        .iter()
        .map(|x| format!("{} {}", x.half, whence(x)))
        .collect();
    let _ = writeln!(
        s,
        "subnets = {{ {} }}  # {}",
        items.join(", "),
        from.join(", ")
    );
    let explicit = matches!(cable.shape, Shape::Switched(_)) || segs.iter().any(|x| !derived(x));
    if !explicit {
        return;
    }
    let mut per_node: Vec<(usize, Vec<String>)> = Vec::new();
    for x in &segs {
        for ((b, _), a) in x.members.iter().zip(&x.addresses) {
            let Some(a) = a else { continue };
            let item = format!("{} = {}", x.half, q(&a.to_string()));
            match per_node.iter_mut().find(|(n, _)| n == b) {
                Some((_, v)) => v.push(item),
                None => per_node.push((*b, vec![item])),
            }
        }
    }
    let items: Vec<String> = per_node
        .iter()
        .map(|(b, v)| format!("{} = {{ {} }}", q(&boxes.boxes[*b].name), v.join(", ")))
        .collect();
    let _ = writeln!(s, "addresses = {{ {} }}", items.join(", "));
}

/// The shape the kinds size their starting tests by.
fn shape_of(boxes: &Boxes, c: &Cabling) -> crate::kinds::Drafted {
    let mut d = crate::kinds::Drafted::default();
    for cable in &c.cables {
        let nodes: Vec<usize> = match &cable.shape {
            Shape::Direct([a, b]) => vec![a.r#box, b.r#box],
            Shape::Ring { nodes, .. } if nodes.len() <= 3 => nodes.clone(),
            Shape::Ring { .. } => continue,
            Shape::Switched(att) => {
                d.switched_members = d.switched_members.max(att.len());
                att.iter().map(|a| a.end.r#box).collect()
            }
        };
        let mut names: Vec<String> = nodes.iter().map(|n| boxes.boxes[*n].name.clone()).collect();
        names.dedup();
        if !d.groups.contains(&names) {
            d.groups.push(names);
        }
    }
    d
}

/// The gates of the kinds the plan runs, from the capacity model's expected values on the
/// plan itself: the range a job of each kind is expected at, and the kind's pass and warn
/// bands against it.
pub fn gates(plan: &Plan) -> String {
    let fabric = crate::topology::Fabric::build(plan);
    let schedule = crate::kinds::schedule(plan);
    let mut s = String::new();
    for k in crate::kinds::ALL {
        let mut lo = f64::INFINITY;
        let mut hi = 0.0f64;
        for i in 0..schedule.len() {
            let Some(round) = schedule.round(plan, &fabric, i) else {
                continue;
            };
            if round.kind != k.id() {
                continue;
            }
            for e in crate::kinds::expected(plan, &round).into_iter().flatten() {
                lo = lo.min(e);
                hi = hi.max(e);
            }
        }
        let spec = k.metric();
        let (Some(Threshold::PctOfExpected { pct: pass }), warn) = (spec.pass, spec.warn) else {
            continue;
        };
        if hi <= 0.0 {
            continue;
        }
        let unit = spec.unit.symbol();
        let range = if (hi - lo).abs() < 0.05 {
            format!("{hi:.1} {unit}")
        } else {
            format!("{lo:.1}-{hi:.1} {unit}")
        };
        let _ = writeln!(
            s,
            "# the capacity model expects {range} per job of this plan's {} rounds: pass at {pass}% of it ({:.1} {unit} at the least)",
            k.id(),
            lo * pass / 100.0
        );
        let _ = writeln!(
            s,
            "[gates.{}]\nmin-pct-of-expected = {pass}",
            spec.metric.name()
        );
        if let Some(Threshold::PctOfExpected { pct }) = warn {
            let _ = writeln!(s, "warn-pct-of-expected = {pct}");
        }
        s.push('\n');
    }
    s
}

/// Load the drafted text as the plan it is.
pub fn load(text: &str) -> Result<Plan, String> {
    crate::kinds::load_str(Path::new("drafted.toml"), text, Path::new("."))
        .map(|l| l.plan)
        .map_err(|e| match e {
            crate::plan::LoadError::Invalid(d) => d.render(false, 100),
            e => e.to_string(),
        })
}
