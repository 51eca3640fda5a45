//! Plan diagnostics: every problem of a plan, each pointing at its span with a help line.
//! Collected, never thrown one at a time: a bad plan gets all of its problems at once.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use miette::{Diagnostic, LabeledSpan, Severity, SourceSpan};

use super::snippet::{PlanSource, Window};

/// One problem in a plan file.
#[derive(Debug, Clone)]
pub struct Problem {
    pub severity: Severity,
    /// Stable machine-readable code, e.g. `plan::unknown-node`.
    pub code: &'static str,
    /// Lowercase fragment with names in backticks.
    pub message: String,
    /// Primary label: (span, text).
    pub primary: Option<(Range<usize>, String)>,
    /// Secondary labels (the other place that disagrees).
    pub secondary: Vec<(Range<usize>, String)>,
    pub help: Option<String>,
}

impl Problem {
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Problem {
            severity: Severity::Error,
            code,
            message: message.into(),
            primary: None,
            secondary: Vec::new(),
            help: None,
        }
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Problem {
            severity: Severity::Warning,
            ..Problem::error(code, message)
        }
    }

    pub fn at(mut self, span: Range<usize>, label: impl Into<String>) -> Self {
        self.primary = Some((span, label.into()));
        self
    }

    pub fn also(mut self, span: Range<usize>, label: impl Into<String>) -> Self {
        self.secondary.push((span, label.into()));
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        matches!(self.severity, Severity::Error)
    }
}

/// A problem bound to its source, renderable by miette. The source is shared by every problem
/// of a plan, never copied per problem.
#[derive(Debug)]
pub struct SourcedProblem {
    pub problem: Problem,
    pub src: Arc<PlanSource>,
}

impl std::fmt::Display for SourcedProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.problem.message)
    }
}

impl std::error::Error for SourcedProblem {}

impl Diagnostic for SourcedProblem {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(self.problem.code))
    }

    fn severity(&self) -> Option<Severity> {
        Some(self.problem.severity)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.problem
            .help
            .as_ref()
            .map(|h| Box::new(h.clone()) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&*self.src)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let labels = labels_of(&self.problem, |r| r.clone());
        (!labels.is_empty()).then(|| Box::new(labels.into_iter()) as Box<dyn Iterator<Item = _>>)
    }
}

/// A problem's labels, primary first, each span passed through `map`.
fn labels_of(p: &Problem, map: impl Fn(&Range<usize>) -> Range<usize>) -> Vec<LabeledSpan> {
    let mut labels = Vec::new();
    if let Some((span, text)) = &p.primary {
        labels.push(LabeledSpan::new_primary_with_span(
            Some(shown(text)),
            SourceSpan::from(map(span)),
        ));
    }
    for (span, text) in &p.secondary {
        labels.push(LabeledSpan::new_with_span(
            Some(shown(text)),
            SourceSpan::from(map(span)),
        ));
    }
    labels
}

/// Characters of a message, label or help line shown: a name of 70,000 characters in a
/// message is cut, not wrapped over a thousand lines.
const MAX_TEXT: usize = 600;

/// A message, label or help text as shown: control characters escaped (`\x1b`: a plan's
/// names reach the messages), cut at `MAX_TEXT`.
fn shown(s: &str) -> String {
    // control and bidirectional characters escaped, so a plan's text cannot reorder a line
    let s = crate::text::inert(s);
    if s.len() <= MAX_TEXT {
        return s.into_owned();
    }
    let mut end = MAX_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Lines a label may cover before it is cut to its first line (a table or list of thousands of
/// lines is pointed at, not printed).
const MAX_LABEL_LINES: usize = 8;

/// A span inside the text, and at most `MAX_LABEL_LINES` long.
fn bounded(r: &Range<usize>, text: &str) -> Range<usize> {
    let end = r.end.min(text.len());
    let mut start = r.start.min(end);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let covered = &text.as_bytes()[start..end];
    if covered.iter().filter(|b| **b == b'\n').count() <= MAX_LABEL_LINES {
        return start..end;
    }
    let line_end = covered
        .iter()
        .position(|b| *b == b'\n' || *b == b'\r')
        .map_or(end, |i| start + i);
    start..line_end
}

/// One problem as rendered: its labels bounded, on the plan or on a window of it.
struct Shown<'a> {
    problem: &'a Problem,
    labels: Vec<LabeledSpan>,
    source: &'a dyn miette::SourceCode,
}

impl std::fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.problem.message)
    }
}

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&shown(&self.problem.message))
    }
}

impl std::error::Error for Shown<'_> {}

