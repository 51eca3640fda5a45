//! The line scanner of a text capture: one method per kind of line (test error, parameter line,
//! device line, column header, row, footer, `# error:`, command line), the NCCL log lines and
//! mpirun's boxes handed to their own scanners, and [`Scanner::finish`] combining it all.

use super::lines::{after_colon, error_line, layout_name, parse_device, parse_params};
use super::row::{Fault, Schema, parse_row, uint};
use super::{Device, NcclReport, Params, Row, choose_error, version_from_code};
use crate::parse::text::{impossible, num, push_capped, reject};
use crate::parse::{MAX_LINE_BYTES, MAX_STORED_ROWS, Rejected, Status, ToolError, mpirun};
use crate::tools::nccl_tests::parse::nccl_log::{LogScanner, clean};
use std::collections::HashSet;

/// Errors the test printed: a primary one (`Test NCCL failure ...`) wins over a propagation line.
#[derive(Default)]
struct TestErrors {
    primary: Option<ToolError>,
    secondary: Option<ToolError>,
}

/// The footer lines (`# Out of bounds values`, `# Avg bus bandwidth`).
#[derive(Default)]
struct Footer {
    oob: Option<u64>,
    oob_ok: Option<bool>,
    avg: Option<f64>,
    avg_check: Option<String>,
    /// `Avg bus bandwidth` was read: the run got to its end.
    seen: bool,
}

/// Header facts: versions, program name, parameter line(s) and `Using devices` block(s).
#[derive(Default)]
struct Head {
    collective: Option<String>,
    command_collective: Option<String>,
    tests_version: Option<String>,
    library_code: Option<u64>,
    version_line: bool,
    params: Option<Params>,
    param_lines: usize,
    device_blocks: usize,
    devices: Vec<Device>,
}

/// Who printed the `# Using devices` lines.
struct Printers {
    /// Distinct (rank, host, pid).
    processes: usize,
    /// Distinct ranks.
    ranks: usize,
    /// Two processes claimed one rank: independent processes each printed a header.
    rank_clash: bool,
}

impl Head {
    /// The processes and ranks behind the device lines, and whether two claimed one rank.
    fn printers(&self) -> Printers {
        let mut seen: HashSet<(u64, &str, Option<u64>)> = HashSet::new();
        let mut seen_ranks: HashSet<u64> = HashSet::new();
        let mut rank_clash = false;
        for d in &self.devices {
            if seen.insert((d.rank, d.host.as_str(), d.pid)) && !seen_ranks.insert(d.rank) {
                rank_clash = true;
            }
        }
        Printers {
            processes: seen.len(),
            ranks: seen_ranks.len(),
            rank_clash,
        }
    }

    /// The hosts of the device lines, each once, in the order they came.
    fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = Vec::new();
        let mut host_set: HashSet<&str> = HashSet::new();
        for d in &self.devices {
            if host_set.insert(d.host.as_str()) {
                hosts.push(d.host.clone());
            }
        }
        hosts
    }
}

/// The result table read so far.
#[derive(Default)]
struct Table {
    schema: Option<Schema>,
    layout: Option<&'static str>,
    cputime: bool,
    rows: Vec<Row>,
    /// Complete rows past [`MAX_STORED_ROWS`]: counted, their `#wrong` summed.
    rows_not_stored: usize,
    wrong_not_stored: Option<u64>,
    rejected_rows: usize,
    impossible_rows: usize,
    rejected: Vec<Rejected>,
}

impl Table {
    /// Several processes printed the table: keep each row larger than the last one kept, one
    /// table's worth, and drop the rows a later process printed again.
    fn keep_rising_sizes(&mut self) {
        let mut kept: Vec<Row> = Vec::new();
        for r in std::mem::take(&mut self.rows) {
            if kept.last().is_none_or(|k| r.size_bytes > k.size_bytes) {
                kept.push(r);
            }
        }
        self.rows = kept;
    }
}

