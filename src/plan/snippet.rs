//! What miette is shown of a plan: the text once per plan, shared by its problems, and per
//! problem a window onto it: the lines around the problem's labels, long lines cut down around
//! the labels on them.
//!
//! The text is made inert first: a control character (ESC, BEL, a C1 control; all but line
//! breaks and tabs) or a bidirectional override is shown as `?` per byte, so a plan cannot
//! drive the terminal that prints its diagnostics, and every span still points at the same
//! bytes.
//!
//! Why a window: miette pads underlines with `{:width$}`, and a width past 65,535 panics
//! ("Formatting argument out of range") when a label sits past that column; a line of
//! megabytes printed whole is no use to a reader either; and miette reads a source from its
//! start for every span, so a window keeps rendering 50 problems of a big plan cheap. Lines
//! stay lines (no line break is removed or added): line numbers and the header's column are the
//! file's.

use std::ops::Range;

use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};

/// Lines longer than this (bytes) are cut down to windows around the labels on them.
pub const MAX_LINE: usize = 400;
/// Bytes kept before a label's start and after its end on a long line.
const AROUND: usize = 40;
/// Bytes of a long label kept at its start and at its end (the middle is cut).
const LABEL_HEAD: usize = 60;
const LABEL_TAIL: usize = 20;
/// What stands for the bytes cut out.
const CUT: &str = "…";

/// A plan's text as miette reads it.
pub struct PlanSource {
    name: String,
    text: String,
    /// Where each line starts (after each `\n`).
    line_starts: Vec<usize>,
}

impl std::fmt::Debug for PlanSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanSource")
            .field("name", &self.name)
            .field("bytes", &self.text.len())
            .finish()
    }
}

impl PlanSource {
    pub fn new(name: &str, text: &str) -> PlanSource {
        let text = inert_same_length(text);
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        PlanSource {
            name: crate::text::inert(name).into_owned(),
            text,
            line_starts,
        }
    }

    /// The text miette is shown.
    pub fn inner(&self) -> &str {
        &self.text
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The line (0-based) holding byte `at`.
    fn line_of(&self, at: usize) -> usize {
        self.line_starts
            .partition_point(|s| *s <= at)
            .saturating_sub(1)
    }
}

impl SourceCode for PlanSource {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let c = self.text.as_str().read_span(span, before, after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            c.data(),
            *c.span(),
            c.line(),
            c.column(),
            c.line_count(),
        )))
    }
}

