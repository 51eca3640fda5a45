//! `nccl`: an nccl-tests binary over its ranks with mpirun, NCCL pinned to the native path
//! (every rank's own device names, the discovered GID index); judged on the transport NCCL
//! reports (NET/IB, never the silent NET/Socket fallback), correctness at every size, the
//! small-message time, bus bandwidth, whether the fabric's counters moved, and GDR. Its launch
//! check (mpirun starting `hostname` on every rank) runs in preflight.

pub mod capacity;
mod render;
pub mod section;
mod view;

use schemars::{Schema, SchemaGenerator};
use toml::de::ValueDeserializer;

use super::{Family, Sample, Sweep, TestKind, mismatch};
use crate::gate::classify::{self, Context};
use crate::gate::judge::{Outcome, Verdict};
use crate::gate::part::{Part, Software};
use crate::gate::threshold::{Metric, MetricSpec, Threshold, Unit};
use crate::gate::trap::Trap;
use crate::parse::{Parsed, Tool};
use crate::plan::section::SectionData;
use crate::plan::{NodeId, Plan, SectionKind, SectionReader};
use crate::render::job::{JobCommands, Resolution, Step};
use crate::render::launch::LaunchStyle;
use crate::render::{RenderError, Renderer, Template};
use crate::results::{JobResult, RunResults};
use crate::schedule::{Job, KindId, Ranks, Stage};
use crate::tools::nccl_tests::parse::NcclReport;
use section::NcclTest;

pub const ID: KindId = KindId("nccl");

pub struct Nccl;

/// The plan's NCCL tests, in order (a job's `ranks.test` indexes them).
pub fn tests(plan: &Plan) -> Vec<&NcclTest> {
    plan.sections::<NcclTest>(ID.name())
}

const TEMPLATES: &[Template] = &[
    Template {
        name: "nccl",
        source: include_str!("templates/nccl.j2"),
        variables: &[
            "apps",
            "subnets",
            "binary",
            "min_bytes",
            "max_bytes",
            "step_factor",
            "warmup",
            "iterations",
            "collective",
            "hosts",
            "env",
        ],
    },
    Template {
        name: "mpi-hostname",
        source: include_str!("templates/mpi-hostname.j2"),
        variables: &["hosts", "subnets"],
    },
];

/// NCCL in-place time at 16 KiB, us, against the model's time for the ranks and the fabric:
/// twice it passes (60 us of ~30 on two GB10 boxes), 6.7 times it warns (200 us there).
pub static SMALL_TIME: MetricSpec = MetricSpec {
    metric: Metric::new("nccl-small-time"),
    unit: Unit::Us,
    about: "NCCL in-place time at 16 KiB, us",
    pass: Some(Threshold::PctOfExpected { pct: 200.0 }),
    warn: Some(Threshold::PctOfExpected { pct: 670.0 }),
    trap: Trap::SlowCollective,
    per_flow: false,
    ceiling: None,
};

/// NCCL bus bandwidth at the largest sizes, GB/s, against the model (23.75 GB/s all_gather on a
/// GB10 pair): MTU 1500 on the path (18.9) warns, the TCP fallback (1-3) fails.
pub static BUSBW: MetricSpec = MetricSpec {
    metric: Metric::new("nccl-busbw"),
    unit: Unit::GBps,
    about: "NCCL average bus bandwidth, GB/s",
    pass: Some(Threshold::PctOfExpected { pct: 80.0 }),
    warn: Some(Threshold::PctOfExpected { pct: 40.0 }),
    trap: Trap::SlowBusBandwidth,
    per_flow: false,
    ceiling: Some(crate::gate::threshold::Ceiling::PortBytes),
};

