//! `[ssh]`, `[capacity]` and `[setup]`: plan-wide settings.

use std::path::{Path, PathBuf};

use crate::plan::model::*;
use crate::plan::raw::*;

pub(super) fn ssh_defaults(raw: Option<&RawSshDefaults>, base: &Path) -> SshDefaults {
    let d = SshDefaults::default();
    let Some(r) = raw else {
        return d;
    };
    // the ranges are the schema's, checked with the plan's shape before this
    SshDefaults {
        user: r.user.clone(),
        known_hosts: r.known_hosts.as_ref().map(|p| resolve_path(base, p)),
        config: r.config.as_ref().map(|p| resolve_path(base, p)),
        connect_timeout_s: r.connect_timeout_s.unwrap_or(d.connect_timeout_s),
        max_connections: r.max_connections.unwrap_or(d.max_connections),
        connect_attempts: r.connect_attempts.unwrap_or(d.connect_attempts),
        retry_backoff_ms: r.retry_backoff_ms.unwrap_or(d.retry_backoff_ms),
    }
}

pub(super) fn resolve_path(base: &Path, p: &str) -> PathBuf {
    if let Some(rest) = p.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// The capacity model's knobs; their ranges are the schema's, checked with the plan's shape.
pub(super) fn capacity(raw: Option<&RawCapacity>) -> CapacityConfig {
    let mut c = CapacityConfig::default();
    if let Some(r) = raw {
        if let Some(e) = &r.efficiency {
            c.efficiency = *e.get_ref();
        }
        if let Some(p) = r.switch_penalty_pct {
            c.switch_penalty_pct = p;
        }
    }
    c
}

pub(super) fn setup(s: &RawSetup) -> Setup {
    Setup {
        packages: s.packages.clone().unwrap_or_else(|| {
            [
                "perftest",
                "rdma-core",
                "ibverbs-utils",
                "openmpi-bin",
                "libnccl2",
                "libnccl-dev",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        }),
        build_nccl_tests: s.build_nccl_tests.unwrap_or(false),
        nccl_tests_repo: s.nccl_tests_repo.clone(),
    }
}
