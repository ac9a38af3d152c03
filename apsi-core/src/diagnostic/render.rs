//! Rendering a [`Diagnostic`] as text for people (rustc/Gleam style):
//!
//! ```text
//! IndexError: list index 7 out of range (length 3)
//!   --> prog.apsi:2:12
//!    |
//!  2 |     return xs[i]
//!    |            ^^^^^
//!    = hint: …
//! Call stack (most recent call last):
//!   prog.apsi:5:7 in <module>
//!   prog.apsi:2:12 in get
//! ```
//!
//! Invariants: rendering never panics, whatever the spans (they are clamped
//! to the file; unknown files are skipped); colour escapes appear only when
//! asked for; columns count characters, and a tab shows as four spaces.

use super::{Diagnostic, Label, SourceFile, SourceMap, Span};
use std::fmt::Write;
use std::sync::Arc;

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[1;31m";
const BLUE: &str = "\x1b[1;34m";
const CYAN: &str = "\x1b[1;36m";

/// Identical consecutive call-stack frames shown before they are summarised.
const REPEATS_SHOWN: usize = 3;

/// How wide a tab is shown.
const TAB_WIDTH: usize = 4;

struct Painter {
    color: bool,
}

impl Painter {
    fn paint(&self, style: &str, text: &str) -> String {
        if self.color && !text.is_empty() {
            format!("{style}{text}{RESET}")
        } else {
            text.to_string()
        }
    }
}

/// One label placed in its file.
struct Placed<'a> {
    label: &'a Label,
    primary: bool,
    line: usize,
    /// 1-based display column where the carets start.
    col: usize,
    /// 1-based character column (for `file:line:col`).
    char_col: usize,
    /// Number of carets (at least 1).
    width: usize,
}

/// Renders one diagnostic; the text ends with a newline.
pub fn render(d: &Diagnostic, sources: &SourceMap, color: bool) -> String {
    let p = Painter { color };
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", p.paint(RED, d.kind_text()), p.paint(BOLD, &d.message));

    // Labels, grouped by file in order of first appearance (primary first).
    let mut groups: Vec<(Arc<SourceFile>, Vec<Placed>)> = Vec::new();
    for (i, label) in d.labels.iter().enumerate() {
        let Some(file) = sources.get(label.span.file) else {
            continue;
        };
        let placed = place(&file, label, i == 0);
        match groups.iter_mut().find(|(f, _)| Arc::ptr_eq(f, &file)) {
            Some((_, v)) => v.push(placed),
            None => groups.push((file, vec![placed])),
        }
    }
    let max_line = groups
        .iter()
        .flat_map(|(_, v)| v.iter().map(|pl| pl.line))
        .max()
        .unwrap_or(1);
    let w = max_line.to_string().len();
    let arrow_pad = " ".repeat(w + 1);
    let blank = " ".repeat(w + 2);

    for (gi, (file, placed)) in groups.iter().enumerate() {
        let first = placed.iter().min_by_key(|pl| (!pl.primary, pl.line, pl.col));
        let (line, col) = first.map(|pl| (pl.line, pl.char_col)).unwrap_or((1, 1));
        let arrow = if gi == 0 { "-->" } else { ":::" };
        let _ = writeln!(
            out,
            "{arrow_pad}{} {}:{}:{}",
            p.paint(BLUE, arrow),
            file.name,
            line,
            col
        );
        let _ = writeln!(out, "{blank}{}", p.paint(BLUE, "|"));
        let mut lines: Vec<usize> = placed.iter().map(|pl| pl.line).collect();
        lines.sort_unstable();
        lines.dedup();
        let mut prev: Option<usize> = None;
        for line in lines {
            if let Some(prev) = prev {
                if line > prev + 1 {
                    let _ = writeln!(out, "{}", p.paint(BLUE, "..."));
                }
            }
            prev = Some(line);
            let text = expand_tabs(file.line_text(line));
            let gutter = format!(" {line:>w$} |");
            if text.is_empty() {
                let _ = writeln!(out, "{}", p.paint(BLUE, &gutter));
            } else {
                let _ = writeln!(out, "{} {}", p.paint(BLUE, &gutter), text);
            }
            let mut on_line: Vec<&Placed> = placed.iter().filter(|pl| pl.line == line).collect();
            on_line.sort_by_key(|pl| (pl.col, !pl.primary));
            for pl in on_line {
                let (mark, style) = if pl.primary { ('^', RED) } else { ('-', BLUE) };
                let mut row = mark.to_string().repeat(pl.width);
                if let Some(msg) = &pl.label.message {
                    row.push(' ');
                    // A label is one line; any line breaks in it become spaces.
                    row.push_str(&msg.replace(['\n', '\r'], " "));
                }
                let _ = writeln!(
                    out,
                    "{blank}{} {}{}",
                    p.paint(BLUE, "|"),
                    " ".repeat(pl.col.saturating_sub(1)),
                    p.paint(style, &row)
                );
            }
        }
    }

    let has_source = !groups.is_empty();
    let indent = if has_source { blank.clone() } else { String::new() };
    for note in &d.notes {
        write_tail(&mut out, &p, &indent, "note", note, BOLD);
    }
    if let Some(help) = &d.help {
        write_tail(&mut out, &p, &indent, "hint", help, CYAN);
    }

    if !d.trace.is_empty() {
        let _ = writeln!(out, "{}", p.paint(BOLD, "Call stack (most recent call last):"));
        // A run of identical frames (deep recursion) shows its first few
        // frames, then one line saying how often it repeats.
        let mut i = 0;
        while i < d.trace.len() {
            let frame = &d.trace[i];
            let run = d.trace[i..].iter().take_while(|f| *f == frame).count();
            for _ in 0..run.min(REPEATS_SHOWN) {
                let _ = writeln!(out, "  {} in {}", location(sources, frame.span), frame.function);
            }
            if run > REPEATS_SHOWN {
                let _ = writeln!(out, "  … the call above repeats {} more times", run - REPEATS_SHOWN);
            }
            i += run;
        }
    }
    out
}

