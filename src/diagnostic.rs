//! Compiler-style diagnostics for the sandbox file.
//!
//! A person edits the sandbox file by hand, so a mistake must be as easy to find as a compiler's:
//! `FILE:LINE:COL: error: …`, the offending line, a caret under the exact span, and a hint such as
//! "did you mean `files`?". Every problem in a file is collected and shown at once, so one edit
//! round fixes them all.
//!
//! Lines and columns are 1-based; a column counts characters, not bytes, so a caret lines up
//! under text that is not ASCII. Spans come from the TOML parser and are byte offsets into the
//! source; they are clamped and moved to character boundaries here, so a bad span can never make
//! rendering panic.
//!
//! Trusted with: showing a person each problem in a sandbox file where it is, whatever the file
//! holds. What it trusts: the messages its callers write; neither the file's text nor the parser's
//! spans (a span is clamped to the text, and the line shown is made printable).

use std::fmt::Write as _;
use std::ops::Range;

/// One problem in a sandbox file, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// What is wrong, in one sentence without a trailing period.
    pub message: String,
    /// Byte range in the source that the caret underlines; `None` when the problem is the file as
    /// a whole (empty, not UTF-8 before any line could be read, …).
    pub span: Option<Range<usize>>,
    /// What to do about it ("did you mean `files`?"), if there is something to say.
    pub help: Option<String>,
    /// A warning, not an error: the file is valid and works, but may not mean what it seems to
    /// (`lnk sandbox check` shows these and still exits 0).
    pub warning: bool,
}

impl Diagnostic {
    pub fn new(message: impl Into<String>, span: Option<Range<usize>>) -> Self {
        Diagnostic { message: message.into(), span, help: None, warning: false }
    }

    /// The same problem as a warning.
    pub fn as_warning(mut self) -> Self {
        self.warning = true;
        self
    }

    fn severity(&self) -> &'static str {
        if self.warning { "warning" } else { "error" }
    }

    /// The diagnostic as one JSON object for `--json` outputs:
    /// `{"file","line","column","message","help"}`, with `line` and `column` null when the
    /// problem is the file as a whole, and `help` null when there is nothing to say.
    pub fn to_json(&self, file_name: &str, source: &str) -> String {
        let (line, column) = match self.line_col(source) {
            Some((l, c)) => (l.to_string(), c.to_string()),
            None => ("null".to_owned(), "null".to_owned()),
        };
        crate::json::Object::new()
            .str("file", file_name)
            .raw("line", &line)
            .raw("column", &column)
            .str("severity", self.severity())
            .str("message", &self.message)
            .raw("help", &self.help.as_deref().map_or("null".to_owned(), crate::json::string))
            .finish()
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// 1-based line and column (in characters) of the span's start, if it has one.
    pub fn line_col(&self, source: &str) -> Option<(usize, usize)> {
        let span = self.span.clone()?;
        let start = floor_char_boundary(source, span.start);
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line = source[..start].matches('\n').count() + 1;
        let col = source[line_start..start].chars().count() + 1;
        Some((line, col))
    }

    /// Renders the diagnostic as a compiler would, naming `file_name`.
    pub fn render(&self, file_name: &str, source: &str) -> String {
        let mut out = String::new();
        let Some((line_no, col)) = self.line_col(source) else {
            let _ = writeln!(out, "{file_name}: {}: {}", self.severity(), self.message);
            if let Some(help) = &self.help {
                let _ = writeln!(out, "  = help: {help}");
            }
            return out;
        };
        let _ = writeln!(out, "{file_name}:{line_no}:{col}: {}: {}", self.severity(), self.message);

        let span = self.span.clone().unwrap_or(0..0);
        let start = floor_char_boundary(source, span.start);
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[start..].find('\n').map_or(source.len(), |i| start + i);
        let line_text = source[line_start..line_end].trim_end_matches('\r');
        // The caret runs to the span's end or the line's end, whichever comes first, and is at
        // least one character wide so an empty span (end of file) is still visible.
        let end = floor_char_boundary(source, span.end.max(start)).min(line_start + line_text.len());
        let gutter = line_no.to_string().len();
        let _ = writeln!(out, "{:gutter$} |", "");
        let _ = writeln!(out, "{line_no} | {}", printable(line_text));
        let pad: String = source[line_start..start.min(line_start + line_text.len())]
            .chars()
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let width = source[start.min(end)..end].chars().count().max(1);
        let _ = writeln!(out, "{:gutter$} | {pad}{}", "", "^".repeat(width));
        if let Some(help) = &self.help {
            let _ = writeln!(out, "{:gutter$} = help: {help}", "");
        }
        out
    }
}

