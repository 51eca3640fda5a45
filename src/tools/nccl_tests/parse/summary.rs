//! The few human lines of `fabricplan parse nccl-tests --format text`.

use super::NcclReport;
use crate::parse::{Status, check_max, check_opt};
use crate::text::size;

impl crate::parse::Report for NcclReport {
    fn status(&self) -> crate::parse::Status {
        self.status
    }

    fn error(&self) -> Option<&crate::parse::ToolError> {
        self.error.as_ref()
    }

    fn summary(&self) -> String {
        NcclReport::summary(self)
    }

    /// Beyond its status: a row when `ok`, no impossible time or bandwidth.
    fn check(&self) -> Result<(), String> {
        let r = self;
        let st = r.status;
        if st == Status::Ok && r.rows.is_empty() {
            return Err("ok without a row".into());
        }
        let max = crate::parse::ceiling::MAX_COLLECTIVE_GBS;
        check_opt("avg_busbw_gbs", r.avg_busbw_gbs)?;
        check_max("avg_busbw_gbs", r.avg_busbw_gbs, max)?;
        for row in &r.rows {
            for h in [&row.out_of_place, &row.in_place].into_iter().flatten() {
                check_opt("time", Some(h.time_us))?;
                check_opt("algbw", Some(h.algbw_gbs))?;
                check_opt("busbw", Some(h.busbw_gbs))?;
                check_max("algbw", Some(h.algbw_gbs), max)?;
                check_max("busbw", Some(h.busbw_gbs), max)?;
                if let Some(pi) = &h.per_iter {
                    for v in [pi.min_us, pi.max_us, pi.p99_us, pi.cv_pct] {
                        check_opt("per-iteration", v)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl NcclReport {
    /// A few human lines: what ran where, over which transport, and the headline numbers.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = vec![self.who(), self.network()];
        if let (Some(lo), Some(hi)) = (
            self.rows.iter().map(|r| r.size_bytes).min(),
            self.rows.iter().map(|r| r.size_bytes).max(),
        ) {
            parts.push(format!(
                "{} sizes {}..{}",
                self.rows.len(),
                size::format(lo),
                size::format(hi)
            ));
        } else {
            parts.push("no result rows".into());
        }
        match self.wrong_total {
            Some(w) => parts.push(format!("#wrong {w}")),
            None => parts.push("#wrong n/a".into()),
        }
        if let Some(o) = self.out_of_bounds {
            let ok = match self.out_of_bounds_ok {
                Some(true) => " OK",
                Some(false) => " FAILED",
                None => "",
            };
            parts.push(format!("out of bounds {o}{ok}"));
        }
        if let Some(a) = self.avg_busbw_gbs {
            let check = self
                .avg_busbw_check
                .as_deref()
                .map(|c| format!(" {c}"))
                .unwrap_or_default();
            parts.push(format!("avg busbw {a:.2} GB/s{check}"));
        }
        if self.rejected_rows > 0 {
            parts.push(format!(
                "{} unreadable row line(s) dropped",
                self.rejected_rows
            ));
        }
        let mut s = parts.join("; ");
        match (&self.error, self.status) {
            (Some(e), _) => {
                s.push_str(&format!(
                    "\nerror ({}): {}",
                    e.kind.as_str(),
                    e.message.lines().next().unwrap_or("")
                ));
            }
            (None, Status::Incomplete) => match self.rejected.first() {
                Some(r) => s.push_str(&format!("\nincomplete: line {}: {}", r.line, r.reason)),
                None if self.rows.is_empty() && self.layout.is_none() => {
                    s.push_str("\nincomplete: no results table (the job hung or was killed?)")
                }
                None => s.push_str("\nincomplete: the output stops before the footer"),
            },
            (None, Status::Unrecognized) => {
                s = "not nccl-tests output".to_string();
            }
            (None, Status::Empty) => {
                s = "nccl-tests: empty input".to_string();
            }
            _ => {}
        }
        s
    }

    /// What ran where: the collective, its ranks, their hosts.
    fn who(&self) -> String {
        let name = self.collective.as_deref().unwrap_or("nccl-tests");
        // without a `Using devices` block, the communicator size NCCL announced
        let ranks = match (self.ranks, self.nranks) {
            (0, Some(n)) => usize::try_from(n).unwrap_or(usize::MAX),
            (r, _) => r,
        };
        let mut who = format!("{name}, {ranks} rank{}", if ranks == 1 { "" } else { "s" });
        if !self.hosts.is_empty() {
            who.push_str(&format!(" on {}", self.hosts.join(", ")));
        }
        if self.duplicate_headers {
            who.push_str(&format!(
                " ({} independent processes: binary built without MPI)",
                self.processes
            ));
        }
        who
    }

    /// NCCL's version and the transport it chose (RoCE or IB, GDR, mixed).
    fn network(&self) -> String {
        let mut net = format!(
            "NCCL {}",
            self.nccl_version.as_deref().unwrap_or("(version unknown)")
        );
        let Some(t) = self.transport.as_deref() else {
            net.push_str(" (no network transport seen)");
            return net;
        };
        net.push_str(&format!(" over {t}"));
        let mut q = Vec::new();
        if t == "NET/IB" {
            match self.roce {
                Some(true) => q.push("RoCE".to_string()),
                Some(false) => q.push("IB".to_string()),
                None => {}
            }
            match self.gdr {
                Some(true) => q.push("GDR on".into()),
                Some(false) => q.push("GDR off".into()),
                None => {}
            }
        }
        if self.mixed_transport {
            q.push("mixed: some connections over IB".into());
        }
        if !q.is_empty() {
            net.push_str(&format!(" ({})", q.join(", ")));
        }
        net
    }
}