impl SectionKind for Nccl {
    fn key(&self) -> &'static str {
        ID.name()
    }

    fn describe(&self) -> &'static str {
        "NCCL collectives (nccl-tests through mpirun), one table per test."
    }

    fn repeated(&self) -> bool {
        true
    }

    fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<section::RawNcclTest>()
    }

    fn read(&self, table: ValueDeserializer<'_>, r: &mut dyn SectionReader) -> Option<SectionData> {
        section::read(table, r)
    }
}

/// The launch check of one NCCL test: mpirun on the launching host starts `hostname` on every
/// rank over the fabric subnets (under Slurm: one `srun --mpi=...` step over the ranks).
#[derive(Debug, Clone)]
pub struct LaunchCheck {
    /// Index of the test among the plan's NCCL tests ([`tests`]).
    pub test: usize,
    pub step: Step,
    /// Ranks expected to answer.
    pub ranks: usize,
    /// What starts the ranks (`mpirun`, `srun`): the gate's first word.
    pub starter: &'static str,
}

/// The launch check of NCCL test `test`.
pub fn launch_check(
    plan: &Plan,
    renderer: &Renderer,
    style: &dyn LaunchStyle,
    test: usize,
) -> Result<LaunchCheck, RenderError> {
    let (step, ranks) = render::mpi_hostname(plan, renderer, style, test)?;
    let starter = style.words().starter;
    Ok(LaunchCheck {
        test,
        step,
        ranks,
        starter,
    })
}

/// What the launch check's command answered.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    pub status: i32,
    pub stdout: &'a str,
    pub stderr: &'a str,
}

/// The launch check's verdict. `answer` is what the command answered, or why it could not run
/// (with the launcher's trap when it named one). `earlier` is a preflight failure on the
/// check's path (a port or an ISL between its ranks): a launch that fails after it follows from
/// it and says so, with its trap (mpirun's TCP traffic over an MTU 1500 hop hangs, it is not an
/// SSH problem).
pub fn judge_launch(
    plan: &Plan,
    check: &LaunchCheck,
    answer: Result<Answer<'_>, LaunchFailed>,
    earlier: Option<&Verdict>,
) -> Verdict {
    let Some(t) = tests(plan).get(check.test).copied() else {
        return Verdict::check(
            "mpirun launch",
            Outcome::Fail,
            "no such NCCL test",
            Some(Trap::ToolError),
        );
    };
    let gate = format!("{} launch {}", check.starter, t.name);
    // the node the launcher's or mpirun's own words name, when one of the test's: the first
    // rank (where the launch was started from) is no evidence by itself
    let named: Option<NodeId>;
    // what the launcher or the ranks said, whole (a verdict keeps its first lines)
    let said: String;
    let v = match answer {
        Err(f) => {
            named = f.host.as_deref().and_then(|h| rank_named(plan, t, h));
            said = f.why.clone();
            Verdict::check(
                &gate,
                Outcome::Fail,
                f.why,
                Some(f.trap.unwrap_or(Trap::MpiLaunch)),
            )
        }
        Ok(a) => {
            let (v, at) = judge_answer(check, &gate, &a);
            named = at.and_then(|h| rank_named(plan, t, &h));
            said = format!("{}{}", a.stdout, a.stderr);
            v
        }
    };
    let parts = match named.filter(|_| v.outcome == Outcome::Fail) {
        Some(node) => named_parts(plan, node, &v, &said, earlier),
        None => launch_parts(plan, t, &v, earlier.filter(|_| v.outcome == Outcome::Fail)),
    };
    match earlier {
        Some(e) if v.outcome == Outcome::Fail => {
            let mut f = Verdict::check(
                &gate,
                Outcome::Fail,
                format!("follows from `{}` failing: {}", e.gate, v.detail),
                e.trap,
            );
            f.trap_name = e.trap_name.clone();
            f.fix = e.fix.clone();
            f.following(e.gate.clone()).about(parts)
        }
        _ => v.about(parts),
    }
}

impl TestKind for Nccl {
    fn id(&self) -> KindId {
        ID
    }

