//! One nccl-tests launch over ranks that all started: the ring's speed, nccl-tests' banner,
//! NCCL's INFO lines, the QP failure of a hop without a path, the result table and its footer,
//! and the bytes the ring moved.

use std::fmt::Write as _;

use super::ring::{Lane, SOCKET_GBS, Speed, collective_model, ring_hops};
use super::{Rank, TestArgs, Traffic, failure, list_match};
use crate::exec::Output;
use crate::sim::noise::Rng;
use crate::sim::world::World;

/// The sweep's totals: every bus bandwidth printed, and the bytes each rank put on the wire.
#[derive(Default)]
struct Swept {
    busbws: Vec<f64>,
    wire_bytes: f64,
}

/// An nccl-tests binary launched over ranks that all started: the ring NCCL builds, what it
/// logs, the result table, and the bytes it moves.
pub(super) struct Launch<'a> {
    world: &'a World,
    ranks: Vec<Rank>,
    test: TestArgs,
    /// The binary's name (`all_reduce_perf`).
    prog: String,
    /// The collective (`all_reduce`).
    coll: String,
    rng: Rng,
    /// IB only if every rank found a device.
    use_ib: bool,
    hops: Vec<Vec<Lane>>,
}

impl<'a> Launch<'a> {
    pub(super) fn new(
        world: &'a World,
        ranks: Vec<Rank>,
        test: TestArgs,
        prog: String,
        rng: Rng,
    ) -> Self {
        let use_ib = ranks.iter().all(|r| !r.ib.is_empty());
        let hops = ring_hops(world, &ranks);
        Launch {
            world,
            ranks,
            test,
            coll: prog.trim_end_matches("_perf").to_string(),
            prog,
            rng,
            use_ib,
            hops,
        }
    }

    /// The whole output: header, NCCL's log, then the QP failure of a hop without a path or
    /// the result table and its footer.
    pub(super) fn run(mut self) -> (Output, Traffic) {
        let speed = self.speed();
        let mut out = self.header();
        let comm_id = self.rng.next_u64();
        for r in 0..self.ranks.len() {
            for line in self.info_lines(r, comm_id) {
                out.push_str(&self.info_prefix(r));
                out.push_str(&line);
                out.push('\n');
            }
        }
        if self.use_ib
            && let Some(r) = self.hops.iter().position(|h| h.is_empty())
        {
            // a hop with no RDMA path: the QPs never connect
            return (failure(3, out, self.qp_timeout(r)), Traffic::new());
        }
        let swept = self.sweep(&speed, &mut out);
        self.footer(&swept, &mut out);
        let traffic = self.traffic(swept.wire_bytes);
        (Output::ok(out), traffic)
    }

    fn host(&self, r: usize) -> &str {
        self.world.name(self.ranks[r].node)
    }

    /// The ring's bus bandwidth (its slowest hop, or sockets), with its noise, and the
    /// collective's factor and latency.
    fn speed(&mut self) -> Speed {
        let ring_gbs = if self.use_ib {
            self.hops
                .iter()
                .map(|h| h.iter().map(|l| l.gbps).sum::<f64>())
                .fold(f64::INFINITY, f64::min)
                / 8.0
        } else {
            SOCKET_GBS
        };
        let ring_gbs = if ring_gbs.is_finite() {
            self.rng.jitter(ring_gbs, 0.01)
        } else {
            0.0
        };
        let (factor, t0, eff) = collective_model(&self.coll, self.ranks.len());
        Speed {
            factor,
            t0: if self.use_ib { t0 } else { t0 * 2.5 },
            bus_gbs: if self.use_ib {
                ring_gbs * eff
            } else {
                ring_gbs
            },
        }
    }

    /// The reduction column: the op for reducing collectives, else `none`.
    fn redop(&self) -> String {
        if matches!(
            self.coll.as_str(),
            "all_reduce" | "sendrecv" | "reduce" | "reduce_scatter"
        ) {
            self.test.op.clone()
        } else {
            "none".to_string()
        }
    }

