//! The `-J/--output_file` JSON document (nccl-tests 2.18.x+, FORMATS.md 2.7).

use super::row::int;
use super::{
    Device, Half, NcclReport, Params, PerIter, Row, choose_error, empty_report, version_from_code,
};
use crate::parse::text::{num, push_capped, reject};
use crate::parse::{MAX_STORED_ROWS, Status, mpirun};

fn jnum(v: Option<&serde_json::Value>) -> Option<f64> {
    match v? {
        serde_json::Value::Number(n) => n.as_f64().filter(|f| f.is_finite()),
        // "nan" is how nccl-tests writes NaN; numbers are never quoted otherwise
        serde_json::Value::String(s) => num(s.trim()),
        _ => None,
    }
}

fn juint(v: Option<&serde_json::Value>) -> Option<u64> {
    let f = jnum(v)?;
    (f >= 0.0).then_some(f.round() as u64)
}

/// jsonBool writes the strings "true"/"false"; accept real booleans too.
fn jbool(v: Option<&serde_json::Value>) -> Option<bool> {
    match v? {
        serde_json::Value::Bool(b) => Some(*b),
        serde_json::Value::String(s) => match s.as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
        serde_json::Value::Number(n) => n.as_u64().map(|n| n != 0),
        _ => None,
    }
}

fn jstr(v: Option<&serde_json::Value>) -> Option<String> {
    v?.as_str().map(|s| s.trim().to_string())
}

fn jhalf(v: Option<&serde_json::Value>, per: Option<&serde_json::Value>) -> Option<Half> {
    let o = v?.as_object()?;
    let time = jnum(o.get("time")).or_else(|| jnum(o.get("cpu_time")))?;
    let per_iter = per.and_then(|p| p.as_object()).map(|p| PerIter {
        min_us: jnum(p.get("min_us")),
        max_us: jnum(p.get("max_us")),
        p99_us: jnum(p.get("p99_us")),
        cv_pct: jnum(p.get("cv_pct")),
    });
    Some(Half {
        time_us: time,
        algbw_gbs: jnum(o.get("alg_bw"))?,
        busbw_gbs: jnum(o.get("bus_bw"))?,
        wrong: juint(o.get("nwrong")),
        max_error: None,
        per_iter,
    })
}

/// The first negative value of a half, named.
fn negative_in(name: &str, h: &Half) -> Option<String> {
    let per = h.per_iter.as_ref();
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
    let doc: serde_json::Value = match serde_json::from_str(text.trim()) {
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
    let Some(obj) = doc.as_object() else {
        return empty_report(Status::Unrecognized);
    };
    if !obj.contains_key("results") && !obj.contains_key("config") {
        return empty_report(Status::Unrecognized);
    }
    let mut r = empty_report(Status::Incomplete);
    r.layout = Some("json".into());
    r.collective = obj
        .get("args")
        .and_then(|a| a.as_array())
        .and_then(|a| a.first())
        .and_then(|p| p.as_str())
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string());
    r.nccl_version = juint(obj.get("nccl_version")).and_then(version_from_code);
    if let Some(env) = obj.get("env").and_then(|e| e.as_array()) {
        for kv in env.iter().filter_map(|e| e.as_str()) {
            if let Some((k, v)) = kv.split_once('=') {
                if k.starts_with("NCCL_") {
                    r.env.insert(k.to_string(), v.to_string());
                }
            }
        }
    }
    if let Some(cfg) = obj.get("config").and_then(|c| c.as_object()) {
        read_config(cfg, &mut r);
    }
    for res in obj
        .get("results")
        .and_then(|d| d.as_array())
        .into_iter()
        .flatten()
    {
        let (Some(size), Some(count)) = (juint(res.get("size")), juint(res.get("count"))) else {
            continue;
        };
        let oop = res.get("out_of_place");
        if oop.and_then(|o| o.get("cpu_time")).is_some() {
            r.cputime = true;
        }
        let row = Row {
            size_bytes: size,
            count,
            dtype: jstr(res.get("type")).unwrap_or_default(),
            redop: jstr(res.get("redop")),
            root: jstr(res.get("root")).and_then(|s| int(&s)),
            out_of_place: jhalf(oop, res.get("out_of_place_per_iter")),
            in_place: jhalf(res.get("in_place"), res.get("in_place_per_iter")),
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
    if let Some(o) = obj.get("out_of_bounds") {
        r.out_of_bounds = juint(o.get("count"));
        r.out_of_bounds_ok = jbool(o.get("okay"));
    }
    let mut footer = false;
    if let Some(a) = obj.get("average_bus_bandwidth") {
        footer = true;
        r.avg_busbw_gbs = jnum(a.get("bandwidth"));
        if let Some(v) = r.avg_busbw_gbs.filter(|v| *v < 0.0) {
            r.avg_busbw_gbs = None;
            let why = format!("average bus bandwidth `{v}` GB/s is negative");
            reject(&mut r.rejected, 1, why, &mut r.not_stored);
        }
        r.avg_busbw_check = jbool(a.get("okay")).map(|ok| if ok { "OK" } else { "FAILED" }.into());
    }
    r.nccl_last_error = obj
        .get("errors")
        .and_then(|e| e.as_array())
        .into_iter()
        .flatten()
        .filter_map(|e| e.as_str())
        .find(|s| !s.trim().is_empty())
        .map(str::to_string);
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
    r
}

/// `config`: the parameters and the device list.
fn read_config(cfg: &serde_json::Map<String, serde_json::Value>, r: &mut NcclReport) {
    r.params = Some(Params {
        nthread: juint(cfg.get("nthreads")),
        ngpus: juint(cfg.get("ngpus")),
        min_bytes: juint(cfg.get("minimum_bytes")),
        max_bytes: juint(cfg.get("maximum_bytes")),
        step: juint(cfg.get("step_factor"))
            .map(|f| format!("{f}(factor)"))
            .or_else(|| juint(cfg.get("step_bytes")).map(|b| format!("{b}(bytes)"))),
        warmup_iters: juint(cfg.get("warmup_iters")),
        iters: juint(cfg.get("iterations")),
        agg_iters: juint(cfg.get("aggregated_iterations")),
        validation: juint(cfg.get("validation")),
        graph: juint(cfg.get("graph")),
        unalign: juint(cfg.get("unalign")),
    });
    for d in cfg
        .get("devices")
        .and_then(|d| d.as_array())
        .into_iter()
        .flatten()
    {
        let Some(rank) = juint(d.get("rank")) else {
            continue;
        };
        r.devices.push(Device {
            rank,
            group: juint(d.get("group")),
            pid: juint(d.get("pid")),
            host: jstr(d.get("hostname")).unwrap_or_default(),
            device: juint(d.get("device")),
            bus_id: jstr(d.get("device_hex")),
            name: jstr(d.get("device_info")),
        });
    }
}
