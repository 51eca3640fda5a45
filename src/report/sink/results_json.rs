//! `results.json`: the whole run, versioned (see [`crate::results::RunResults`]). Indented as
//! serde_json's pretty printer does, except that a run of more than
//! [`LINE_PER_JOB_ABOVE`](crate::results::LINE_PER_JOB_ABOVE) jobs has each job (each round,
//! each node's discovery) on one line: a 90,000-job file a person can still open, grep and diff.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::ser::Formatter;

use super::{Sink, write_atomic_with};
use crate::files::output::Existing;
use crate::results::Event;
use crate::results::{LINE_PER_JOB_ABOVE, RunResults};

pub struct ResultsJsonSink {
    dir: PathBuf,
}

impl ResultsJsonSink {
    pub fn new(dir: &Path) -> ResultsJsonSink {
        ResultsJsonSink {
            dir: dir.to_path_buf(),
        }
    }
}

impl Sink for ResultsJsonSink {
    fn name(&self) -> String {
        self.dir.join("results.json").display().to_string()
    }

    fn outputs(&self) -> Vec<(PathBuf, Existing)> {
        vec![(self.dir.join("results.json"), Existing::Nothing)]
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        let Event::Finished(r) = e else {
            return Ok(());
        };
        write_atomic_with(&self.dir, "results.json", |w| write(r, w)).map(|_| ())
    }
}

/// The results as `results.json` holds them (also `run --format json`'s stdout), streamed.
pub fn write(r: &RunResults, w: &mut dyn Write) -> io::Result<()> {
    if r.jobs.len() > LINE_PER_JOB_ABOVE {
        let mut ser = serde_json::Serializer::with_formatter(w, Outline::new(2));
        r.serialize(&mut ser).map_err(io::Error::other)
    } else {
        serde_json::to_writer_pretty(w, r).map_err(io::Error::other)
    }
}

/// serde_json's pretty layout (two spaces) for the outer `depth` levels of nesting, compact
/// inside them: with 2, the top level's fields and each element of its arrays on their own
/// lines.
struct Outline {
    depth: usize,
    /// Containers open now.
    level: usize,
    /// The innermost indented container has a value.
    has_value: bool,
}

impl Outline {
    fn new(depth: usize) -> Outline {
        Outline {
            depth,
            level: 0,
            has_value: false,
        }
    }

    fn indented(&self) -> bool {
        self.level <= self.depth
    }

    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level += 1;
        if self.indented() {
            self.has_value = false;
        }
        w.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        let indented = self.indented();
        self.level -= 1;
        if indented && self.has_value {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(bracket)
    }

    fn indent<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        for _ in 0..self.level {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    /// Before an element or a key: a new line in an indented container, a comma between.
    fn item<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if self.indented() {
            w.write_all(if first { b"\n" } else { b",\n" })?;
            self.indent(w)
        } else if first {
            Ok(())
        } else {
            w.write_all(b",")
        }
    }

    fn item_done(&mut self) {
        if self.indented() {
            self.has_value = true;
        }
    }
}

impl Formatter for Outline {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.item_done();
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(if self.indented() { b": " } else { b":" })
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.item_done();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Outline;
    use serde::Serialize;
    use serde_json::json;

    fn outline(v: &serde_json::Value, depth: usize) -> String {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Outline::new(depth));
        v.serialize(&mut ser).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn deep_enough_it_is_the_pretty_printer() {
        let v = json!({"a": [], "b": {}, "c": [1, {"d": [2, 3], "e": {}}], "f": {"g": null}});
        assert_eq!(
            outline(&v, usize::MAX),
            serde_json::to_string_pretty(&v).unwrap()
        );
        assert_eq!(outline(&v, 0), serde_json::to_string(&v).unwrap());
    }

    #[test]
    fn at_two_levels_each_element_is_one_line() {
        let v = json!({"plan": "p", "jobs": [{"job": "a", "steps": [1, 2]}, {"job": "b"}], "none": [], "summary": {"ok": 1}});
        let text = outline(&v, 2);
        assert_eq!(
            text,
            "{\n  \"plan\": \"p\",\n  \"jobs\": [\n    {\"job\":\"a\",\"steps\":[1,2]},\n    {\"job\":\"b\"}\n  ],\n  \"none\": [],\n  \"summary\": {\n    \"ok\": 1\n  }\n}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }
}