    /// nccl-tests' banner and its list of devices.
    fn header(&self) -> String {
        let t = &self.test;
        let mut out = String::new();
        let step = if t.step_factor > 1 {
            t.step_factor
        } else {
            t.step_bytes
        };
        let _ = writeln!(
            out,
            "# nccl-tests version 2.19.6 nccl-headers=22907 nccl-library=22907"
        );
        let _ = writeln!(out, "# Collective test starting: {}", self.prog);
        let _ = writeln!(
            out,
            "# nThread {} nGpus {} minBytes {} maxBytes {} step: {step}({}) warmup iters: {} iters: {} agg iters: {} validation: {} graph: 0 unalign: 0",
            t.nthreads,
            t.ngpus,
            t.min_bytes,
            t.max_bytes,
            if t.step_factor > 1 { "factor" } else { "bytes" },
            t.warmup,
            t.iters,
            t.agg,
            t.check
        );
        out.push_str("#\n# Using devices\n");
        for (r, rank) in self.ranks.iter().enumerate() {
            let _ = writeln!(
                out,
                "#  Rank {r:>2} Group {:>2} Pid {:>6} on {:>10} device {:>2} [{:04x}:{:02x}:{:02x}] NVIDIA GB10",
                0,
                rank.pid,
                self.host(r),
                0,
                0x000f,
                0x01,
                0x00
            );
        }
        out
    }

    /// The start of rank `r`'s NCCL INFO lines: `host:pid:tid [0] NCCL INFO `.
    fn info_prefix(&self, r: usize) -> String {
        let pid = self.ranks[r].pid;
        format!("{}:{pid}:{} [0] NCCL INFO ", self.host(r), pid + 7)
    }

    /// Rank `r`'s bootstrap interface: the first up device `NCCL_SOCKET_IFNAME` names that
    /// has an address (else any with one, else the management port), as `netdev:ip<0>`.
    fn oob(&self, r: usize) -> String {
        let rank = &self.ranks[r];
        let w = self.world;
        let ifspec = rank
            .env
            .get("NCCL_SOCKET_IFNAME")
            .cloned()
            .unwrap_or_default();
        let oob_dev = w
            .devs_of(rank.node)
            .find(|d| d.address.is_some() && list_match(&ifspec, &d.netdev) && d.active())
            .or_else(|| w.devs_of(rank.node).find(|d| d.address.is_some()));
        match oob_dev.and_then(|d| d.address.map(|(ip, _)| (d.netdev.clone(), ip))) {
            Some((nd, ip)) => format!("{nd}:{ip}<0>"),
            None => format!("enP7s7:{}<0>", w.mgmt_ip(rank.node)),
        }
    }

    /// What NCCL logs for rank `r` as its communicator comes up: bootstrap, the environment,
    /// the network it picks, the ring's channels.
    fn info_lines(&self, r: usize, comm_id: u64) -> Vec<String> {
        let rank = &self.ranks[r];
        let n = self.ranks.len();
        let oob = self.oob(r);
        let mut info: Vec<String> = vec![
            format!("Bootstrap: Using {oob}"),
            "cudaDriverVersion 13000".into(),
        ];
        if r == 0 {
            info.push("NCCL version 2.29.7+cuda13.0".into());
        }
        for (k, v) in &rank.env {
            if k.starts_with("NCCL_") && !k.starts_with("NCCL_DEBUG") {
                info.push(format!("{k} set by environment to {v}."));
            }
        }
        if rank.ib.is_empty() {
            info.push("NET/IB : No device found.".into());
        } else {
            let list: Vec<String> = rank
                .ib
                .iter()
                .enumerate()
                .map(|(i, d)| format!("[{i}]{}:1/RoCE", self.world.devs[*d].name))
                .collect();
            info.push(format!("NET/IB : Using {} [RO]; OOB {oob}", list.join(" ")));
        }
        // GPUDirect RDMA where GPU memory is the NIC's peer; GB10's unified memory is staged
        // through the host (GDR 0)
        let gdr = self.use_ib
            && self
                .ranks
                .iter()
                .all(|k| self.world.plan.profile_of(k.node).name != "gb10");
        let via = if self.use_ib {
            info.push("Using network IB".into());
            if gdr { "NET/IB/0/GDRDMA" } else { "NET/IB/0" }
        } else {
            info.push(format!("NET/Socket : Using [0]{oob}"));
            info.push("Using network Socket".into());
            "NET/Socket/0"
        };
        let comm = format!("0x{:x}", 0x55_0000_0000u64 + rank.pid * 0x1000);
        info.push(format!(
            "ncclCommInitRank comm {comm} rank {r} nranks {n} cudaDev 0 nvmlDev 0 busId f01000 commId 0x{comm_id:016x} - Init START"
        ));
        if n > 1 {
            info.extend(channels(r, n, via, gdr));
        }
        info.push(format!(
            "comm {comm} rank {r} nranks {n} cudaDev 0 nvmlDev 0 busId f01000 commId 0x{comm_id:016x} - Init COMPLETE"
        ));
        info
    }