/// One pass over a capture, line by line.
pub(super) struct Scanner<'a> {
    head: Head,
    table: Table,
    footer: Footer,
    errors: TestErrors,
    last_error: Option<String>,
    recognized: bool,
    log: LogScanner,
    mpi: mpirun::Scanner<'a>,
    not_stored: usize,
}

impl<'a> Scanner<'a> {
    pub(super) fn new() -> Self {
        Scanner {
            head: Head::default(),
            table: Table::default(),
            footer: Footer::default(),
            errors: TestErrors::default(),
            last_error: None,
            recognized: false,
            log: LogScanner::default(),
            mpi: mpirun::Scanner::new(),
            not_stored: 0,
        }
    }

    /// Read line `no` (1-based). `cut`: the capture's last line without its newline, which may
    /// have been cut inside its last number and is therefore never read as a row.
    pub(super) fn line(&mut self, no: usize, raw: &'a str, cut: bool) {
        if raw.len() > MAX_LINE_BYTES {
            return;
        }
        let line = clean(raw);
        self.mpi.line_cleaned(raw, line);
        let nccl_line = self.log.line(line);
        let t = line.trim();
        if self.test_error(t) || cut || nccl_line {
            return;
        }
        // `#` lines lose their `#` in markdown pastes; pre-2019 footers start with a space
        let h = t.trim_start_matches('#').trim();
        let read = self.version(h)
            || self.collective(h)
            || self.params(h)
            || self.devices(h)
            || self.footer(no, h)
            || self.last_error(h)
            || self.column_header(line, h);
        if read || t.starts_with('#') || self.command(t) {
            return;
        }
        self.row(no, t);
    }

    /// `<host>: Test NCCL failure ...` and the other error lines of the test itself.
    fn test_error(&mut self, t: &str) -> bool {
        let Some((kind, primary)) = error_line(t) else {
            return false;
        };
        let slot = if primary {
            &mut self.errors.primary
        } else {
            &mut self.errors.secondary
        };
        if slot.is_none() {
            *slot = Some(ToolError {
                kind,
                message: t.to_string(),
            });
        }
        true
    }

    /// `# nccl-tests version 2.19.6 nccl-headers=22907 nccl-library=22907`.
    fn version(&mut self, h: &str) -> bool {
        let Some(rest) = h.strip_prefix("nccl-tests version ") else {
            return false;
        };
        self.recognized = true;
        self.head.version_line = true;
        self.head.tests_version = rest.split_whitespace().next().map(str::to_string);
        self.head.library_code = rest
            .split_whitespace()
            .find_map(|w| w.strip_prefix("nccl-library="))
            .and_then(uint);
        true
    }

    /// `# Collective test starting: all_reduce_perf` (and its `concluded` twin).
    fn collective(&mut self, h: &str) -> bool {
        if let Some(rest) = h.strip_prefix("Collective test starting:") {
            self.recognized = true;
            if self.head.collective.is_none() {
                self.head.collective = rest.split_whitespace().next().map(str::to_string);
            }
            return true;
        }
        h.starts_with("Collective test concluded:")
    }

    /// `# nThread 1 nGpus 1 minBytes 8 ...`: the first one is kept, all are counted.
    fn params(&mut self, h: &str) -> bool {
        if !h.starts_with("nThread ") {
            return false;
        }
        self.recognized = true;
        self.head.param_lines += 1;
        if self.head.params.is_none() {
            self.head.params = Some(parse_params(h));
        }
        true
    }

    /// `# Using devices` and the `#  Rank  0 Group  0 Pid ...` lines under it.
    fn devices(&mut self, h: &str) -> bool {
        if h == "Using devices" {
            self.recognized = true;
            self.head.device_blocks += 1;
            return true;
        }
        let Some(d) = parse_device(h) else {
            return false;
        };
        self.recognized = true;
        push_capped(
            &mut self.head.devices,
            d,
            MAX_STORED_ROWS,
            &mut self.not_stored,
        );
        true
    }

