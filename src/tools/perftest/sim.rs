//! perftest as the simulated boxes print it: arguments read like perftest reads them, and the
//! current output format (banner, address lines, Gb/s or MiB/s table, errors) of `ib_write_bw`
//! and `ib_write_lat` (FORMATS.md section 1; the lab stand-ins print the same).

use std::fmt::Write as _;

use crate::sim::noise::Rng;
use crate::sim::world::Dev;

pub(crate) const DASHES: &str =
    "---------------------------------------------------------------------------------------";

/// What perftest read from its command line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Args {
    pub lat: bool,
    pub dev: Option<String>,
    pub ib_port: u32,
    pub gid: Option<u32>,
    pub duration: Option<u32>,
    pub size: u64,
    pub qps: u32,
    pub iters: u32,
    pub port: u16,
    pub server: Option<String>,
    pub gbits: bool,
    /// `--cpu_util`: a CPU_Util[%] column in duration mode.
    pub cpu_util: bool,
    /// The operation in the banner's title: `RDMA_Write`, `RDMA_Read`, `Send`.
    pub verb: &'static str,
    /// `-b`: both ways at once.
    pub bidirectional: bool,
}

/// Is `tool` one of perftest's bandwidth or latency tests?
pub(crate) fn is_perftest(tool: &str) -> bool {
    use crate::parse::Tool;
    Tool::from_name(tool).is_some_and(|t| {
        [
            Tool::IB_WRITE_BW,
            Tool::IB_READ_BW,
            Tool::IB_SEND_BW,
            Tool::IB_WRITE_LAT,
            Tool::IB_READ_LAT,
            Tool::IB_SEND_LAT,
        ]
        .contains(&t)
    })
}

/// Read perftest's arguments; `Err` holds the parser's error lines.
pub(crate) fn parse(tool: &str, words: &[String]) -> Result<Args, String> {
    let lat = tool.contains("_lat");
    let verb = if tool.starts_with("ib_read") {
        "RDMA_Read"
    } else if tool.starts_with("ib_send") {
        "Send"
    } else {
        "RDMA_Write"
    };
    let mut a = Args {
        lat,
        verb,
        bidirectional: false,
        dev: None,
        ib_port: 1,
        gid: None,
        duration: None,
        size: if lat { 2 } else { 65536 },
        qps: 1,
        iters: if lat { 1000 } else { 5000 },
        port: 18515,
        server: None,
        gbits: false,
        cpu_util: false,
    };
    let bad =
        |w: &str| format!("{tool}: invalid option -- '{w}'\n Parser function exited with Error\n");
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let (key, inline) = match w.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v.to_string())),
            _ => (w, None),
        };
        let mut value = || -> Result<String, String> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            i += 1;
            words.get(i).cloned().ok_or_else(|| {
                format!("{tool}: option requires an argument -- '{}'\n Parser function exited with Error\n", key.trim_start_matches('-'))
            })
        };
        let num = |v: String| -> Result<u64, String> {
            crate::text::size::parse(&v).ok_or_else(|| bad(&v))
        };
        match key {
            "-d" | "--ib-dev" => a.dev = Some(value()?),
            "-i" | "--ib-port" => a.ib_port = num(value()?)? as u32,
            "-x" | "--gid-index" => a.gid = Some(num(value()?)? as u32),
            "-D" | "--duration" => a.duration = Some(num(value()?)? as u32),
            "-s" | "--size" => a.size = num(value()?)?,
            "-q" | "--qp" => a.qps = (num(value()?)? as u32).max(1),
            "-n" | "--iters" => a.iters = num(value()?)? as u32,
            "-p" | "--port" => a.port = num(value()?)? as u16,
            "-m" | "--mtu" | "-t" | "--tx-depth" | "-c" | "--connection" | "-I"
            | "--inline_size" | "-Q" | "--cq-mod" | "-r" | "--rx-depth" | "-S" | "--sl" | "-T"
            | "--tos" | "-u" | "--qp-timeout" | "-L" | "--src_port" => {
                value()?;
            }
            "--report_gbits" | "--report-gbits" => a.gbits = true,
            "--cpu_util" => a.cpu_util = true,
            "-F" | "--CPU-freq" | "-N" | "--noPeak" | "-e" | "--events" | "-R" | "--rdma_cm"
            | "-z" | "--comm_rdma_cm" | "-a" | "--all" => {}
            "-b" | "--bidirectional" => a.bidirectional = true,
            _ if w.starts_with('-') => return Err(bad(w.trim_start_matches('-'))),
            _ => a.server = Some(w.to_string()),
        }
        i += 1;
    }
    Ok(a)
}

