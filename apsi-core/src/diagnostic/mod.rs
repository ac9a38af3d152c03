//! Diagnostics: the one error type for syntax, check, Guard and runtime
//! errors, and the source map that turns spans into `file:line:col`.
//!
//! Invariants:
//! - A [`Span`] is a byte range into one file of the [`SourceMap`].
//! - Rendering never panics, whatever the span (out-of-range spans are clamped).

use crate::error::ErrorKind;
use parking_lot::RwLock;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FileId(pub u32);

/// A byte range `start..end` in one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: u32, end: u32) -> Span {
        Span { file, start, end }
    }
    /// The smallest span covering both (same file assumed).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

#[derive(Debug)]
pub struct SourceFile {
    /// The name as the user gave it (command line) or the module's path.
    pub name: String,
    pub text: Arc<str>,
    /// Made at the first question about lines: a program started from the
    /// compile cache never asks unless it reports an error.
    line_starts: std::sync::OnceLock<Vec<u32>>,
}

impl SourceFile {
    pub fn new(name: String, text: Arc<str>) -> SourceFile {
        SourceFile {
            name,
            text,
            line_starts: std::sync::OnceLock::new(),
        }
    }

    fn line_starts(&self) -> &[u32] {
        self.line_starts.get_or_init(|| {
            let mut v = vec![0u32];
            for (i, b) in self.text.bytes().enumerate() {
                if b == b'\n' {
                    v.push(i as u32 + 1);
                }
            }
            v
        })
    }

    /// 1-based line and 1-based column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let offset = offset.min(self.text.len() as u32);
        let line_starts = self.line_starts();
        let line = match line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = line_starts[line] as usize;
        let mut end = offset as usize;
        while end > start && !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let col = self.text[start..end].chars().count() + 1;
        (line + 1, col)
    }

    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        let line_starts = self.line_starts();
        if line == 0 || line > line_starts.len() {
            return "";
        }
        let start = line_starts[line - 1] as usize;
        let end = line_starts.get(line).map(|&e| e as usize).unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }
}

/// All source files of one process. Shared between threads.
#[derive(Debug, Default)]
pub struct SourceMap {
    files: RwLock<Vec<Arc<SourceFile>>>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }
    pub fn add(&self, name: impl Into<String>, text: impl Into<Arc<str>>) -> FileId {
        let mut files = self.files.write();
        files.push(Arc::new(SourceFile::new(name.into(), text.into())));
        FileId(files.len() as u32 - 1)
    }
    pub fn get(&self, id: FileId) -> Option<Arc<SourceFile>> {
        self.files.read().get(id.0 as usize).cloned()
    }
}

/// A labelled place in the source.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: Option<String>,
}

/// One frame of an Apsi call stack, innermost last.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEntry {
    /// The function's name (`<module>` for top-level code).
    pub function: String,
    pub span: Span,
}

/// One error for a person to read.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub kind: ErrorKind,
    /// The name shown for a program's own error kind (`ParseError`), whose
    /// `kind` is the built-in kind it descends from.
    pub kind_name: Option<String>,
    pub message: String,
    /// The primary label first.
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
    /// The Apsi call stack for runtime errors (outermost first); empty otherwise.
    pub trace: Vec<TraceEntry>,
}

impl Diagnostic {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            kind,
            kind_name: None,
            message: message.into(),
            labels: Vec::new(),
            notes: Vec::new(),
            help: None,
            trace: Vec::new(),
        }
    }
    pub fn at(mut self, span: Span) -> Diagnostic {
        self.labels.push(Label { span, message: None });
        self
    }
    pub fn label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: Some(message.into()),
        });
        self
    }
    pub fn note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }
    /// The kind as shown: a user kind's own name, else the built-in kind's.
    pub fn kind_text(&self) -> &str {
        self.kind_name.as_deref().unwrap_or(self.kind.name())
    }
    pub fn primary_span(&self) -> Option<Span> {
        self.labels.first().map(|l| l.span)
    }
}

mod render;
pub use render::{render, render_all};
