//! The `-J/--output_file` JSON document (nccl-tests 2.18.x+, FORMATS.md 2.7).

use super::row::int;
use super::{
    Device, Half, NcclReport, Params, PerIter, Row, choose_error, empty_report, version_from_code,
};
use crate::parse::text::{num, push_capped, reject};
use crate::parse::{MAX_STORED_ROWS, Status, mpirun};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A value read whatever JSON gave: the converter's answer, or nothing when the value is of
/// another shape (the document stays readable around one odd field, as nccl-tests wrote it).
macro_rules! lenient {
    ($name:ident, $ty:ty, $conv:expr) => {
        fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<$ty>, D::Error> {
            let v = Value::deserialize(d)?;
            let conv: fn(&Value) -> Option<$ty> = $conv;
            Ok(conv(&v))
        }
    };
}

/// A number; `"nan"` (how nccl-tests writes NaN) and other quoted numbers too; finite only.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64().filter(|f| f.is_finite()),
        Value::String(s) => num(s.trim()),
        _ => None,
    }
}

lenient!(jnum, f64, number);
lenient!(juint, u64, |v| number(v)
    .filter(|f| *f >= 0.0)
    .map(|f| f.round() as u64));
// jsonBool writes the strings "true"/"false"; real booleans and 0/1 too
lenient!(jbool, bool, |v| match v {
    Value::Bool(b) => Some(*b),
    Value::String(s) if s == "true" => Some(true),
    Value::String(s) if s == "false" => Some(false),
    Value::Number(n) => n.as_u64().map(|n| n != 0),
    _ => None,
});
lenient!(jstr, String, |v| v.as_str().map(|s| s.trim().to_string()));
lenient!(jfirst, String, |v| v
    .as_array()?
    .first()?
    .as_str()
    .map(str::to_string));
lenient!(jstrings, Vec<String>, |v| v.as_array().map(|a| {
    a.iter()
        .filter_map(|e| e.as_str().map(str::to_string))
        .collect()
}));

/// A list whose entries are each read on their own: one that does not read is left out.
fn each<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|i| serde_json::from_value(i).ok())
            .collect(),
        _ => Vec::new(),
    })
}

/// A number under a key that is there, whatever it holds (`Some(None)` when it is no number).
fn jnum_key<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<f64>>, D::Error> {
    Ok(Some(number(&Value::deserialize(d)?)))
}

/// An object under a key that is there, whatever it holds (`Some(None)` when it is no object).
fn object_key<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    object(d).map(Some)
}

/// An object read on its own: one of another shape is none.
fn object<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Ok(match Value::deserialize(d)? {
        v @ Value::Object(_) => serde_json::from_value(v).ok(),
        _ => None,
    })
}