    /// What rank `r` prints when the QPs of its hop time out, and mpirun's abort.
    fn qp_timeout(&self, r: usize) -> String {
        let rank = &self.ranks[r];
        let host = self.host(r);
        let pid = rank.pid;
        let mut err = String::new();
        let _ = writeln!(
            err,
            "\n[2026-01-01 00:00:00] {host}:{pid}:{} [0] transport/net_ib/connect.cc:1000 NCCL WARN NET/IB : ibv_modify_qp failed with 110 Connection timed out, on dev {}:1, curr state INIT, next state RTR, local GID index {}, local GID ::ffff:0.0.0.0, remote GID ::ffff:0.0.0.0\n",
            pid + 7,
            rank.ib
                .first()
                .map(|d| self.world.devs[*d].name.clone())
                .unwrap_or_default(),
            rank.env
                .get("NCCL_IB_GID_INDEX")
                .cloned()
                .unwrap_or_else(|| "3".into())
        );
        let _ = writeln!(
            err,
            "{host}: Test NCCL failure common.cu:1279 'remote process exited or there was a network error / NET/IB : ibv_modify_qp failed with 110 Connection timed out'"
        );
        let _ = writeln!(err, " .. {host} pid {pid}: Test failure common.cu:1137");
        let d = "-".repeat(74);
        let _ = write!(
            err,
            "{d}\nPrimary job  terminated normally, but 1 process returned\na non-zero exit code. Per user-direction, the job has been aborted.\n{d}\n{d}\nmpirun detected that one or more processes exited with non-zero status, thus causing\nthe job to be terminated. The first process to do so was:\n\n  Process name: [[4242,1],{r}]\n  Exit code:    3\n{d}\n"
        );
        err
    }

    /// The result table: one row per size, out-of-place then in-place.
    fn sweep(&mut self, speed: &Speed, out: &mut String) -> Swept {
        let mut swept = Swept::default();
        let sizes = self.test.sizes();
        if !sizes.is_empty() {
            table_header(out);
        }
        for bytes in sizes {
            let line = self.row(bytes, speed, &mut swept);
            out.push_str(&line);
            out.push('\n');
        }
        swept
    }

    /// One row of the table: the size and count as nccl-tests shows them, then time, algbw,
    /// busbw and #wrong twice.
    fn row(&mut self, bytes: u64, speed: &Speed, swept: &mut Swept) -> String {
        let t = &self.test;
        let n = self.ranks.len().max(1) as u64;
        let word = t.word();
        let (count, shown) = if self.coll == "all_gather" {
            let count = bytes / word / n;
            (count, count * word * n)
        } else {
            let count = bytes / word;
            (count, count * word)
        };
        let mut line = format!(
            "{shown:>12}  {count:>12}  {:>8}  {:>6}  {:>6}",
            t.dtype,
            self.redop(),
            -1
        );
        let iterations = (t.warmup + t.iters * t.agg) as f64;
        let check = t.check;
        for _half in 0..2 {
            let wire = shown as f64 * speed.factor;
            let time = self.rng.jitter(speed.t0, 0.03) + wire / (speed.bus_gbs.max(1e-6) * 1e3);
            let algbw = shown as f64 / time / 1e3;
            let busbw = algbw * speed.factor;
            swept.busbws.push(busbw);
            swept.wire_bytes += wire * iterations;
            if check > 0 {
                let _ = write!(
                    line,
                    "  {}  {}  {}  {:>6}",
                    float_str(time, 7),
                    float_str(algbw, 6),
                    float_str(busbw, 6),
                    0
                );
            } else {
                let _ = write!(
                    line,
                    "  {}  {}  {}    N/A",
                    float_str(time, 7),
                    float_str(algbw, 6),
                    float_str(busbw, 6)
                );
            }
        }
        line
    }