    /// all_reduce across each group of nodes the fabric joins.
    fn starter(&self, shape: &super::Drafted) -> Option<String> {
        let tables: Vec<String> = shape
            .groups
            .iter()
            .filter(|g| g.len() >= 2)
            .map(|g| {
                let nodes: Vec<String> = g.iter().map(|n| format!("\"{n}\"")).collect();
                format!(
                    "# NCCL all_reduce across the {} nodes this fabric joins (NET/IB expected, never sockets)\n[[tests.{}]]\ncollective = \"all_reduce\"\nnodes = [{}]\n",
                    g.len(),
                    ID.name(),
                    nodes.join(", ")
                )
            })
            .collect();
        (!tables.is_empty()).then(|| tables.join("\n"))
    }

    fn tool(&self) -> Tool {
        Tool::NCCL_TESTS
    }

    fn metric(&self) -> &'static MetricSpec {
        &SMALL_TIME
    }

    fn metrics(&self) -> Vec<&'static MetricSpec> {
        vec![&SMALL_TIME, &BUSBW]
    }

    fn templates(&self) -> &'static [Template] {
        TEMPLATES
    }

    /// Both are mpirun lines: under Slurm its ranks are one `srun --mpi=...` job step.
    fn ssh_only_templates(&self) -> Vec<&'static str> {
        TEMPLATES.iter().map(|t| t.name).collect()
    }

    /// One round of one job per test (its stages list every rank's halves: not built here).
    fn size(&self, plan: &Plan) -> (usize, usize) {
        let n = tests(plan).len();
        (n, n)
    }

    fn stages(&self, plan: &Plan) -> Vec<Stage> {
        tests(plan)
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                let mut is_rank = vec![false; plan.nodes.len()];
                for n in &t.nodes {
                    if let Some(x) = is_rank.get_mut(n.0) {
                        *x = true;
                    }
                }
                let ranked = |n: NodeId| is_rank.get(n.0).copied().unwrap_or(false);
                let resources = plan
                    .segments
                    .iter()
                    .filter(|s| t.halves.is_empty() || t.halves.contains(&s.half))
                    .flat_map(|s| s.members.iter())
                    .filter(|m| ranked(m.endpoint.node))
                    .map(|m| m.endpoint.clone())
                    .collect();
                Stage::Ranks {
                    kind: ID,
                    round_name: format!("nccl {}", t.name),
                    job: Ranks {
                        test: i,
                        name: t.name.clone(),
                        label: format!(
                            "{} ({}, {} ranks)",
                            t.name,
                            t.collective.binary(),
                            t.nodes.len()
                        ),
                        nodes: t.nodes.clone(),
                    },
                    resources,
                }
            })
            .collect()
    }

    fn commands(
        &self,
        plan: &Plan,
        renderer: &Renderer,
        style: &dyn LaunchStyle,
        res: &Resolution,
        job: &Job,
    ) -> Result<JobCommands, RenderError> {
        let Some(test) = job.ranks.as_ref().map(|r| r.test) else {
            return Err(RenderError {
                name: job.id.clone(),
                message: "an NCCL job without ranks".into(),
            });
        };
        if test >= tests(plan).len() {
            return Err(RenderError {
                name: job.id.clone(),
                message: format!("no NCCL test {test} in the plan"),
            });
        }
        render::nccl_commands(plan, renderer, style, res, job, test)
    }

    fn judge(&self, plan: &Plan, job: &Job, parsed: &Parsed, ctx: &Context) -> Vec<Verdict> {
        match parsed.get::<NcclReport>() {
            Some(r) => {
                let Some(t) = job
                    .ranks
                    .as_ref()
                    .and_then(|k| tests(plan).get(k.test).copied())
                else {
                    return mismatch(ctx, parsed);
                };
                let e = capacity::expected(plan, &crate::topology::Fabric::build(plan), t);
                let busbw = |bytes: u64| e.busbw_gbs(bytes);
                let model = classify::NcclExpectation {
                    small_time_us: Some(e.time_us(16384)),
                    busbw_gbs: &busbw,
                    unified_memory: t.nodes.iter().all(|n| plan.profile_of(*n).unified_memory),
                };
                classify::nccl(&plan.gate(&SMALL_TIME), &plan.gate(&BUSBW), r, ctx, &model)
            }
            None => mismatch(ctx, parsed),
        }
    }

    fn families(&self) -> Vec<&'static Family> {
        vec![&view::AVERAGE, &view::SMALL, &view::PER_SIZE]
    }

    fn samples(&self, r: &RunResults, job: &JobResult) -> Vec<Sample> {
        view::samples(r, job)
    }

    fn sweep(&self, job: &JobResult) -> Option<Sweep> {
        Some(view::sweep(job))
    }

    /// Rows were read, and none rejected: an output with a value no run prints is no reading.
    fn measured(&self, parsed: &Parsed) -> bool {
        parsed
            .get::<NcclReport>()
            .is_some_and(|r| !r.rows.is_empty() && r.rejected.is_empty())
    }

    /// A fallback to sockets is the NCCL of the ranks whose own lines show it (`NET/IB : No
    /// device found` on that host), not of every rank. A launch that failed is about the node
    /// mpirun's own words name, when they name one of the ranks (never the first rank for being
    /// first).
    fn parts(&self, plan: &Plan, job: &Job, verdict: &Verdict, parsed: &Parsed) -> Vec<Part> {
        if let (
            Some(Trap::MpiLaunch | Trap::Docker0Subnet | Trap::Unreachable),
            Some(r),
            Some(test),
        ) = (
            verdict.trap,
            parsed.get::<NcclReport>(),
            job.ranks
                .as_ref()
                .and_then(|r| tests(plan).get(r.test).copied()),
        ) && let Some(node) = r
            .mpirun_host
            .as_deref()
            .and_then(|h| rank_named(plan, test, h))
        {
            let said: Vec<&str> = r
                .error
                .iter()
                .chain(&r.mpirun_errors)
                .map(|e| e.message.as_str())
                .collect();
            return named_parts(plan, node, verdict, &said.join("\n"), None);
        }
        if let (Some(Trap::TcpFallback), Some(r)) = (verdict.trap, parsed.get::<NcclReport>())
            && !r.fallback_hosts.is_empty()
        {
            let named: Vec<Part> = r
                .fallback_hosts
                .iter()
                .filter_map(|h| {
                    plan.nodes
                        .iter()
                        .find(|n| &n.name == h || h.starts_with(&format!("{}.", n.name)))
                })
                .map(|n| Part::software(&n.name, Software::Nccl))
                .collect();
            if !named.is_empty() {
                return named;
            }
        }
        super::parts::job_parts(plan, job, verdict)
    }
}