/// Renders several diagnostics separated by blank lines, with a closing
/// "N errors found" line when there is more than one.
pub fn render_all(ds: &[Diagnostic], sources: &SourceMap, color: bool) -> String {
    let p = Painter { color };
    let mut out = String::new();
    for (i, d) in ds.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&render(d, sources, color));
    }
    if ds.len() > 1 {
        out.push('\n');
        out.push_str(&p.paint(BOLD, &format!("{} errors found", ds.len())));
        out.push('\n');
    }
    out
}

/// `file:line:col` of a span, or `<unknown>` when its file is not in the map.
pub(crate) fn location(sources: &SourceMap, span: Span) -> String {
    match sources.get(span.file) {
        Some(file) => {
            let (line, col) = file.line_col(span.start);
            format!("{}:{}:{}", file.name, line, col)
        }
        None => "<unknown>".to_string(),
    }
}

fn write_tail(out: &mut String, p: &Painter, indent: &str, what: &str, text: &str, style: &str) {
    let head = format!("{indent}{} {}: ", p.paint(BLUE, "="), p.paint(style, what));
    // Continuation lines line up under the text after `= what: `.
    let pad = " ".repeat(indent.len() + 2 + what.len() + 2);
    for (i, line) in text.lines().enumerate() {
        if i == 0 {
            let _ = writeln!(out, "{head}{line}");
        } else {
            let _ = writeln!(out, "{pad}{line}");
        }
    }
    if text.is_empty() {
        let _ = writeln!(out, "{}", head.trim_end());
    }
}

fn place<'a>(file: &SourceFile, label: &'a Label, primary: bool) -> Placed<'a> {
    let len = file.text.len() as u32;
    let start = label.span.start.min(len);
    let end = label.span.end.clamp(start, len);
    let (line, char_col) = file.line_col(start);
    let (end_line, end_col) = file.line_col(end);
    let text = file.line_text(line);
    let col = display_width(text, char_col.saturating_sub(1)) + 1;
    let width = if end_line == line && end_col > char_col {
        display_width(text, end_col - 1).saturating_sub(col - 1)
    } else if end_line > line {
        // A multi-line span: underline the rest of its first line.
        display_width(text, usize::MAX).saturating_sub(col - 1)
    } else {
        1
    };
    Placed {
        label,
        primary,
        line,
        col,
        char_col,
        width: width.max(1),
    }
}

/// The display width of the first `chars` characters of a line.
fn display_width(text: &str, chars: usize) -> usize {
    text.chars()
        .take(chars)
        .map(|c| if c == '\t' { TAB_WIDTH } else { 1 })
        .sum()
}