    /// The footer: out-of-bounds values, the average bus bandwidth, the end.
    fn footer(&self, swept: &Swept, out: &mut String) {
        let avg = if swept.busbws.is_empty() {
            0.0
        } else {
            swept.busbws.iter().sum::<f64>() / swept.busbws.len() as f64
        };
        let _ = writeln!(out, "# {:<20} : 0 OK", "Out of bounds values");
        let _ = writeln!(out, "# {:<20} : {} ", "Avg bus bandwidth", fmt_g(avg));
        let _ = writeln!(out, "#\n# Collective test concluded: {}\n\n#", self.prog);
    }

    /// The bytes each device moved: every rank sends its share to the next and receives from
    /// the previous, split over the lanes of each hop (IB only).
    fn traffic(&self, wire_bytes: f64) -> Traffic {
        let mut traffic = Traffic::new();
        if !self.use_ib || self.ranks.len() <= 1 {
            return traffic;
        }
        let per_rank = wire_bytes as u64;
        for lanes in &self.hops {
            let share = per_rank / lanes.len().max(1) as u64;
            for lane in lanes {
                let a = &self.world.devs[lane.from];
                let b = &self.world.devs[lane.to];
                traffic.entry((a.node, a.name.clone())).or_default().0 += share;
                traffic.entry((b.node, b.name.clone())).or_default().1 += share;
            }
        }
        traffic
    }
}

/// Rank `r`'s ring channels among `n` ranks: both channels' order, receive from the previous
/// rank, send to the next, over `via`.
fn channels(r: usize, n: usize, via: &str, gdr: bool) -> Vec<String> {
    let order: String = (0..n).map(|x| format!(" {x:>4}")).collect();
    let (prev, next) = ((r + n - 1) % n, (r + 1) % n);
    let mut lines = vec![
        format!("Channel 00/02 :{order}"),
        format!("Channel 01/02 :{order}"),
    ];
    for ch in 0..2 {
        lines.push(format!(
            "Channel {ch:02}/0 : {prev}[0] -> {r}[0] [receive] via {via}"
        ));
    }
    for ch in 0..2 {
        lines.push(format!(
            "Channel {ch:02}/0 : {r}[0] -> {next}[0] [send] via {via}"
        ));
    }
    lines.push(format!(
        "Connected all rings, use ring PXN 0 GDR {}",
        u8::from(gdr)
    ));
    lines
}

/// The three heading lines of the result table.
fn table_header(out: &mut String) {
    out.push_str("#\n");
    let _ = writeln!(
        out,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place          ",
        "", "", "", "", ""
    );
    let _ = writeln!(
        out,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} ",
        "size",
        "count",
        "type",
        "redop",
        "root",
        "time",
        "algbw",
        "busbw",
        "#wrong",
        "time",
        "algbw",
        "busbw",
        "#wrong"
    );
    let _ = writeln!(
        out,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} ",
        "(B)",
        "(elements)",
        "",
        "",
        "",
        "(us)",
        "(GB/s)",
        "(GB/s)",
        "",
        "(us)",
        "(GB/s)",
        "(GB/s)",
        ""
    );
}

/// `%g` as C prints it (6 significant digits, no trailing zeros).
pub(crate) fn fmt_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            format!("{v}")
        };
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let s = format!("{v:.5e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// nccl-tests' width-limited number formatter (2025-10+).
fn float_str(value: f64, width: usize) -> String {
    let mut power = 0usize;
    let mut val = 1.0;
    while value >= val {
        power += 1;
        val *= 10.0;
    }
    if power + 2 < width {
        format!("{value:>width$.2}")
    } else if power + 1 < width {
        format!("{value:>width$.1}")
    } else if power < width + 1 {
        format!("{value:>width$.0}")
    } else {
        format!("{value:>width$.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_format() {
        assert_eq!(fmt_g(10.2345678), "10.2346");
        assert_eq!(fmt_g(0.5), "0.5");
        assert_eq!(fmt_g(23.0), "23");
        assert_eq!(fmt_g(0.0), "0");
        assert_eq!(fmt_g(0.000012345), "1.2345e-05");
    }

    #[test]
    fn width_limited_numbers() {
        assert_eq!(float_str(28.71, 7), "  28.71");
        assert_eq!(float_str(5663.2, 7), "5663.20");
        assert_eq!(float_str(23.7, 6), " 23.70");
        assert_eq!(float_str(1715.44, 6), "1715.4");
    }
}