/// The `-J` document: every field optional, unknown fields ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Doc {
    /// The command line: its first word is the binary.
    #[serde(deserialize_with = "jfirst")]
    args: Option<String>,
    #[serde(deserialize_with = "juint")]
    nccl_version: Option<u64>,
    #[serde(deserialize_with = "jstrings")]
    env: Option<Vec<String>>,
    #[serde(deserialize_with = "object")]
    config: Option<Config>,
    #[serde(deserialize_with = "each")]
    results: Vec<Entry>,
    #[serde(deserialize_with = "object")]
    out_of_bounds: Option<OutOfBounds>,
    /// The footer: its presence says the run finished.
    #[serde(deserialize_with = "object_key")]
    average_bus_bandwidth: Option<Option<Average>>,
    #[serde(deserialize_with = "jstrings")]
    errors: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Config {
    #[serde(deserialize_with = "juint")]
    nthreads: Option<u64>,
    #[serde(deserialize_with = "juint")]
    ngpus: Option<u64>,
    #[serde(deserialize_with = "juint")]
    minimum_bytes: Option<u64>,
    #[serde(deserialize_with = "juint")]
    maximum_bytes: Option<u64>,
    #[serde(deserialize_with = "juint")]
    step_factor: Option<u64>,
    #[serde(deserialize_with = "juint")]
    step_bytes: Option<u64>,
    #[serde(deserialize_with = "juint")]
    warmup_iters: Option<u64>,
    #[serde(deserialize_with = "juint")]
    iterations: Option<u64>,
    #[serde(deserialize_with = "juint")]
    aggregated_iterations: Option<u64>,
    #[serde(deserialize_with = "juint")]
    validation: Option<u64>,
    #[serde(deserialize_with = "juint")]
    graph: Option<u64>,
    #[serde(deserialize_with = "juint")]
    unalign: Option<u64>,
    #[serde(deserialize_with = "each")]
    devices: Vec<JDevice>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct JDevice {
    #[serde(deserialize_with = "juint")]
    rank: Option<u64>,
    #[serde(deserialize_with = "juint")]
    group: Option<u64>,
    #[serde(deserialize_with = "juint")]
    pid: Option<u64>,
    #[serde(deserialize_with = "jstr")]
    hostname: Option<String>,
    #[serde(deserialize_with = "juint")]
    device: Option<u64>,
    #[serde(deserialize_with = "jstr")]
    device_hex: Option<String>,
    #[serde(deserialize_with = "jstr")]
    device_info: Option<String>,
}

/// One `results` entry: a message size.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Entry {
    #[serde(deserialize_with = "juint")]
    size: Option<u64>,
    #[serde(deserialize_with = "juint")]
    count: Option<u64>,
    #[serde(rename = "type", deserialize_with = "jstr")]
    dtype: Option<String>,
    #[serde(deserialize_with = "jstr")]
    redop: Option<String>,
    #[serde(deserialize_with = "jstr")]
    root: Option<String>,
    #[serde(deserialize_with = "object")]
    out_of_place: Option<JHalf>,
    #[serde(deserialize_with = "object")]
    in_place: Option<JHalf>,
    #[serde(deserialize_with = "object")]
    out_of_place_per_iter: Option<JPerIter>,
    #[serde(deserialize_with = "object")]
    in_place_per_iter: Option<JPerIter>,
}