    /// `# Out of bounds values : 0 OK` and `# Avg bus bandwidth    : 2.41 [OK|FAILED]`.
    fn footer(&mut self, no: usize, h: &str) -> bool {
        let f = &mut self.footer;
        if h.starts_with("Out of bounds values") {
            self.recognized = true;
            let v = after_colon(h);
            if let Some(n) = v.first().and_then(|n| uint(n)) {
                f.oob = Some(f.oob.unwrap_or(0).saturating_add(n));
            }
            match v.get(1).copied() {
                Some("OK") => f.oob_ok = Some(f.oob_ok.unwrap_or(true)),
                Some("FAILED") => f.oob_ok = Some(false),
                _ => {}
            }
            return true;
        }
        if h.starts_with("Avg bus bandwidth") {
            self.recognized = true;
            f.seen = true;
            let v = after_colon(h);
            let tok = v.first().copied().unwrap_or("");
            let why = impossible(tok)
                .map(str::to_string)
                .or_else(|| num(tok).and_then(crate::parse::ceiling::collective_gbs));
            if let Some(why) = why {
                // no average of bandwidths is negative or faster than any memory: the footer is
                // as unusable as such a row
                self.table.impossible_rows += 1;
                let reason = format!("average bus bandwidth `{tok}` GB/s {why}");
                reject(&mut self.table.rejected, no, reason, &mut self.not_stored);
            } else if f.avg.is_none() {
                f.avg = num(tok);
            }
            match v.get(1).copied() {
                Some("OK") if f.avg_check.is_none() => f.avg_check = Some("OK".into()),
                Some("FAILED") => f.avg_check = Some("FAILED".into()),
                _ => {}
            }
            return true;
        }
        false
    }

    /// `# error: <ncclGetLastError>` (2025-10+).
    fn last_error(&mut self, h: &str) -> bool {
        let Some(rest) = h.strip_prefix("error:") else {
            return false;
        };
        let rest = rest.trim();
        if !rest.is_empty() && self.last_error.is_none() {
            self.last_error = Some(rest.to_string());
        }
        true
    }

    /// The column header (`#  size  count  type  redop  root  time  algbw ...`).
    fn column_header(&mut self, line: &str, h: &str) -> bool {
        let Some((s, cputime)) = Schema::from_header(h) else {
            return false;
        };
        self.recognized = true;
        self.table.cputime |= cputime;
        self.table.layout = Some(layout_name(line, &s, self.head.version_line));
        self.table.schema = Some(s);
        true
    }

    /// A shell trace or mpirun command line: the program name, when no header names it.
    fn command(&mut self, t: &str) -> bool {
        let is_command = t.contains("mpirun") || t.starts_with("+ ") || t.starts_with("$ ");
        if !is_command || self.head.command_collective.is_some() {
            return false;
        }
        self.head.command_collective = t
            .split_whitespace()
            .map(|w| w.rsplit('/').next().unwrap_or(w))
            .find(|w| {
                w.ends_with("_perf")
                    && w.chars()
                        .all(|c| c.is_ascii_lowercase() || c == '_' || c == '2')
            })
            .map(str::to_string);
        true
    }

    /// A result row, read against the header's schema (or one inferred from its token count).
    fn row(&mut self, no: usize, t: &str) {
        let tb = &mut self.table;
        let n = || t.split_whitespace().take(64).count();
        let read = match &tb.schema {
            Some(s) => parse_row(t, s),
            None => match Schema::infer(n()) {
                Some(s) => {
                    let r = parse_row(t, &s);
                    if r.is_ok() && tb.layout.is_none() {
                        tb.layout = Some(if s.width() == 13 {
                            "wrong-count-2022"
                        } else {
                            "float-error-2019"
                        });
                    }
                    r
                }
                None => Err(Fault::Unreadable),
            },
        };
        match read {
            Ok(r) => {
                if tb.rows.len() < MAX_STORED_ROWS {
                    tb.rows.push(r);
                } else {
                    tb.rows_not_stored = tb.rows_not_stored.saturating_add(1);
                    if let Some(w) = row_wrong(&r) {
                        tb.wrong_not_stored =
                            Some(tb.wrong_not_stored.unwrap_or(0).saturating_add(w));
                    }
                }
            }
            Err(Fault::Impossible(why)) => {
                tb.rejected_rows += 1;
                tb.impossible_rows += 1;
                let reason = format!("{why}: no run prints that, row rejected");
                reject(&mut tb.rejected, no, reason, &mut self.not_stored);
            }
            Err(Fault::Unreadable) => {
                if t.split_whitespace().next().and_then(uint).is_some() && n() >= 5 {
                    tb.rejected_rows += 1;
                }
            }
        }
    }