/// What an answered launch check says: its verdict, and the node mpirun's own words name.
fn judge_answer(check: &LaunchCheck, gate: &str, a: &Answer<'_>) -> (Verdict, Option<String>) {
    let n = check.ranks;
    let text = format!("{}{}", a.stdout, a.stderr);
    let lines = a.stdout.lines().filter(|l| !l.trim().is_empty()).count();
    let parsed = crate::parse::parse(Tool::MPIRUN, &text);
    let named = parsed
        .get::<crate::parse::mpirun::MpirunReport>()
        .and_then(|r| r.host.clone());
    let v = match parsed.error() {
        Some(e) => {
            let trap = match classify::trap_of_error(e.kind) {
                Trap::ToolError => Trap::MpiLaunch,
                t => t,
            };
            let words: Vec<&str> = e
                .message
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '-'))
                .take(4)
                .collect();
            Verdict::check(
                gate,
                Outcome::Fail,
                format!("{}: {}", e.kind.as_str(), words.join(" ")),
                Some(trap),
            )
        }
        None if a.status == 0 && lines >= n => Verdict::check(
            gate,
            Outcome::Ok,
            format!(
                "{} started `hostname` on {n} rank(s): {}",
                check.step.host,
                a.stdout.split_whitespace().collect::<Vec<_>>().join(", ")
            ),
            None,
        ),
        None if a.status == 124 || a.status == 137 => Verdict::check(
            gate,
            Outcome::Fail,
            format!(
                "no answer within {} s: killed by the timeout on {}",
                check.step.timeout_s, check.step.host
            ),
            Some(Trap::MpiLaunch),
        ),
        None => Verdict::check(
            gate,
            Outcome::Fail,
            format!(
                "{} exit {}, {lines} of {n} ranks answered: {}",
                check.starter,
                a.status,
                text.lines().last().unwrap_or("").trim()
            ),
            Some(Trap::MpiLaunch),
        ),
    };
    (v, named)
}