impl Diagnostic for Shown<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(self.problem.code))
    }

    fn severity(&self) -> Option<Severity> {
        Some(self.problem.severity)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.problem
            .help
            .as_ref()
            .map(|h| Box::new(shown(h)) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        (!self.labels.is_empty())
            .then(|| Box::new(self.labels.iter().cloned()) as Box<dyn Iterator<Item = _>>)
    }
}

/// Problems rendered in full; the rest are counted by code.
pub const MAX_RENDERED: usize = 50;

/// Every problem found in one plan file.
#[derive(Debug)]
pub struct PlanDiagnostics {
    pub path: String,
    pub problems: Vec<SourcedProblem>,
}

impl PlanDiagnostics {
    pub fn new(path: &str, text: &str, problems: Vec<Problem>) -> Self {
        let src = Arc::new(PlanSource::new(path, text));
        PlanDiagnostics {
            path: path.to_string(),
            problems: problems
                .into_iter()
                .map(|problem| SourcedProblem {
                    problem,
                    src: src.clone(),
                })
                .collect(),
        }
    }

    pub fn errors(&self) -> usize {
        self.problems
            .iter()
            .filter(|p| p.problem.is_error())
            .count()
    }

    pub fn warnings(&self) -> usize {
        self.problems.len() - self.errors()
    }

    /// Render the problems with miette's graphical handler: the first `MAX_RENDERED`, then one
    /// line counting the rest by code, so a plan with 40,000 problems prints a screenful, not
    /// hundreds of megabytes.
    pub fn render(&self, color: bool, width: usize) -> String {
        let theme = if color {
            miette::GraphicalTheme::unicode()
        } else {
            miette::GraphicalTheme::unicode_nocolor()
        };
        // words wrap whole: a name or a `KIND:TARGET` is never broken at its hyphen
        let handler = miette::GraphicalReportHandler::new_themed(theme)
            .with_width(width)
            .with_word_splitter(textwrap::WordSplitter::NoHyphenation);
        let mut out = String::new();
        for p in self.problems.iter().take(MAX_RENDERED) {
            let src = &*p.src;
            let text = src.inner();
            let spans: Vec<Range<usize>> = p
                .problem
                .primary
                .iter()
                .chain(&p.problem.secondary)
                .map(|(r, _)| bounded(r, text))
                .collect();
            let window = Window::new(src, &spans);
            let labels = labels_of(&p.problem, |r| window.map_span(&bounded(r, text)));
            let shown = Shown {
                problem: &p.problem,
                labels,
                source: &window,
            };
            let _ = handler.render_report(&mut out, &shown);
            out.push('\n');
        }
        if let Some(rest) = self.not_shown() {
            out.push_str(&rest);
            out.push('\n');
        }
        out
    }

    /// "... and 41541 more errors not shown: plan::subnet-overlap (40000), ..." past the first
    /// `MAX_RENDERED` problems.
    fn not_shown(&self) -> Option<String> {
        let rest = self
            .problems
            .get(MAX_RENDERED..)
            .filter(|r| !r.is_empty())?;
        let mut by_code: BTreeMap<&str, usize> = BTreeMap::new();
        let errors = rest.iter().filter(|p| p.problem.is_error()).count();
        for p in rest {
            *by_code.entry(p.problem.code).or_default() += 1;
        }
        let warnings = rest.len() - errors;
        let what = match (errors, warnings) {
            (e, 0) => format!("{e} more error(s)"),
            (0, w) => format!("{w} more warning(s)"),
            (e, w) => format!("{e} more error(s) and {w} more warning(s)"),
        };
        let mut codes: Vec<(&str, usize)> = by_code.into_iter().collect();
        codes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let codes: Vec<String> = codes.iter().map(|(c, n)| format!("{c} ({n})")).collect();
        Some(format!(
            "... and {what} not shown, of these kinds: {}",
            codes.join(", ")
        ))
    }
}

/// Nearest candidate by edit distance (a swap of two neighbours counts one), for "did you mean".
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = strsim::osa_distance(name, c);
        let limit = (name.len().max(c.len()) / 3).max(1);
        // a suggestion must share something with the name: `c` is not a near miss of `a`
        if d <= limit
            && d < name.chars().count().max(c.chars().count())
            && best.is_none_or(|(bd, _)| d < bd)
        {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_names_only() {
        assert_eq!(
            did_you_mean("spark-9", ["spark-a", "spark-b"]),
            Some("spark-a")
        );
        assert_eq!(did_you_mean("sw-c", ["sw-a", "core"]), Some("sw-a"));
        assert_eq!(did_you_mean("zzzzzz", ["spark-a"]), None);
        assert_eq!(did_you_mean("c", ["a", "b"]), None);
        assert_eq!(did_you_mean("fo", ["f0", "f1"]), Some("f0"));
        assert_eq!(did_you_mean("hots", ["alias", "host"]), Some("host"));
    }
}