    /// Combine what the lines said into the report.
    pub(super) fn finish(self) -> NcclReport {
        let log = self.log.finish();
        let mp = self.mpi.finish();
        let Scanner {
            head,
            mut table,
            footer,
            errors,
            last_error,
            recognized,
            not_stored,
            ..
        } = self;

        // independent processes each printing a header (see `duplicate_headers`)
        let printers = head.printers();
        let duplicate_headers =
            head.param_lines > 1 || head.device_blocks > 1 || printers.rank_clash;
        if duplicate_headers {
            table.keep_rising_sizes();
        }
        let mut hosts = head.hosts();
        if hosts.is_empty() {
            // no `# Using devices` block (a hung or killed job): the hosts its NCCL lines name
            hosts = log.hosts.clone();
        }
        let wrong = table
            .rows
            .iter()
            .filter_map(row_wrong)
            .chain(table.wrong_not_stored)
            .reduce(|a, b| a.saturating_add(b));

        let error = choose_error(
            &mp,
            errors.primary.or(errors.secondary),
            footer.oob,
            footer.oob_ok,
            footer.avg_check.as_deref(),
            footer.avg,
        );
        let have_rows = !table.rows.is_empty() || table.rows_not_stored > 0;
        let recognized = recognized || log.lines > 0 || log.nccl_version.is_some();
        let status = if error.is_some() {
            Status::Error
        } else if have_rows && footer.seen && table.impossible_rows == 0 {
            Status::Ok
        } else if have_rows || recognized || table.impossible_rows > 0 {
            Status::Incomplete
        } else {
            Status::Unrecognized
        };

        NcclReport {
            status,
            error,
            collective: head.collective.or(head.command_collective),
            layout: table.layout.map(str::to_string),
            rows: table.rows,
            rejected_rows: table.rejected_rows,
            out_of_bounds: footer.oob,
            out_of_bounds_ok: footer.oob_ok,
            avg_busbw_gbs: footer.avg,
            avg_busbw_check: footer.avg_check,
            wrong_total: wrong,
            ranks: printers.ranks,
            processes: printers.processes,
            hosts,
            devices: head.devices,
            transport: log.transport,
            mixed_transport: log.mixed_transport,
            fallback_hosts: log.fallback_hosts,
            ib_unavailable: log.ib_unavailable,
            gdr: log.gdr,
            roce: log.roce,
            net_devices: log.net_devices,
            nccl_version: log
                .nccl_version
                .or_else(|| head.library_code.and_then(version_from_code)),
            nccl_tests_version: head.tests_version,
            env: log.env,
            warnings: log.warnings,
            duplicate_headers,
            params: head.params,
            cputime: table.cputime,
            nccl_last_error: last_error,
            mpirun_errors: mp.errors.clone(),
            mpirun_host: mp.host.clone(),
            exit_code: mp.exit_code,
            nranks: log.nranks,
            rejected: table.rejected,
            not_stored: not_stored
                .saturating_add(table.rows_not_stored)
                .saturating_add(log.not_stored)
                .saturating_add(mp.not_stored),
        }
    }
}

/// Sum of a row's `#wrong` counts (both halves); `None` when neither carried one.
fn row_wrong(r: &Row) -> Option<u64> {
    [&r.out_of_place, &r.in_place]
        .into_iter()
        .filter_map(|h| h.as_ref().and_then(|h| h.wrong))
        .reduce(|a, b| a.saturating_add(b))
}
