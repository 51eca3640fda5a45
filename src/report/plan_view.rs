//! `fabricplan plan`: the dry run. Rounds, jobs and the exact command lines each host would run,
//! in order, as text or JSON. Written round by round: a 4096-node all-pairs plan streams.

use std::io::{self, Write};

use serde::Serialize;

use crate::kinds;
use crate::plan::Plan;
use crate::render::Renderer;
use crate::render::job::{JobCommands, Resolution, Role};
use crate::render::launch::LaunchStyle;
use crate::schedule::{Coverage, Job, Round, Schedule, isl_load};
use crate::topology::Fabric;

/// The version of the `plan --format json` document.
pub const PLAN_JSON_VERSION: u32 = 1;

/// One job in `plan --format json`.
#[derive(Debug, Serialize)]
pub struct JobView<'a> {
    pub id: &'a str,
    pub kind: &'static str,
    pub label: String,
    pub port: u16,
    pub resources: Vec<String>,
    pub expected_gbps: Option<f64>,
    pub isl: Vec<String>,
    pub commands: Option<JobCommands>,
    pub error: Option<String>,
}

fn job_view<'a>(
    plan: &Plan,
    renderer: &Renderer,
    style: &dyn LaunchStyle,
    res: &Resolution,
    job: &'a Job,
    expected: Option<f64>,
) -> JobView<'a> {
    let (commands, error) = match kinds::commands(plan, renderer, style, res, job) {
        Ok(c) => (Some(c), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let isl = job
        .pair
        .as_ref()
        .map(|p| {
            p.path
                .isl_hops()
                .map(|(isl, from)| {
                    let i = &plan.isls[isl.0];
                    let to = if i.a == from { i.b } else { i.a };
                    format!(
                        "{} -> {}",
                        plan.switches[from.0].name, plan.switches[to.0].name
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    JobView {
        id: &job.id,
        kind: job.kind.name(),
        label: job.label(plan),
        port: job.port,
        resources: job
            .resources
            .iter()
            .map(|e| plan.endpoint_name(e))
            .collect(),
        expected_gbps: expected.map(|e| (e * 10.0).round() / 10.0),
        isl,
        commands,
        error,
    }
}

/// Write the dry run as text.
pub fn write_text(
    w: &mut dyn Write,
    plan: &Plan,
    fabric: &Fabric,
    schedule: &Schedule,
    style: &dyn LaunchStyle,
) -> io::Result<()> {
    write_text_with(w, plan, fabric, schedule, style, &[])
}

/// Write the dry run as text, with what the launcher does to open the run (`opening`: lines,
/// e.g. the Slurm allocation) before the preflight.
pub fn write_text_with(
    w: &mut dyn Write,
    plan: &Plan,
    fabric: &Fabric,
    schedule: &Schedule,
    style: &dyn LaunchStyle,
    opening: &[String],
) -> io::Result<()> {
    let renderer = kinds::renderer(plan);
    let res = Resolution::from_plan(plan);
    writeln!(
        w,
        "plan `{}`: {} nodes, {} switches, {} links, {} rounds",
        plan.name,
        plan.nodes.len(),
        plan.switches.len(),
        plan.segments.len(),
        schedule.len()
    )?;
    writeln!(w)?;
    writeln!(w, "links")?;
    for s in &plan.segments {
        let ends: Vec<String> = s
            .members
            .iter()
            .map(|m| {
                let sw = m
                    .switch
                    .map(|x| format!(" via {}", plan.switches[x.0].name))
                    .unwrap_or_default();
                format!("{} {}{}", plan.endpoint_name(&m.endpoint), m.address, sw)
            })
            .collect();
        writeln!(
            w,
            "  {:<14} {:<18} {}",
            s.name,
            s.subnet.to_string(),
            ends.join("  <->  ")
        )?;
    }
    for i in &plan.isls {
        writeln!(
            w,
            "  {:<14} {:<18} {} <-> {}, {} Gb/s per direction",
            i.name, "ISL", plan.switches[i.a.0].name, plan.switches[i.b.0].name, i.capacity_gbps
        )?;
    }
    if !opening.is_empty() {
        writeln!(w)?;
        for l in opening {
            writeln!(w, "{l}")?;
        }
    }
    write_coverage(w, &schedule.coverage(plan, fabric))?;
    if plan.tests.preflight {
        writeln!(w)?;
        writeln!(w, "preflight (read-only, before any measurement)")?;
        writeln!(
            w,
            "  discover every node's RDMA devices, GIDs, MTUs and counters (one probe per node, in its {})",
            style.words().session
        )?;
        writeln!(
            w,
            "  per link: small ping and `ping -M do -s 8972` out of the planned netdev; cabling; RoCE v2 GID; MTU 9000 both ends"
        )?;
        if !kinds::nccl_tests(plan).is_empty() {
            writeln!(w, "  per NCCL job: {}", style.words().launch_check)?;
        }
    }
    for round in schedule.rounds(plan, fabric) {
        write_round_text(w, plan, &renderer, style, &res, &round, schedule.len())?;
    }
    Ok(())
}

/// What the sampled rounds cover: ports in each role, node pairs, ISL directions.
fn write_coverage(w: &mut dyn Write, coverage: &[Coverage]) -> io::Result<()> {
    let pct = |a: usize, b: usize| {
        if b == 0 {
            String::new()
        } else {
            format!(" ({:.1}%)", 100.0 * a as f64 / b as f64)
        }
    };
    for c in coverage {
        writeln!(w)?;
        let each = if c.rounds > c.pairings as usize {
            ", each run both ways"
        } else {
            ""
        };
        writeln!(
            w,
            "coverage of {}: {} random pairings (seed {}){each}: {} rounds",
            c.kind, c.pairings, c.seed, c.rounds
        )?;
        writeln!(
            w,
            "  ports (node halves): {} of {} as client, {} of {} as server, {} in both roles",
            c.ports_as_client, c.ports, c.ports_as_server, c.ports, c.ports_both_roles
        )?;
        writeln!(
            w,
            "  node pairs: {} of {}{}",
            c.node_pairs,
            c.node_pairs_total,
            pct(c.node_pairs, c.node_pairs_total)
        )?;
        writeln!(
            w,
            "  ISL directions loaded: {} of {}",
            c.isl_directions, c.isl_directions_total
        )?;
        writeln!(
            w,
            "  then: each half no flow measured where a throttle would show measured again on its own switch, each end of a failing flow re-tested against peers that passed, and the ISLs it crossed, to name the end at fault (log2 of the nodes + 2 rounds at most)"
        )?;
    }
    Ok(())
}

/// Every job's commands, in the order they run: the servers of every job first, then the
/// clients together, then the launchers, each with its host and what it is; a job's error and
/// its launcher's notes under it.
fn write_steps(w: &mut dyn Write, style: &dyn LaunchStyle, views: &[JobView]) -> io::Result<()> {
    for role in [Role::Server, Role::Client, Role::Launcher] {
        for v in views {
            if let Some(c) = &v.commands {
                for s in c.steps.iter().filter(|s| s.role == role) {
                    let words = style.words();
                    let what = match role {
                        Role::Server => words.server,
                        Role::Client => words.client,
                        Role::Launcher => words.collective,
                    };
                    writeln!(w, "    [{}] {} ({}):", s.host, what, v.id)?;
                    writeln!(w, "      {}", s.script)?;
                }
            }
            if let Some(e) = &v.error {
                writeln!(w, "    error: {e}")?;
            }
            if let Some(c) = &v.commands
                && role == Role::Launcher
            {
                for n in &c.notes {
                    writeln!(w, "    note: {n}")?;
                }
            }
        }
    }
    Ok(())
}

/// One round of the dry run in words: its name, the ISL directions its flows share, its jobs
/// and their commands.
#[allow(clippy::too_many_arguments)]
fn write_round_text(
    w: &mut dyn Write,
    plan: &Plan,
    renderer: &Renderer,
    style: &dyn LaunchStyle,
    res: &Resolution,
    round: &Round,
    total: usize,
) -> io::Result<()> {
    writeln!(w)?;
    let conc = if round.jobs.len() > 1 {
        format!(", {} jobs together", round.jobs.len())
    } else {
        String::new()
    };
    writeln!(
        w,
        "round {}/{}  {}{}",
        round.index + 1,
        total,
        round.name,
        conc
    )?;
    for ((isl, from), n) in isl_load(round) {
        let i = &plan.isls[isl.0];
        let to = if i.a == from { i.b } else { i.a };
        writeln!(
            w,
            "  ISL {} -> {}: {} flow(s) share one direction ({} Gb/s)",
            plan.switches[from.0].name, plan.switches[to.0].name, n, i.capacity_gbps
        )?;
    }
    let expected = kinds::expected(plan, round);
    let views: Vec<JobView> = round
        .jobs
        .iter()
        .zip(&expected)
        .map(|(j, e)| job_view(plan, renderer, style, res, j, *e))
        .collect();
    for v in &views {
        let exp = v
            .expected_gbps
            .map(|e| format!("  expected {e:.1} Gb/s"))
            .unwrap_or_default();
        let isl = if v.isl.is_empty() {
            String::new()
        } else {
            format!("  over ISL {}", v.isl.join(", "))
        };
        writeln!(
            w,
            "  job {}  {}  port {}{}{}",
            v.id, v.label, v.port, exp, isl
        )?;
    }
    write_steps(w, style, &views)?;
    let unresolved: Vec<String> = {
        let mut u: Vec<String> = views
            .iter()
            .filter_map(|v| v.commands.as_ref())
            .flat_map(|c| c.unresolved.clone())
            .collect();
        u.sort();
        u.dedup();
        u
    };
    if !unresolved.is_empty() {
        writeln!(w, "    discovered at run time: {}", unresolved.join(" "))?;
    }
    Ok(())
}

/// Write the dry run as one JSON document, streamed round by round:
/// `{ "format_version": 1, "plan": NAME, "round_count": N, "coverage": [Coverage],
/// "rounds": [ { "index", "name", "kind", "jobs": [JobView] } ] }` (`coverage`: one entry per
/// sampled test).
pub fn write_json(
    w: &mut dyn Write,
    plan: &Plan,
    fabric: &Fabric,
    schedule: &Schedule,
    style: &dyn LaunchStyle,
) -> io::Result<()> {
    write_json_with(w, plan, fabric, schedule, style, &[])
}

/// [`write_json`], with what the launcher does to open the run: when `opening` has lines, the
/// document also holds `"launcher": { "kind": NAME, "opening": [LINE] }` after `plan`.
pub fn write_json_with(
    w: &mut dyn Write,
    plan: &Plan,
    fabric: &Fabric,
    schedule: &Schedule,
    style: &dyn LaunchStyle,
    opening: &[String],
) -> io::Result<()> {
    let renderer = kinds::renderer(plan);
    let res = Resolution::from_plan(plan);
    let launcher = if opening.is_empty() {
        String::new()
    } else {
        format!(
            ",\"launcher\":{}",
            serde_json::json!({ "kind": style.name(), "opening": opening })
        )
    };
    write!(
        w,
        "{{\"format_version\":{PLAN_JSON_VERSION},\"plan\":{}{launcher},\"round_count\":{},\"coverage\":{},\"rounds\":[",
        serde_json::to_string(&plan.name).unwrap_or_default(),
        schedule.len(),
        serde_json::to_string(&schedule.coverage(plan, fabric)).unwrap_or_else(|_| "[]".into())
    )?;
    // serde_json's many small writes go to a buffer of known type, not through the
    // `dyn Write`; it holds 64 KiB, never a whole round (an NCCL job can be huge)
    let mut buf = io::BufWriter::with_capacity(1 << 16, &mut *w);
    for (i, round) in schedule.rounds(plan, fabric).enumerate() {
        if i > 0 {
            buf.write_all(b",")?;
        }
        let expected = kinds::expected(plan, &round);
        let jobs: Vec<JobView> = round
            .jobs
            .iter()
            .zip(&expected)
            .map(|(j, e)| job_view(plan, &renderer, style, &res, j, *e))
            .collect();
        #[derive(Serialize)]
        struct RoundView<'a> {
            index: usize,
            name: &'a str,
            kind: &'static str,
            jobs: Vec<JobView<'a>>,
        }
        serde_json::to_writer(
            &mut buf,
            &RoundView {
                index: round.index,
                name: &round.name,
                kind: round.kind.name(),
                jobs,
            },
        )?;
    }
    buf.write_all(b"]}\n")?;
    buf.flush()
}