/// Why a launch check could not run, as the launcher said it: in words, its trap when it named
/// one, and the node its own words named (Slurm's `failed on node spark-2`).
#[derive(Debug, Clone)]
pub struct LaunchFailed {
    pub why: String,
    pub trap: Option<Trap>,
    pub host: Option<String>,
}

/// The rank of `t` a launcher or mpirun names by `host`: its plan name, its host name's first
/// label (`spark-b.lab`), or one of its fabric addresses (`ssh: connect to host 198.51.100.2`).
pub fn rank_named(plan: &Plan, t: &NcclTest, host: &str) -> Option<NodeId> {
    let host = host.trim_end_matches(['.', ',', ':']);
    let addr: Option<std::net::Ipv4Addr> = host.parse().ok();
    t.nodes.iter().copied().find(|n| {
        let name = &plan.node(*n).name;
        name == host
            || host.split('.').next() == Some(name.as_str()) && addr.is_none()
            || addr.is_some_and(|a| {
                plan.segments
                    .iter()
                    .flat_map(|s| &s.members)
                    .any(|m| m.endpoint.node == *n && m.address == a)
            })
    })
}

/// What a launch check that names its node is about: that node's reach (for the launcher's
/// traps) or its MPI, and what an earlier failure on its path named.
fn named_parts(
    plan: &Plan,
    node: NodeId,
    v: &Verdict,
    said: &str,
    earlier: Option<&Verdict>,
) -> Vec<Part> {
    let name = &plan.node(node).name;
    // ssh itself said it could not log in there (`said`: the launcher's or mpirun's words):
    // that node's sshd, not its Open MPI
    let refused = [
        "ssh: connect to host",
        "Connection refused",
        "Connection closed by",
        "kex_exchange_identification",
    ]
    .iter()
    .any(|w| said.contains(w));
    let own = match v.trap {
        Some(
            trap @ (Trap::Unreachable
            | Trap::SlurmNodeUnavailable
            | Trap::SlurmStepLaunch
            | Trap::SlurmAllocationRefused),
        ) => Part::reach_of(name, trap),
        _ if refused => Part::software(name, Software::Sshd),
        _ => Part::software(name, Software::Mpi),
    };
    let mut parts = vec![own];
    for p in earlier.map(|e| e.implicates.clone()).unwrap_or_default() {
        if !parts.contains(&p) {
            parts.push(p);
        }
    }
    parts
}