fn expand_tabs(text: &str) -> String {
    text.replace('\t', &" ".repeat(TAB_WIDTH))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{FileId, TraceEntry};
    use crate::error::ErrorKind;

    fn map(src: &str) -> (SourceMap, FileId) {
        let m = SourceMap::new();
        let f = m.add("t.apsi", src);
        (m, f)
    }

    #[test]
    fn basic_layout() {
        let (m, f) = map("def get(xs, i):\n    return xs[i]\n");
        let d = Diagnostic::new(ErrorKind::IndexError, "list index 7 out of range (length 3)")
            .at(Span::new(f, 27, 32))
            .help("valid indices are 0..3");
        let got = render(&d, &m, false);
        assert_eq!(
            got,
            "IndexError: list index 7 out of range (length 3)\n  --> t.apsi:2:12\n   |\n 2 |     return xs[i]\n   |            ^^^^^\n   = hint: valid indices are 0..3\n"
        );
    }

    #[test]
    fn no_color_without_request_and_color_with() {
        let (m, f) = map("x\n");
        let d = Diagnostic::new(ErrorKind::NameError, "boom").at(Span::new(f, 0, 1));
        assert!(!render(&d, &m, false).contains('\x1b'));
        let c = render(&d, &m, true);
        assert!(c.contains("\x1b[1;31mNameError\x1b[0m"));
    }

    #[test]
    fn never_panics_on_wild_spans() {
        let (m, f) = map("aé\tb\n\ncd");
        for (s, e) in [
            (0, 0),
            (2, 2),
            (1, 100),
            (100, 5),
            (u32::MAX, u32::MAX),
            (9, 10),
            (4, 3),
            (0, 7),
        ] {
            let d = Diagnostic::new(ErrorKind::Error, "x")
                .at(Span::new(f, s, e))
                .label(Span::new(FileId(9), s, e), "other")
                .label(Span::new(f, e, s), "two\nlines");
            let out = render(&d, &m, true);
            assert!(out.starts_with("\x1b[1;31mError"));
            assert!(out.contains("two lines"), "{out}");
        }
        let empty = SourceMap::new();
        let d = Diagnostic::new(ErrorKind::Error, "x").at(Span::new(FileId(0), 3, 4));
        assert_eq!(render(&d, &empty, false), "Error: x\n");
    }

    #[test]
    fn tabs_and_unicode_columns() {
        let (m, f) = map("\tπ = zz\n");
        // `zz` starts at byte 1 + 2 + 3 = 6 ('π' is two bytes).
        let d = Diagnostic::new(ErrorKind::NameError, "n").at(Span::new(f, 6, 8));
        let out = render(&d, &m, false);
        assert!(out.contains("--> t.apsi:1:6"), "{out}");
        assert!(out.contains(" 1 |     π = zz\n   |         ^^\n"), "{out}");
    }

    #[test]
    fn multiline_span_underlines_first_line() {
        let (m, f) = map("f(1,\n  2)\n");
        let d = Diagnostic::new(ErrorKind::TypeError, "t").label(Span::new(f, 0, 9), "here");
        let out = render(&d, &m, false);
        assert!(out.contains(" 1 | f(1,\n   | ^^^^ here\n"), "{out}");
    }

    #[test]
    fn secondary_labels_notes_and_gaps() {
        let src = "def f(a):\n    pass\n\n\nf(1, 2)\n";
        let (m, f) = map(src);
        let d = Diagnostic::new(ErrorKind::TypeError, "f() takes 1 positional argument but 2 were given")
            .label(Span::new(f, 21, 28), "2 arguments given")
            .label(Span::new(f, 4, 5), "'f' defined here")
            .note("first\nsecond");
        let out = render(&d, &m, false);
        assert!(out.contains("--> t.apsi:5:1"), "{out}");
        assert!(
            out.contains(
                " 1 | def f(a):\n   |     - 'f' defined here\n...\n 5 | f(1, 2)\n   | ^^^^^^^ 2 arguments given\n"
            ),
            "{out}"
        );
        assert!(out.contains("   = note: first\n           second\n"), "{out}");
    }

    #[test]
    fn trace_and_summary() {
        let (m, f) = map("a\nb\n");
        let mut d = Diagnostic::new(ErrorKind::ValueError, "v").at(Span::new(f, 2, 3));
        d.trace = vec![
            TraceEntry {
                function: "<module>".into(),
                span: Span::new(f, 0, 1),
            },
            TraceEntry {
                function: "g".into(),
                span: Span::new(FileId(7), 2, 3),
            },
        ];
        let out = render(&d, &m, false);
        assert!(
            out.ends_with("Call stack (most recent call last):\n  t.apsi:1:1 in <module>\n  <unknown> in g\n"),
            "{out}"
        );
        let all = render_all(&[d.clone(), d.clone()], &m, false);
        assert!(all.ends_with("\n\n2 errors found\n"), "{all}");
        assert_eq!(render_all(&[d.clone()], &m, false), render(&d, &m, false));
        assert_eq!(render_all(&[], &m, false), "");
    }
}
