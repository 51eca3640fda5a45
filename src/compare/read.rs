//! A run's `results.json` read back, as a stream, in three passes over the file (never the
//! whole document as one JSON value in memory): its `format_version` first (a version this
//! build does not read is refused, naming the ones it does), then every typed field, a schema
//! error naming the field (`jobs[1].verdicts[0].measured`) and its line and column, never a
//! panic, and dates a run cannot have (past the year 9999) refused; then each job's `parsed`
//! output, read through its tool's report type.

use std::io::Read;

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::results::{RESULTS_FORMAT_VERSION, RunResults};

/// The versions of results.json this build reads.
pub const READS: [u32; 1] = [RESULTS_FORMAT_VERSION];

/// The last millisecond of the year 9999 (9999-12-31T23:59:59.999Z): the latest date shown.
pub const MAX_UNIX_MS: u64 = 253_402_300_799_999;

/// Why text is not a run's results.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("not JSON: line {line}, column {column}: {msg}")]
    Syntax {
        line: usize,
        column: usize,
        msg: String,
    },
    #[error("line {line}, column {column}: `{field}`: {msg}")]
    Schema {
        field: String,
        line: usize,
        column: usize,
        msg: String,
    },
    #[error("cannot be read: {0}")]
    Io(String),
    #[error("not a fabricplan results.json (no `format_version`, `plan` or `jobs`)")]
    NotResults,
    #[error("format_version {0}: this build reads format_version {reads}", reads = reads())]
    Version(u64),
    #[error("`{field}` is {ms}, a date past the year 9999")]
    Date { field: &'static str, ms: u64 },
    #[error("`jobs[{index}].parsed` (job {job}): its {tool} output does not read as one: {msg}")]
    Parsed {
        index: usize,
        job: String,
        tool: String,
        msg: String,
    },
}

fn reads() -> String {
    READS.map(|v| v.to_string()).join(", ")
}

impl ResultsError {
    fn of(e: serde_json::Error, field: Option<String>) -> ResultsError {
        use serde_json::error::Category;
        let (line, column) = (e.line(), e.column());
        // serde_json's message ends with its own position: said once, in front
        let msg = e.to_string();
        let msg = match msg.rfind(" at line ") {
            Some(i) => msg[..i].to_string(),
            None => msg,
        };
        match e.classify() {
            Category::Io => ResultsError::Io(msg),
            Category::Data => ResultsError::Schema {
                field: field
                    .filter(|f| f != ".")
                    .unwrap_or_else(|| "(top level)".into()),
                line,
                column,
                msg,
            },
            Category::Syntax | Category::Eof => ResultsError::Syntax { line, column, msg },
        }
    }
}

/// What is read first: the version, and that the document is a run's at all.
#[derive(Deserialize)]
struct Head {
    format_version: Option<serde_json::Value>,
    plan: Option<IgnoredAny>,
    jobs: Option<IgnoredAny>,
}

/// Check a results document's head: JSON, `format_version` one this build reads, `plan` and
/// `jobs` present. The document is read through (without keeping it).
pub fn check_head(r: impl Read) -> Result<(), ResultsError> {
    let mut de =
        serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(1 << 16, r));
    let head = Head::deserialize(&mut de).map_err(|e| ResultsError::of(e, None))?;
    de.end().map_err(|e| ResultsError::of(e, None))?;
    let version = match head.format_version {
        Some(v) => v,
        None => return Err(ResultsError::NotResults),
    };
    let Some(v) = version.as_u64() else {
        return Err(ResultsError::NotResults);
    };
    if !READS.iter().any(|r| u64::from(*r) == v) {
        return Err(ResultsError::Version(v));
    }
    if head.plan.is_none() || head.jobs.is_none() {
        return Err(ResultsError::NotResults);
    }
    Ok(())
}

