//! Scale benchmarks on generated switched all-pairs plans of 64, 128 and 224 nodes (see
//! `support/plangen.rs`; nothing large is committed). All-pairs on more nodes runs more than
//! `fabricplan::plan::validate::MAX_JOBS` jobs and is refused at validation: the report mode
//! times that refusal for any size.
//!
//! `cargo bench --bench scale` runs the divan benchmarks (each a few seconds at most).
//! `FABRICPLAN_SCALE_REPORT=64,512,4096 cargo bench --bench scale` instead times each phase
//! once per size, with the process's peak RSS after each (`VmHWM`), and checks the round
//! counts: what `scripts/bench-scale.sh` and `BENCHMARKS.md` report.

#[path = "support/plangen.rs"]
mod plangen;

use std::collections::HashSet;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use divan::Bencher;
use fabricplan::capacity;
use fabricplan::plan::{self, Plan};
use fabricplan::render::job::Resolution;
use fabricplan::report::plan_view;
use fabricplan::schedule::{KindId, Schedule, round_count};
use fabricplan::topology::Fabric;

/// Nodes of the generated plans.
const SIZES: [usize; 3] = [64, 128, 224];
/// Switches of the generated plans (a chain joined by ISLs).
const SWITCHES: usize = 2;

fn main() {
    if let Ok(sizes) = std::env::var("FABRICPLAN_SCALE_REPORT") {
        let sizes: Vec<usize> = sizes
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        report(&sizes);
        return;
    }
    divan::main();
}

fn load(text: &str) -> Plan {
    match fabricplan::kinds::load_str(Path::new("gen.toml"), text, Path::new(".")) {
        Ok(l) => l.plan,
        Err(e) => panic!("generated plan does not load: {e}"),
    }
}

/// Rounds of the all-pairs stage: exactly n-1 for even n, n for odd n, each way (one NCCL round
/// follows).
fn check_rounds(n: usize, schedule: &Schedule) {
    assert_eq!(round_count(n), if n % 2 == 0 { n - 1 } else { n });
    assert_eq!(schedule.len(), 2 * round_count(n) + 1, "{n} nodes");
}

#[divan::bench(args = SIZES, sample_count = 5)]
fn load_validate(b: Bencher, n: usize) {
    let text = plangen::switched_plan(n, SWITCHES);
    b.bench(|| load(black_box(&text)));
}

#[divan::bench(args = SIZES, sample_count = 5)]
fn load_validate_expand(b: Bencher, n: usize) {
    let text = plangen::switched_plan(n, SWITCHES);
    b.bench(|| {
        let plan = load(black_box(&text));
        let fabric = Fabric::build(&plan);
        let schedule = fabricplan::kinds::schedule(&plan);
        check_rounds(n, &schedule);
        (plan, fabric, schedule)
    });
}

/// Load an invalid plan repeating one cable `n` times and render its diagnostics: a handful of
/// problems, whatever `n` (see BENCHMARKS.md, "Validating big plans").
#[divan::bench(args = [200, 2000], sample_count = 5)]
fn load_validate_render_repeated_cables(b: Bencher, n: usize) {
    let text = plangen::repeated_cables(n);
    b.bench(|| {
        match fabricplan::kinds::load_str(
            Path::new("repeated.toml"),
            black_box(&text),
            Path::new("."),
        ) {
            Err(plan::LoadError::Invalid(d)) => d.render(false, 100).len(),
            _ => panic!("repeated cables must be invalid"),
        }
    });
}

/// Build every round lazily and touch every job.
#[divan::bench(args = [64, 224], sample_count = 3)]
fn expand_iterate_all_rounds(b: Bencher, n: usize) {
    let plan = load(&plangen::switched_plan(n, SWITCHES));
    let fabric = Fabric::build(&plan);
    b.bench(|| {
        let schedule = fabricplan::kinds::schedule(&plan);
        let mut jobs = 0usize;
        for round in schedule.rounds(&plan, &fabric) {
            for j in &round.jobs {
                jobs += black_box(j).resources.len() / 2;
            }
        }
        jobs
    });
}

/// One round of the all-pairs stage: build it (n/2 jobs with paths).
#[divan::bench(args = SIZES, sample_count = 5)]
fn one_round(b: Bencher, n: usize) {
    let plan = load(&plangen::switched_plan(n, SWITCHES));
    let fabric = Fabric::build(&plan);
    let schedule = fabricplan::kinds::schedule(&plan);
    b.bench(|| schedule.round(&plan, &fabric, black_box(n / 3)));
}

