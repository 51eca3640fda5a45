//! `[ssh]`, `[capacity]` and `[setup]`: plan-wide settings.

use std::path::{Path, PathBuf};

use super::{Ctx, span};
use crate::plan::diag::Problem;
use crate::plan::model::*;
use crate::plan::raw::*;

pub(super) fn ssh_defaults(raw: Option<&RawSshDefaults>, base: &Path) -> SshDefaults {
    let Some(r) = raw else {
        return SshDefaults {
            connect_timeout_s: 10,
            ..SshDefaults::default()
        };
    };
    SshDefaults {
        user: r.user.clone(),
        known_hosts: r.known_hosts.as_ref().map(|p| resolve_path(base, p)),
        config: r.config.as_ref().map(|p| resolve_path(base, p)),
        connect_timeout_s: r.connect_timeout_s.unwrap_or(10),
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

pub(super) fn capacity(ctx: &mut Ctx, raw: Option<&RawCapacity>) -> CapacityConfig {
    let mut c = CapacityConfig::default();
    if let Some(r) = raw {
        if let Some(es) = &r.efficiency {
            let e = *es.get_ref();
            if !(e > 0.0 && e <= 1.0) {
                ctx.push(
                    Problem::error("plan::capacity", format!("`capacity.efficiency = {e}` is outside (0, 1]"))
                        .at(span(es), "not a share")
                        .help("the share of an oversubscribed hop flows really get, a fraction such as 0.82 (not a percentage)"),
                );
            } else {
                c.efficiency = e;
            }
        }
        if let Some(p) = r.switch_penalty_pct {
            c.switch_penalty_pct = p.clamp(0.0, 100.0);
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