/// What a launch check is about: each rank's MPI (the launching host's first) or its reach, and
/// what an earlier failure on its path named.
fn launch_parts(plan: &Plan, t: &NcclTest, v: &Verdict, earlier: Option<&Verdict>) -> Vec<Part> {
    let mut parts: Vec<Part> = earlier.map(|e| e.implicates.clone()).unwrap_or_default();
    for n in &t.nodes {
        let name = &plan.node(*n).name;
        let p = match v.trap {
            Some(
                trap @ (Trap::Unreachable
                | Trap::SlurmNodeUnavailable
                | Trap::SlurmStepLaunch
                | Trap::SlurmAllocationRefused),
            ) => Part::reach_of(name, trap),
            _ if v.outcome == Outcome::Ok => {
                parts.push(Part::reach_of(name, Trap::Unreachable));
                Part::software(name, Software::Mpi)
            }
            _ => Part::software(name, Software::Mpi),
        };
        if !parts.contains(&p) {
            parts.push(p);
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launchers::slurm::plan::SlurmMpi;
    use crate::launchers::slurm::render::SlurmStyle;
    use crate::launchers::ssh::render::SshStyle;

    fn ring3() -> Plan {
        let text = include_str!("../../../plans/ring3.toml");
        crate::kinds::load_str(
            std::path::Path::new("ring3.toml"),
            text,
            std::path::Path::new("."),
        )
        .expect("ring3 loads")
        .plan
    }

    fn slurmd(n: &str) -> Part {
        Part::software(n, Software::Slurmd)
    }

    /// The launch check under Slurm fails on the node Slurm names, not on the first rank
    /// where the step was started from.
    #[test]
    fn a_launch_is_about_the_node_the_launchers_words_name() {
        let plan = ring3();
        let r = crate::kinds::renderer(&plan);
        let check = launch_check(&plan, &r, &SlurmStyle::new(Some(3), SlurmMpi::Pmix), 0).unwrap();
        let failed = LaunchFailed {
            why: "spark-2: the step did not run: Task launch for StepId=3.4 failed on node spark-2: Communication connection failure".into(),
            trap: Some(Trap::SlurmStepLaunch),
            host: Some("spark-2".into()),
        };
        let v = judge_launch(&plan, &check, Err(failed.clone()), None);
        assert_eq!(v.outcome, Outcome::Fail);
        assert_eq!(v.implicates, vec![slurmd("spark-2")]);
        // a launcher that named no rank: every rank's reach, the first no more than the others
        let unnamed = LaunchFailed {
            host: None,
            ..failed
        };
        let v = judge_launch(&plan, &check, Err(unnamed), None);
        assert_eq!(
            v.implicates,
            vec![slurmd("spark-1"), slurmd("spark-2"), slurmd("spark-3")]
        );
    }

    /// mpirun's own box names the rank it could not start, by name or by its fabric address.
    #[test]
    fn an_mpirun_box_naming_a_rank_is_about_that_rank() {
        let plan = ring3();
        let r = crate::kinds::renderer(&plan);
        let check = launch_check(&plan, &r, &SshStyle, 0).unwrap();
        let third = plan.node_by_name("spark-3").unwrap().id;
        let addr = plan
            .segments
            .iter()
            .flat_map(|s| &s.members)
            .find(|m| m.endpoint.node == third)
            .unwrap()
            .address;
        let stderr = format!(
            "ssh: connect to host {addr} port 22: Connection refused\r\n\
             --------------------------------------------------------------------------\n\
             ORTE was unable to reliably start one or more daemons.\n\
             This usually is caused by:\n\n\
             * not finding the required libraries and/or binaries on\n  one or more nodes.\n\
             --------------------------------------------------------------------------\n"
        );
        let v = judge_launch(
            &plan,
            &check,
            Ok(Answer {
                status: 1,
                stdout: "",
                stderr: &stderr,
            }),
            None,
        );
        assert_eq!(v.outcome, Outcome::Fail, "{v:?}");
        assert_eq!(v.implicates.len(), 1, "{:?}", v.implicates);
        assert_eq!(
            v.implicates[0].node_name(),
            Some("spark-3"),
            "{:?}",
            v.implicates
        );
        assert_eq!(
            rank_named(&plan, tests(&plan)[0], "spark-3.lab"),
            Some(third)
        );
        assert_eq!(rank_named(&plan, tests(&plan)[0], "spark-9"), None);
    }
}