/// Would the terminal act on this character rather than show it? Control characters but the
/// line breaks and the tab, and the bidirectional embeddings, overrides and isolates that
/// reorder what is shown ("Trojan Source").
fn acts_on_terminal(c: char) -> bool {
    (c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with each character the terminal would act on replaced by `?`, one per byte (`??`
/// for a two-byte C1 control): the same length, so spans stay right. A carriage return not
/// followed by a line feed is one too: miette prints it inside a line, where it sends the
/// cursor back over what was printed (found by `tests/plan_fuzz.rs`).
pub fn inert_same_length(text: &str) -> String {
    let lone_cr = |i: usize| text.as_bytes().get(i + 1) != Some(&b'\n');
    let acts = |(i, c): (usize, char)| acts_on_terminal(c) || (c == '\r' && lone_cr(i));
    if !text.char_indices().any(acts) {
        return text.to_string();
    }
    text.char_indices()
        .map(|(i, c)| {
            if acts((i, c)) {
                "?".repeat(c.len_utf8())
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A run of bytes kept from the file: `len` bytes at `orig` in the file, at `view` in the window.
#[derive(Debug, Clone, Copy)]
struct Piece {
    orig: usize,
    view: usize,
    len: usize,
}

/// The plan with its long lines cut down around some labels, offsets mapped both ways.
pub(crate) struct Window<'a> {
    src: &'a PlanSource,
    text: String,
    pieces: Vec<Piece>,
    /// The file's line the window starts at.
    first_line: usize,
}

/// Lines shown around the labels (miette shows one; one more is room to spare).
const CONTEXT_LINES: usize = 2;

impl<'a> Window<'a> {
    /// The lines from `CONTEXT_LINES` before the first label to `CONTEXT_LINES` after the
    /// last, each longer than `MAX_LINE` cut down around the labels on it (its start when none
    /// is). O(lines shown).
    pub(crate) fn new(src: &'a PlanSource, labels: &[Range<usize>]) -> Window<'a> {
        let t = src.text.as_str();
        let first = labels.iter().map(|l| l.start).min().unwrap_or(0);
        let last = labels.iter().map(|l| l.end).max().unwrap_or(0);
        let first_line = src.line_of(first).saturating_sub(CONTEXT_LINES);
        let last_line = (src.line_of(last) + CONTEXT_LINES).min(src.line_starts.len() - 1);
        let mut w = Window {
            src,
            text: String::new(),
            pieces: Vec::new(),
            first_line,
        };
        for line in first_line..=last_line {
            let start = src.line_starts[line];
            let next = src.line_starts.get(line + 1).copied().unwrap_or(t.len());
            let line_text = &t[start..next];
            let end = next - (line_text.len() - line_text.trim_end_matches(['\n', '\r']).len());
            if end - start <= MAX_LINE {
                w.keep(start, next);
            } else {
                w.cut_line(start, end, labels);
                w.keep(end, next);
            }
        }
        w
    }

    fn keep(&mut self, from: usize, to: usize) {
        if to <= from {
            return;
        }
        let view = self.text.len();
        self.text.push_str(&self.src.text[from..to]);
        match self.pieces.last_mut() {
            Some(p) if p.orig + p.len == from && p.view + p.len == view => p.len += to - from,
            _ => self.pieces.push(Piece {
                orig: from,
                view,
                len: to - from,
            }),
        }
    }

    fn cut(&mut self) {
        self.text.push_str(CUT);
    }

    /// A long line `[start, end)`: the bytes around each label on it, the rest cut.
    fn cut_line(&mut self, start: usize, end: usize, labels: &[Range<usize>]) {
        let t = self.src.text.as_str();
        let mut keeps: Vec<(usize, usize)> = Vec::new();
        for l in labels {
            if l.start > end || l.end < start {
                continue;
            }
            let (a, b) = (l.start.max(start), l.end.min(end));
            if b - a <= LABEL_HEAD + LABEL_TAIL {
                keeps.push((a.saturating_sub(AROUND).max(start), (b + AROUND).min(end)));
            } else {
                keeps.push((a.saturating_sub(AROUND).max(start), a + LABEL_HEAD));
                keeps.push((b - LABEL_TAIL, (b + AROUND).min(end)));
            }
        }
        if keeps.is_empty() {
            keeps.push((start, start + MAX_LINE / 2));
        }
        let floor = |mut i: usize| {
            while !t.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        let ceil = |mut i: usize| {
            while !t.is_char_boundary(i) {
                i += 1;
            }
            i
        };
        let mut keeps: Vec<(usize, usize)> = keeps
            .into_iter()
            .map(|(a, b)| (floor(a), ceil(b)))
            .collect();
        keeps.sort_unstable();
        let mut at = start;
        for (a, b) in keeps {
            if b <= at {
                continue;
            }
            if a > at {
                self.cut();
            }
            self.keep(a.max(at), b);
            at = b;
        }
        if at < end {
            self.cut();
        }
    }

    /// A file offset in the window: inside a kept piece, or the end of the piece before a cut.
    pub(crate) fn map(&self, orig: usize) -> usize {
        let i = self.pieces.partition_point(|p| p.orig <= orig);
        match i.checked_sub(1).map(|i| self.pieces[i]) {
            Some(p) => p.view + (orig - p.orig).min(p.len),
            None => 0,
        }
        .min(self.text.len())
    }

    /// A window offset in the file.
    fn unmap(&self, view: usize) -> usize {
        let i = self.pieces.partition_point(|p| p.view <= view);
        match i.checked_sub(1).map(|i| self.pieces[i]) {
            Some(p) => p.orig + (view - p.view).min(p.len),
            None => 0,
        }
    }

    /// A label's span in the window.
    pub(crate) fn map_span(&self, r: &Range<usize>) -> Range<usize> {
        let a = self.map(r.start);
        let b = self.map(r.end).max(a);
        a..b
    }
}

impl SourceCode for Window<'_> {
    fn read_span<'b>(
        &'b self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'b> + 'b>, MietteError> {
        let c = self.text.as_str().read_span(span, before, after)?;
        let mut column = c.column();
        if before == 0 {
            // the header's column is the file's, not the window's
            let orig = self.unmap(span.offset());
            let t = &self.src.text[..orig.min(self.src.text.len())];
            let line_start = t.rfind(['\n', '\r']).map_or(0, |i| i + 1);
            column = orig - line_start;
        }
        Ok(Box::new(MietteSpanContents::new_named(
            self.src.name.clone(),
            c.data(),
            *c.span(),
            c.line() + self.first_line,
            column,
            // miette counts lines from the start of what it reads (and merges two labels'
            // snippets by that count): from the file's start, as the whole file would give
            c.line_count() + self.first_line,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_are_kept_long_ones_cut_around_labels() {
        let long = format!("x = \"{}\", y = 1", "a".repeat(70_000));
        let text = format!("first\n{long}\nlast\n");
        let src = PlanSource::new("p.toml", &text);
        let y = text.find("y = 1").unwrap();
        let label = y..y + 5;
        let w = Window::new(&src, std::slice::from_ref(&label));
        assert!(w.text.len() < 400, "{}", w.text.len());
        assert!(w.text.starts_with("first\n…aaa"), "{}", w.text);
        assert!(w.text.ends_with("y = 1\nlast\n"), "{}", w.text);
        let r = w.map_span(&(y..y + 5));
        assert_eq!(&w.text[r], "y = 1");
        assert_eq!(w.unmap(w.map(y)), y);
        // lines stay lines
        assert_eq!(w.text.lines().count(), text.lines().count());
        assert_eq!(w.first_line, 0);
    }

    #[test]
    fn control_characters_become_one_question_mark_per_byte() {
        let text = "a\u{1b}[2Jb\u{7}c\u{9b}d\u{202e}e\tf\r\ng\rh\n";
        let shown = inert_same_length(text);
        assert_eq!(shown, "a?[2Jb?c??d???e\tf\r\ng?h\n");
        assert_eq!(shown.len(), text.len());
    }

    #[test]
    fn a_long_label_keeps_its_ends() {
        let text = format!("k = \"{}é{}\"\n", "b".repeat(40_000), "c".repeat(40_000));
        let src = PlanSource::new("p.toml", &text);
        let label = 4..text.len() - 1;
        let w = Window::new(&src, std::slice::from_ref(&label));
        let r = w.map_span(&(4..text.len() - 1));
        let shown = &w.text[r];
        assert!(
            shown.starts_with("\"bbb") && shown.ends_with("ccc\""),
            "{shown}"
        );
        assert!(shown.contains(CUT));
        assert!(w.text.len() < 400);
    }
}