/// The capacity model on one all-pairs round (half the flows cross the ISL).
#[divan::bench(args = SIZES, sample_count = 5)]
fn capacity_one_round(b: Bencher, n: usize) {
    let plan = load(&plangen::switched_plan(n, SWITCHES));
    let fabric = Fabric::build(&plan);
    let schedule = fabricplan::kinds::schedule(&plan);
    let round = schedule.round(&plan, &fabric, n / 3).expect("round");
    b.bench(|| capacity::expected(&plan, black_box(&round)));
}

/// Render every job's commands of one all-pairs round.
#[divan::bench(args = SIZES, sample_count = 5)]
fn render_one_round(b: Bencher, n: usize) {
    let plan = load(&plangen::switched_plan(n, SWITCHES));
    let fabric = Fabric::build(&plan);
    let schedule = fabricplan::kinds::schedule(&plan);
    let round = schedule.round(&plan, &fabric, n / 3).expect("round");
    let renderer = fabricplan::kinds::renderer(&plan);
    let res = Resolution::from_plan(&plan);
    b.bench(|| {
        round
            .jobs
            .iter()
            .map(|j| {
                fabricplan::kinds::commands(
                    &plan,
                    &renderer,
                    &fabricplan::launchers::ssh::render::SshStyle,
                    &res,
                    j,
                )
                .is_ok()
            })
            .filter(|ok| *ok)
            .count()
    });
}

/// `plan --format json` into a sink (4096 nodes: see `scripts/bench-scale.sh`).
#[divan::bench(args = [64, 128], sample_count = 3)]
fn plan_json(b: Bencher, n: usize) {
    let plan = load(&plangen::switched_plan(n, SWITCHES));
    let fabric = Fabric::build(&plan);
    let schedule = fabricplan::kinds::schedule(&plan);
    b.bench(|| {
        plan_view::write_json(
            &mut std::io::sink(),
            &plan,
            &fabric,
            &schedule,
            &fabricplan::launchers::ssh::render::SshStyle,
        )
        .expect("sink")
    });
}

/// Peak resident set of this process so far, in KiB (Linux `VmHWM`; 0 elsewhere).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Time each phase once per size, in this process: generate, load + validate, fabric, expand,
/// then build every round and touch every job, checking that no node half is in two jobs of a
/// round. Peak RSS is cumulative (the largest size last shows its own peak only if run alone).
fn report(sizes: &[usize]) {
    println!(
        "{:>6} {:>10} {:>10} {:>10} {:>12} {:>14} {:>10} {:>12} {:>12}",
        "nodes",
        "load+val",
        "fabric",
        "expand",
        "=total",
        "iterate all",
        "rounds",
        "jobs",
        "peak RSS"
    );
    for &n in sizes {
        let text = plangen::switched_plan(n, SWITCHES);
        let t0 = Instant::now();
        let plan = match fabricplan::kinds::load_str(Path::new("gen.toml"), &text, Path::new(".")) {
            Ok(l) => l.plan,
            Err(e) => {
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                println!("{n:>6} refused in {ms:.1} ms: {e}");
                continue;
            }
        };
        let t_load = t0.elapsed();
        let t1 = Instant::now();
        let fabric = Fabric::build(&plan);
        let t_fabric = t1.elapsed();
        let t2 = Instant::now();
        let schedule = fabricplan::kinds::schedule(&plan);
        let t_expand = t2.elapsed();
        let total = t0.elapsed();
        check_rounds(n, &schedule);
        let t3 = Instant::now();
        let mut jobs = 0usize;
        let mut rounds = 0usize;
        for round in schedule.rounds(&plan, &fabric) {
            rounds += 1;
            jobs += round.jobs.len();
            if round.kind != KindId("rdma-bw") {
                continue;
            }
            assert_eq!(round.jobs.len(), n / 2, "{n} nodes: jobs of a round");
            let mut busy = HashSet::with_capacity(n);
            for j in &round.jobs {
                for e in &j.resources {
                    assert!(
                        busy.insert((e.node, e.port.as_str(), e.half.as_str())),
                        "{n} nodes: a node half twice in round {}",
                        round.index
                    );
                }
            }
        }
        let t_iter = t3.elapsed();
        println!(
            "{:>6} {:>8.1}ms {:>8.1}ms {:>8.2}ms {:>10.1}ms {:>13.2}s {:>10} {:>12} {:>9} KiB",
            n,
            t_load.as_secs_f64() * 1e3,
            t_fabric.as_secs_f64() * 1e3,
            t_expand.as_secs_f64() * 1e3,
            total.as_secs_f64() * 1e3,
            t_iter.as_secs_f64(),
            rounds,
            jobs,
            peak_rss_kib()
        );
    }
}