/// Read a results document's typed fields (its head checked before, see [`check_head`]),
/// streamed: fields this version does not know are ignored, missing ones take their defaults.
/// Each job's `parsed` output is read by [`outputs_from`].
pub fn results_from(r: impl Read) -> Result<RunResults, ResultsError> {
    let mut de =
        serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(1 << 16, r));
    let mut track = serde_path_to_error::Track::new();
    let pd = serde_path_to_error::Deserializer::new(&mut de, &mut track);
    let r = match RunResults::deserialize(pd) {
        Ok(r) => r,
        Err(e) => return Err(ResultsError::of(e, Some(track.path().to_string()))),
    };
    de.end().map_err(|e| ResultsError::of(e, None))?;
    for (field, ms) in [
        ("started_unix_ms", r.started_unix_ms),
        ("finished_unix_ms", r.finished_unix_ms),
    ] {
        if ms > MAX_UNIX_MS {
            return Err(ResultsError::Date { field, ms });
        }
    }
    Ok(r)
}

/// Only the jobs' `parsed` outputs of a document.
#[derive(Deserialize)]
struct Outputs {
    #[serde(default)]
    jobs: Vec<JobOutput>,
}

#[derive(Deserialize)]
struct JobOutput {
    #[serde(default)]
    parsed: Option<serde_json::Value>,
}

/// Read each job's `parsed` output into `results` (read by [`results_from`] from the same
/// document), through the report type of its tool; a tool this build does not know leaves it
/// empty.
pub fn outputs_from(r: impl Read, results: &mut RunResults) -> Result<(), ResultsError> {
    let mut de =
        serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(1 << 16, r));
    let outs = Outputs::deserialize(&mut de).map_err(|e| ResultsError::of(e, None))?;
    for (index, (job, out)) in results.jobs.iter_mut().zip(outs.jobs).enumerate() {
        let Some(out) = out.parsed.filter(|o| !o.is_null()) else {
            continue;
        };
        let name = out.get("tool").and_then(|t| t.as_str()).unwrap_or_default();
        let Some(tool) = crate::kinds::tool(name) else {
            continue;
        };
        job.parsed = Some(tool.read(out).map_err(|e| ResultsError::Parsed {
            index,
            job: job.job.clone(),
            tool: tool.name().to_string(),
            msg: e.to_string(),
        })?);
    }
    Ok(())
}

/// Read a run's `results.json` text (see [`check_head`], [`results_from`], [`outputs_from`]).
pub fn parse_results(text: &str) -> Result<RunResults, ResultsError> {
    check_head(text.as_bytes())?;
    let mut r = results_from(text.as_bytes())?;
    outputs_from(text.as_bytes(), &mut r)?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse_results(text).unwrap_err().to_string()
    }

    #[test]
    fn errors_say_where() {
        let ok = r#"{"format_version": 1, "plan": "p", "jobs": []}"#;
        assert_eq!(parse_results(ok).unwrap().plan, "p");
        assert_eq!(
            err(r#"{"format_version": 2, "plan": "p", "jobs": []}"#),
            "format_version 2: this build reads format_version 1"
        );
        assert!(err(r#"{"plan": "p"}"#).starts_with("not a fabricplan results.json"));
        let e = err(
            "{\"format_version\": 1, \"plan\": \"p\",\n \"jobs\": [{\"verdicts\": [{\"measured\": \"x\"}]}]}",
        );
        assert!(e.starts_with("line 2, column "), "{e}");
        assert!(e.contains("`jobs[0].verdicts[0].measured`"), "{e}");
        let e = err("{\"format_version\": 1,\n\"plan\": ");
        assert!(e.starts_with("not JSON: line 2, column 8"), "{e}");
        assert!(!e.contains(" at line "), "the position once: {e}");
        let deep = format!(
            "{{\"format_version\": 1, \"plan\": \"p\", \"jobs\": [{{\"parsed\": {}{}}}]}}",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        assert!(err(&deep).contains("recursion limit"), "{}", err(&deep));
        let e = err(
            r#"{"format_version": 1, "plan": "p", "jobs": [], "started_unix_ms": 253402300800000}"#,
        );
        assert_eq!(
            e,
            "`started_unix_ms` is 253402300800000, a date past the year 9999"
        );
        // trailing text is an error too
        assert!(err(&format!("{ok} x")).starts_with("not JSON"));
    }
}