/// One half of an entry; `cpu_time` instead of `time` with `-C 1`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct JHalf {
    #[serde(deserialize_with = "jnum")]
    time: Option<f64>,
    /// `-C 1`: the key alone says the time is the CPU's.
    #[serde(deserialize_with = "jnum_key")]
    cpu_time: Option<Option<f64>>,
    #[serde(deserialize_with = "jnum")]
    alg_bw: Option<f64>,
    #[serde(deserialize_with = "jnum")]
    bus_bw: Option<f64>,
    #[serde(deserialize_with = "juint")]
    nwrong: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct JPerIter {
    #[serde(deserialize_with = "jnum")]
    min_us: Option<f64>,
    #[serde(deserialize_with = "jnum")]
    max_us: Option<f64>,
    #[serde(deserialize_with = "jnum")]
    p99_us: Option<f64>,
    #[serde(deserialize_with = "jnum")]
    cv_pct: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct OutOfBounds {
    #[serde(deserialize_with = "juint")]
    count: Option<u64>,
    #[serde(deserialize_with = "jbool")]
    okay: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Average {
    #[serde(deserialize_with = "jnum")]
    bandwidth: Option<f64>,
    #[serde(deserialize_with = "jbool")]
    okay: Option<bool>,
}

impl JHalf {
    fn half(&self, per: Option<&JPerIter>) -> Option<Half> {
        Some(Half {
            time_us: self.time.or(self.cpu_time.flatten())?,
            algbw_gbs: self.alg_bw?,
            busbw_gbs: self.bus_bw?,
            wrong: self.nwrong,
            max_error: None,
            per_iter: per.map(|p| PerIter {
                min_us: p.min_us,
                max_us: p.max_us,
                p99_us: p.p99_us,
                cv_pct: p.cv_pct,
            }),
        })
    }
}

/// The first impossible value of a half, named: negative, or a bandwidth above what any
/// collective moves (see [`crate::parse::ceiling`]).
fn negative_in(name: &str, h: &Half) -> Option<String> {
    let per = h.per_iter.as_ref();
    for (col, v) in [("algbw", h.algbw_gbs), ("busbw", h.busbw_gbs)] {
        if let Some(why) = crate::parse::ceiling::collective_gbs(v) {
            let v = crate::parse::ceiling::shown(v);
            return Some(format!("{name} {col} `{v}` GB/s {why}"));
        }
    }
    [
        ("time", Some(h.time_us)),
        ("algbw", Some(h.algbw_gbs)),
        ("busbw", Some(h.busbw_gbs)),
        ("i_min", per.and_then(|p| p.min_us)),
        ("i_max", per.and_then(|p| p.max_us)),
        ("i_p99", per.and_then(|p| p.p99_us)),
        ("i_cv%", per.and_then(|p| p.cv_pct)),
    ]
    .into_iter()
    .find_map(|(col, v)| {
        v.filter(|v| *v < 0.0)
            .map(|v| format!("{name} {col} `{v}` is negative"))
    })
}

/// Parse the `-J/--output_file` JSON document. A file cut short (the run died before
/// finalising it) is not valid JSON: it is reported `incomplete` without rows.
pub fn parse_json(text: &str) -> NcclReport {
    let doc: Value = match serde_json::from_str(text.trim()) {
        Ok(v) => v,
        Err(_) => {
            let looks = text.contains("\"results\"") || text.contains("\"config\"");
            let mut r = empty_report(if looks {
                Status::Incomplete
            } else {
                Status::Unrecognized
            });
            r.layout = looks.then(|| "json".to_string());
            return r;
        }
    };
    let is_doc = doc
        .as_object()
        .is_some_and(|o| o.contains_key("results") || o.contains_key("config"));
    let Some(doc) = is_doc
        .then(|| serde_json::from_value::<Doc>(doc).ok())
        .flatten()
    else {
        return empty_report(Status::Unrecognized);
    };
    let mut r = empty_report(Status::Incomplete);
    r.layout = Some("json".into());
    r.collective = doc
        .args
        .as_deref()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string());
    r.nccl_version = doc.nccl_version.and_then(version_from_code);
    for kv in doc.env.iter().flatten() {
        if let Some((k, v)) = kv.split_once('=')
            && k.starts_with("NCCL_")
        {
            r.env.insert(k.to_string(), v.to_string());
        }
    }
    if let Some(cfg) = &doc.config {
        read_config(cfg, &mut r);
    }
    for e in &doc.results {
        read_entry(e, &mut r);
    }
    if let Some(o) = &doc.out_of_bounds {
        r.out_of_bounds = o.count;
        r.out_of_bounds_ok = o.okay;
    }
    let footer = doc.average_bus_bandwidth.is_some();
    if let Some(a) = doc.average_bus_bandwidth.flatten() {
        r.avg_busbw_gbs = a.bandwidth;
        if let Some(v) = r.avg_busbw_gbs {
            let why = if v < 0.0 {
                Some("is negative".to_string())
            } else {
                crate::parse::ceiling::collective_gbs(v)
            };
            if let Some(why) = why {
                r.avg_busbw_gbs = None;
                let v = crate::parse::ceiling::shown(v);
                let why = format!("average bus bandwidth `{v}` GB/s {why}");
                reject(&mut r.rejected, 1, why, &mut r.not_stored);
            }
        }
        r.avg_busbw_check = a.okay.map(|ok| if ok { "OK" } else { "FAILED" }.into());
    }
    r.nccl_last_error = doc
        .errors
        .into_iter()
        .flatten()
        .find(|s| !s.trim().is_empty());
    finish(&mut r, footer);
    r
}

/// One `results` entry: its row, or the rejection of an impossible value.
fn read_entry(e: &Entry, r: &mut NcclReport) {
    let (Some(size), Some(count)) = (e.size, e.count) else {
        return;
    };
    if e.out_of_place
        .as_ref()
        .is_some_and(|o| o.cpu_time.is_some())
    {
        r.cputime = true;
    }
    let row = Row {
        size_bytes: size,
        count,
        dtype: e.dtype.clone().unwrap_or_default(),
        redop: e.redop.clone(),
        root: e.root.as_deref().and_then(int),
        out_of_place: e
            .out_of_place
            .as_ref()
            .and_then(|h| h.half(e.out_of_place_per_iter.as_ref())),
        in_place: e
            .in_place
            .as_ref()
            .and_then(|h| h.half(e.in_place_per_iter.as_ref())),
        timestamp: None,
    };
    let bad = [
        ("out-of-place", &row.out_of_place),
        ("in-place", &row.in_place),
    ]
    .into_iter()
    .find_map(|(name, h)| h.as_ref().and_then(|h| negative_in(name, h)));
    match bad {
        // the document starts the capture: its values are all "on line 1"
        Some(why) => reject(
            &mut r.rejected,
            1,
            format!("size {size}: {why}: no run prints that, row rejected"),
            &mut r.not_stored,
        ),
        None => push_capped(&mut r.rows, row, MAX_STORED_ROWS, &mut r.not_stored),
    }
}

/// What follows from the rows and devices read: ranks, hosts, the `#wrong` total, the error
/// and the status.
fn finish(r: &mut NcclReport, footer: bool) {
    let mut ranks: Vec<u64> = r.devices.iter().map(|d| d.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    r.ranks = ranks.len();
    r.processes = r.devices.len();
    for d in &r.devices {
        if !r.hosts.contains(&d.host) {
            r.hosts.push(d.host.clone());
        }
    }
    let wrong: Vec<u64> = r
        .rows
        .iter()
        .flat_map(|x| [&x.out_of_place, &x.in_place])
        .filter_map(|h| h.as_ref().and_then(|h| h.wrong))
        .collect();
    r.wrong_total =
        (!wrong.is_empty()).then(|| wrong.iter().fold(0u64, |a, b| a.saturating_add(*b)));
    r.error = choose_error(
        &mpirun::parse(""),
        None,
        r.out_of_bounds,
        r.out_of_bounds_ok,
        r.avg_busbw_check.as_deref(),
        r.avg_busbw_gbs,
    );
    r.status = if r.error.is_some() {
        Status::Error
    } else if !r.rows.is_empty() && footer && r.rejected.is_empty() {
        Status::Ok
    } else {
        Status::Incomplete
    };
}

/// `config`: the parameters and the device list.
fn read_config(cfg: &Config, r: &mut NcclReport) {
    r.params = Some(Params {
        nthread: cfg.nthreads,
        ngpus: cfg.ngpus,
        min_bytes: cfg.minimum_bytes,
        max_bytes: cfg.maximum_bytes,
        step: cfg
            .step_factor
            .map(|f| format!("{f}(factor)"))
            .or_else(|| cfg.step_bytes.map(|b| format!("{b}(bytes)"))),
        warmup_iters: cfg.warmup_iters,
        iters: cfg.iterations,
        agg_iters: cfg.aggregated_iterations,
        validation: cfg.validation,
        graph: cfg.graph,
        unalign: cfg.unalign,
    });
    for d in &cfg.devices {
        let Some(rank) = d.rank else {
            continue;
        };
        r.devices.push(Device {
            rank,
            group: d.group,
            pid: d.pid,
            host: d.hostname.clone().unwrap_or_default(),
            device: d.device,
            bus_id: d.device_hex.clone(),
            name: d.device_info.clone(),
        });
    }
}