/// Renders every diagnostic, in source order, followed by a count (`3 errors`, `1 error, 2
/// warnings`), as `lnk sandbox check` prints.
pub fn render_all(diagnostics: &[Diagnostic], file_name: &str, source: &str) -> String {
    let mut sorted: Vec<&Diagnostic> = diagnostics.iter().collect();
    sorted.sort_by_key(|d| d.span.as_ref().map_or(0, |s| s.start));
    let mut out = String::new();
    for d in sorted {
        out.push_str(&d.render(file_name, source));
        out.push('\n');
    }
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let warnings = diagnostics.iter().filter(|d| d.warning).count();
    let errors = diagnostics.len() - warnings;
    let mut counts = Vec::new();
    if errors > 0 || warnings == 0 {
        counts.push(plural(errors, "error"));
    }
    if warnings > 0 {
        counts.push(plural(warnings, "warning"));
    }
    let _ = writeln!(out, "{file_name}: {}", counts.join(", "));
    out
}

/// The known name nearest to `unknown`, if one is near enough to be a likely typo.
///
/// "Near enough" is an edit distance of at most a third of the longer name (at least 1), which
/// catches `fils`, `comands` and `per-minute` without suggesting `tcp` for `foo`.
pub fn nearest<'a>(unknown: &str, known: &[&'a str]) -> Option<&'a str> {
    // Case and `-` versus `_` are the commonest slips, so they cost nothing.
    let fold = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    let unknown_folded = fold(unknown);
    known
        .iter()
        .map(|k| (edit_distance(&unknown_folded, &fold(k)), *k))
        .filter(|(d, k)| *d <= (k.len().max(unknown.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Edit distance over characters, where swapping two neighbours (`strat` for `start`) is one
/// edit like any other slip (optimal string alignment). Inputs are keys a person typed, so they
/// are short; the caller bounds them anyway (a key longer than 64 characters is never compared).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(64).collect();
    let b: Vec<char> = b.chars().take(64).collect();
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
            if i > 0 && j > 0 && *ca == b[j - 1] && a[i - 1] == *cb {
                cur[j + 1] = cur[j + 1].min(before[j - 1] + 1);
            }
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Control characters in a quoted line would garble a terminal; show them escaped instead.
fn printable(line: &str) -> String {
    line.chars().map(|c| if c.is_control() && c != '\t' { '\u{FFFD}' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters() {
        let src = "a = 1\nbé = 2\n";
        let d = Diagnostic::new("x", Some(9..10));
        assert_eq!(d.line_col(src), Some((2, 3)));
    }

    #[test]
    fn render_points_a_caret_at_the_span() {
        let src = "commands = []\n[fils]\n";
        let d = Diagnostic::new("unknown table `fils`", Some(15..19)).with_help("did you mean `files`?");
        let text = d.render("p.toml", src);
        assert_eq!(
            text,
            "p.toml:2:2: error: unknown table `fils`\n  |\n2 | [fils]\n  |  ^^^^\n  = help: did you mean `files`?\n"
        );
    }

    #[test]
    fn json_names_the_place_and_a_warning_says_so() {
        let src = "commands = []\n[fils]\n";
        let d = Diagnostic::new("unknown table `fils`", Some(15..19)).with_help("did you mean `files`?");
        assert_eq!(
            d.to_json("p.toml", src),
            r#"{"file":"p.toml","line":2,"column":2,"severity":"error","message":"unknown table `fils`","help":"did you mean `files`?"}"#
        );
        let whole = Diagnostic::new("empty", None).as_warning();
        assert_eq!(
            whole.to_json("p.toml", src),
            r#"{"file":"p.toml","line":null,"column":null,"severity":"warning","message":"empty","help":null}"#
        );
        assert!(whole.render("p.toml", src).starts_with("p.toml: warning: empty"));
    }

    #[test]
    fn spans_off_a_char_boundary_or_past_the_end_never_panic() {
        let src = "é\n";
        for start in 0..6 {
            for end in 0..6 {
                let _ = Diagnostic::new("x", Some(start..end)).render("f", src);
            }
        }
    }

    #[test]
    fn nearest_suggests_typos_only() {
        let known = ["commands", "files", "internet", "tool"];
        assert_eq!(nearest("fils", &known), Some("files"));
        assert_eq!(nearest("comands", &known), Some("commands"));
        assert_eq!(nearest("Files", &known), Some("files"));
        assert_eq!(nearest("zzz", &known), None);
        assert_eq!(nearest("per-minute", &["per_minute", "hosts"]), Some("per_minute"));
        // Two neighbours swapped is one slip, not two.
        assert_eq!(nearest("strat", &["start", "stop"]), Some("start"));
        assert_eq!(edit_distance("strat", "start"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("abc", "ca"), 3);
    }
}
