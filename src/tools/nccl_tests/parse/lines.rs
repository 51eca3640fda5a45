//! Readers of the single lines around the table: the parameter line, a device line, the test's
//! own error lines, the footer's `key : value` shape and the layout name of a column header.

use super::row::{Col, Pre, Schema, uint};
use super::{Device, Params};
use crate::parse::ErrorKind;

pub(super) fn parse_params(h: &str) -> Params {
    let toks: Vec<&str> = h.split_whitespace().collect();
    let mut p = Params::default();
    let next = |i: usize| toks.get(i + 1).copied();
    let next_u = |i: usize| next(i).and_then(uint);
    for (i, t) in toks.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|j| toks.get(j)).copied();
        match *t {
            "nThread" => p.nthread = next_u(i),
            "nGpus" => p.ngpus = next_u(i),
            "minBytes" => p.min_bytes = next_u(i),
            "maxBytes" => p.max_bytes = next_u(i),
            "step:" => p.step = next(i).map(str::to_string),
            "iters:" => match prev {
                Some("warmup") => p.warmup_iters = next_u(i),
                Some("agg") => p.agg_iters = next_u(i),
                _ => p.iters = next_u(i),
            },
            "validation:" => p.validation = next_u(i),
            "graph:" => p.graph = next_u(i),
            "unalign:" => p.unalign = next_u(i),
            _ => {}
        }
    }
    p
}

/// `Rank  0 Group  0 Pid  1234 on spark-a device  0 [0000:01:00] NVIDIA GB10` (after `#`).
pub(super) fn parse_device(h: &str) -> Option<Device> {
    let toks: Vec<&str> = h.split_whitespace().collect();
    if toks.first() != Some(&"Rank") {
        return None;
    }
    let after = |key: &str| {
        toks.iter()
            .position(|t| *t == key)
            .and_then(|i| toks.get(i + 1))
            .copied()
    };
    let rank = toks.get(1).and_then(|t| uint(t))?;
    let host = after("on")?.to_string();
    let dev_pos = toks.iter().position(|t| *t == "device");
    let bus_pos = dev_pos.map(|p| p + 2);
    let bus_id = bus_pos
        .and_then(|p| toks.get(p))
        .filter(|t| t.starts_with('['))
        .map(|t| t.trim_matches(['[', ']']).to_string());
    let name = bus_pos.and_then(|p| {
        let rest = toks.get(p + 1..)?;
        (!rest.is_empty()).then(|| rest.join(" "))
    });
    Some(Device {
        rank,
        group: after("Group").and_then(uint),
        pid: after("Pid").and_then(uint),
        host,
        device: after("device").and_then(uint),
        bus_id,
        name,
    })
}

pub(super) fn error_line(t: &str) -> Option<(ErrorKind, bool)> {
    // every error line below says one of these: most lines are ruled out in three searches
    if !(t.contains("failure") || t.contains("Test timeout") || t.contains("Invalid number")) {
        return None;
    }
    // (kind, primary): propagation lines (" .. host pid N: Test failure") are secondary
    if t.contains("Test NCCL failure") {
        return Some((ErrorKind::NcclFailure, true));
    }
    if t.contains("Test CUDA failure") {
        return Some((ErrorKind::CudaFailure, true));
    }
    if t.contains("Test timeout") {
        return Some((ErrorKind::Timeout, true));
    }
    if t.contains("Invalid number of GPUs") {
        return Some((ErrorKind::Other, true));
    }
    // 2017-2018: "NCCL failure common.cu:916 '...'" / "CUDA failure ..." possibly after "host: "
    let body = t.split_once(": ").map(|(_, b)| b).unwrap_or(t);
    for (word, kind) in [
        ("NCCL failure ", ErrorKind::NcclFailure),
        ("CUDA failure ", ErrorKind::CudaFailure),
    ] {
        if (t.starts_with(word) || body.starts_with(word)) && t.contains(".cu") {
            return Some((kind, true));
        }
    }
    if t.contains(": Test failure ") || t.starts_with("Test failure ") {
        return Some((ErrorKind::Other, false));
    }
    None
}

pub(super) fn after_colon(h: &str) -> Vec<&str> {
    h.split_once(':')
        .map(|(_, r)| r.split_whitespace().collect())
        .unwrap_or_default()
}

pub(super) fn layout_name(header_raw: &str, schema: &Schema, version_line: bool) -> &'static str {
    if schema.pre.first() == Some(&Pre::Size) && header_raw.contains("bytes") {
        return "v1-2017";
    }
    let has_err = schema.halves.iter().flatten().any(|c| *c == Col::Err);
    if has_err {
        if header_raw.split_whitespace().any(|t| t == "bytes") {
            return "v1-2017";
        }
        return "float-error-2019";
    }
    if version_line || header_raw.contains("busbw  #wrong") {
        "formatter-2025"
    } else {
        "wrong-count-2022"
    }
}
