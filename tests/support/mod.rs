//! Helpers shared by the end-to-end tests of compare, history, metrics and the HTML report: the
//! binary, simulated runs into a temporary folder, JSON read back as data.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn fabricplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fabricplan"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env_remove("CI")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run fabricplan")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `fabricplan run PLAN --sim --out DIR EXTRA...` (never without `--sim`: the shipped plans'
/// nodes do not exist); returns the run directory and the process output.
pub fn sim_run(dir: &Path, name: &str, plan: &str, extra: &[&str]) -> (PathBuf, Output) {
    let out = dir.join(name);
    let o = out.to_string_lossy().into_owned();
    let mut args = vec!["run", plan, "--sim", "--out", &o];
    args.extend_from_slice(extra);
    let r = fabricplan(&args);
    (out, r)
}

pub fn json(path: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

pub fn write_json(path: &Path, v: &serde_json::Value) {
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

/// A copy of run directory `from` at `to` (results.json and plan.toml only).
pub fn copy_run(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for f in ["results.json", "plan.toml"] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
}

/// Multiply the measured value of the gate named `gate` in a results document by `factor`.
pub fn scale_gate(results: &mut serde_json::Value, gate: &str, factor: f64) {
    let mut found = false;
    for j in results["jobs"].as_array_mut().unwrap() {
        for v in j["verdicts"].as_array_mut().unwrap() {
            if v["gate"] == gate {
                let m = v["measured"].as_f64().unwrap();
                v["measured"] = serde_json::json!(m * factor);
                found = true;
            }
        }
    }
    assert!(found, "no gate `{gate}`");
}

/// Every shipped plan and example, `plans/` then `examples/`, each sorted, as paths relative to
/// the package root (where tests run).
pub fn shipped_plans() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in ["plans", "examples"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .map(|p| Path::new(dir).join(p.file_name().unwrap()))
            .collect();
        files.sort();
        out.extend(files);
    }
    out
}

/// `plans/NAME.toml` under the package root.
pub fn plan_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("plans")
        .join(format!("{name}.toml"))
}

/// A plan file that must load; otherwise the panic shows its diagnostics as `validate` would.
pub fn load_plan(path: impl AsRef<Path>) -> fabricplan::plan::Plan {
    let path = path.as_ref();
    match fabricplan::kinds::load(path) {
        Ok(l) => l.plan,
        Err(e) => panic!("{} does not load: {}", path.display(), explain(e)),
    }
}

/// Plan text that must load (read as if it were the file `path`, relative paths from `.`).
pub fn load_plan_text(path: impl AsRef<Path>, text: &str) -> fabricplan::plan::Plan {
    let path = path.as_ref();
    match fabricplan::kinds::load_str(path, text, Path::new(".")) {
        Ok(l) => l.plan,
        Err(e) => panic!("{} does not load: {}", path.display(), explain(e)),
    }
}

fn explain(e: fabricplan::plan::LoadError) -> String {
    match e {
        fabricplan::plan::LoadError::Invalid(d) => format!("\n{}", d.render(false, 100)),
        e => e.to_string(),
    }
}

/// `plan` run in process on the simulated fabric with `faults` (`--sim-fault` syntax), to its
/// results.
pub async fn sim_results(
    plan: &fabricplan::plan::Plan,
    faults: &[&str],
) -> fabricplan::results::RunResults {
    sim_results_skipping(plan, faults, &[]).await
}

/// [`sim_results`] with the jobs `skip` names left out (`--skip`).
pub async fn sim_results_skipping(
    plan: &fabricplan::plan::Plan,
    faults: &[&str],
    skip: &[&str],
) -> fabricplan::results::RunResults {
    use fabricplan::exec::runner::{self, RunConfig, RunOptions};
    use std::sync::Arc;
    let faults: Vec<String> = faults.iter().map(|f| f.to_string()).collect();
    let t = Arc::new(fabricplan::sim::SimTransport::new(plan, &faults).expect("faults parse"));
    let opts = RunOptions {
        run_id: "sim-test".into(),
        only: vec![],
        skip: skip.iter().map(|s| s.to_string()).collect(),
        max_parallel: 8,
        keep_evidence: None,
    };
    runner::results(&RunConfig::new(
        Arc::new(plan.clone()),
        Arc::new(fabricplan::launchers::ssh::exec::launcher::SshLauncher::new(t)),
        opts,
        &fabricplan::exec::evidence::Evidence::none(),
    ))
    .await
}