/// The server's box before it accepts a client.
pub(crate) fn waiting_box() -> String {
    "\n************************************\n* Waiting for client to connect... *\n************************************\n"
        .to_string()
}

/// `%#0<width>x` as C prints it: 0 without `0x`, width counts the prefix.
fn alt_hex(v: u64, width: usize) -> String {
    if v == 0 {
        "0".repeat(width)
    } else {
        format!("0x{:0>w$x}", v, w = width.saturating_sub(2))
    }
}

fn gid_decimal(g: &[u8; 16]) -> String {
    g.iter()
        .map(|b| format!("{b:02}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Banner, for this side's device.
pub(crate) fn banner(a: &Args, dev: &str, mtu: u32, gid: u32, server: bool) -> String {
    let mut s = String::new();
    s.push_str(DASHES);
    s.push('\n');
    let title = match (a.lat, a.bidirectional) {
        (true, _) => format!("{} Latency Test", a.verb),
        (false, true) => format!("{} Bidirectional BW Test", a.verb),
        (false, false) => format!("{} BW Test", a.verb),
    };
    let _ = writeln!(s, "                    {title}");
    let _ = writeln!(s, " Dual-port       : OFF\t\tDevice         : {dev}");
    let _ = writeln!(s, " Number of qps   : {}\t\tTransport type : IB", a.qps);
    s.push_str(" Connection type : RC\t\tUsing SRQ      : OFF\n");
    s.push_str(" PCIe relax order: ON\t\tLock-free      : OFF\n");
    s.push_str(" ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF\n");
    if a.lat {
        s.push_str(" TX depth        : 1\n");
    } else {
        if !server {
            s.push_str(" TX depth        : 128\n");
        }
        s.push_str(" CQ Moderation   : 100\n CQE Poll Batch  : 16\n");
    }
    let _ = writeln!(s, " Mtu             : {mtu}[B]");
    s.push_str(" Link type       : Ethernet\n");
    let _ = writeln!(s, " GID index       : {gid}");
    let _ = writeln!(s, " Max inline data : {}[B]", if a.lat { 220 } else { 0 });
    s.push_str(" rdma_cm QPs\t : OFF\n Data ex. method : Ethernet\n");
    s.push_str(DASHES);
    s.push('\n');
    s
}

/// One side's QPs, as the address block prints them.
#[derive(Debug, Clone)]
pub(crate) struct Dests(Vec<(u64, u64, u64, u64)>, [u8; 16]);

pub(crate) fn dests(rng: &mut Rng, qps: u32, gid: [u8; 16]) -> Dests {
    Dests(
        (0..qps)
            .map(|_| {
                (
                    rng.range(0x100, 0x1ffff),
                    rng.range(0, 0xffffff),
                    rng.range(0x1000, 0x3fffff),
                    0x7f00_0000_0000 + rng.range(0, 0xfffffff) * 0x1000,
                )
            })
            .collect(),
        gid,
    )
}

impl Dests {
    pub(crate) fn first_qpn(&self) -> u64 {
        self.0.first().map(|d| d.0).unwrap_or(0)
    }
}

pub(crate) fn addresses(local: &Dests, remote: &Dests) -> String {
    let mut s = String::new();
    for (side, d) in [("local", local), ("remote", remote)] {
        for (qpn, psn, rkey, vaddr) in &d.0 {
            let _ = writeln!(
                s,
                " {side} address: LID {} QPN {} PSN {} RKey {} VAddr {}",
                alt_hex(0, 4),
                alt_hex(*qpn, 6),
                alt_hex(*psn, 6),
                alt_hex(*rkey, 8),
                alt_hex(*vaddr, 16)
            );
            let _ = writeln!(s, " GID: {}", gid_decimal(&d.1));
        }
    }
    s.push_str(DASHES);
    s.push('\n');
    s
}

/// The BW header, result row and closing dashes.
pub(crate) fn bw_table(a: &Args, gbps: f64, seconds: f64) -> String {
    let mut s = String::new();
    let bytes_per_s = gbps * 1e9 / 8.0;
    let msgs = (bytes_per_s * seconds / a.size.max(1) as f64).round() as u64;
    let rate = bytes_per_s / a.size.max(1) as f64 / 1e6;
    let peak = if a.duration.is_some() { 0.0 } else { gbps };
    let (unit, avg, peak) = if a.gbits {
        ("Gb/sec", gbps, peak)
    } else {
        let f = 1e9 / 8.0 / 1_048_576.0;
        ("MiB/sec", gbps * f, peak * f)
    };
    // CPU utilisation is reported in duration mode only (FORMATS 1.4)
    let cpu = a.cpu_util && a.duration.is_some();
    let _ = writeln!(
        s,
        " #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]{}",
        if cpu { "    CPU_Util[%]" } else { "" }
    );
    let cpu_col = if cpu { "\t    4.21" } else { "" };
    let iters = if a.duration.is_some() {
        msgs
    } else {
        u64::from(a.iters) * u64::from(a.qps)
    };
    if a.gbits && avg < 0.1 {
        let _ = writeln!(
            s,
            " {:<7}    {}           {:<7.6}            {:<7.6}            {:<7.6}{cpu_col}",
            a.size, iters, peak, avg, rate
        );
    } else {
        let _ = writeln!(
            s,
            " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t     {:<7.6}{cpu_col}",
            a.size, iters, peak, avg, rate
        );
    }
    s.push_str(DASHES);
    s.push('\n');
    s
}

/// The latency header, row and closing dashes, around a typical value.
pub(crate) fn lat_table(a: &Args, typical: f64, rng: &mut Rng) -> String {
    let mut s = String::new();
    s.push_str(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n");
    let min = typical * (0.96 + 0.01 * rng.unit());
    let max = typical * (3.0 + 4.0 * rng.unit());
    let avg = typical * (1.01 + 0.01 * rng.unit());
    let stdev = 0.02 + 0.04 * rng.unit();
    let p99 = typical * (1.08 + 0.05 * rng.unit());
    let p999 = typical * (1.6 + 0.8 * rng.unit());
    let _ = writeln!(
        s,
        " {:<7} {}          {:<7.2}        {:<7.2}      {:<7.2}  \t       {:<7.2}     \t{:<7.2}\t\t{:<7.2} \t\t{:<7.2}",
        a.size, a.iters, min, max, typical, avg, stdev, p99, p999
    );
    s.push_str(DASHES);
    s.push('\n');
    s
}

/// Device checks, with perftest's own error lines (stderr).
pub(crate) fn check_device<'a>(
    a: &Args,
    dev: Option<&'a Dev>,
    any: bool,
) -> Result<&'a Dev, String> {
    let Some(d) = dev else {
        return Err(if !any {
            " Did not detect devices \n If device exists, check if driver is up\n Unable to find the Infiniband/RoCE device\n".to_string()
        } else {
            format!(
                "IB device {} not found\n Unable to find the Infiniband/RoCE device\n",
                a.dev.clone().unwrap_or_default()
            )
        });
    };
    if a.ib_port != 1 {
        return Err(format!(
            " Unable to query port {} attributes\n Couldn't get context for the device\n",
            a.ib_port
        ));
    }
    if !d.active() {
        return Err(" Port number 1 state is Down\n Couldn't get context for the device\n".into());
    }
    Ok(d)
}

pub(crate) fn connect_failed(server: &str, port: u16) -> String {
    format!(
        "Couldn't connect to {server}:{port}\nUnable to open file descriptor for socket connection\n Unable to init the socket connection\n"
    )
}

pub(crate) fn rtr_failed(qpn: u64) -> String {
    format!("Failed to modify QP {qpn} to RTR\n Unable to Connect the HCA's through the link\n")
}

pub(crate) fn retry_exceeded(lat: bool, server: bool) -> String {
    let side = if server { "server" } else { "client" };
    let func = if lat {
        "run_iter_lat_write"
    } else {
        "run_iter_bw"
    };
    format!(
        " Completion with error at {side}\n Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81\n scnt=128, ccnt=0\n Failed to complete {func} function successfully\n"
    )
}
