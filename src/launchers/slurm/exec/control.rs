//! Slurm's node states read and changed from this machine (`sinfo`, `scontrol update`): what
//! `run --drain` and `--resume-passed` ask, whichever launcher ran the nodes. Each client runs
//! to its end within [`CLIENT`](super::launcher::CLIENT), with `SLURM_CONF` set.

use std::path::PathBuf;

use super::launcher::CLIENT;
use super::step;
use crate::launchers::slurm::parse::{self as said, NodeState};

/// Slurm's clients, for node states.
pub struct SlurmControl {
    env: Vec<(String, String)>,
}

impl SlurmControl {
    /// Clients given `slurm_conf` (see [`super::slurm_conf`]).
    pub fn new(slurm_conf: PathBuf) -> SlurmControl {
        SlurmControl {
            env: vec![("SLURM_CONF".to_string(), slurm_conf.display().to_string())],
        }
    }

    /// Run `argv` to its end: its stdout, or what it said when it failed.
    pub async fn run(&self, argv: &[String]) -> Result<String, String> {
        let mut p = step::spawn(argv, &self.env)?;
        let Some(f) = p.finished_within(CLIENT).await else {
            p.kill();
            return Err(format!(
                "`{}` did not answer within {} s",
                argv.join(" "),
                CLIENT.as_secs()
            ));
        };
        if f.status == 0 {
            return Ok(f.stdout.clone());
        }
        let said = said::failure(&f.stderr)
            .map(|x| x.message)
            .unwrap_or_else(|| f.stderr.trim().to_string());
        Err(format!("`{}` exited {}: {said}", argv[0], f.status))
    }

    /// The states and reasons of `names` (`sinfo -h -N -n LIST -o '%N|%T|%E'`).
    pub async fn states(&self, names: &[&str]) -> Result<Vec<NodeState>, String> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let argv: Vec<String> = [
            "sinfo",
            "-h",
            "-N",
            "-n",
            &names.join(","),
            "-o",
            "%N|%T|%E",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        Ok(said::node_states(&self.run(&argv).await?))
    }
}
