//! The kinds of error an Apsi program can see (LANGUAGE.md §5).
//!
//! Every kind but `KeyboardInterrupt` is a sub-kind of `Error`, so `except
//! Error` catches all of them; `KeyboardInterrupt` (an interrupt of the run,
//! see `crate::interrupt`) is caught only by its own name or a bare
//! `except:`, as Python's `except Exception` lets it through.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    Error,
    SyntaxError,
    NameError,
    TypeError,
    ValueError,
    IndexError,
    KeyError,
    AttributeError,
    ZeroDivisionError,
    OverflowError,
    MemoryError,
    RecursionError,
    ShapeError,
    IOError,
    PermissionError,
    AssertionError,
    ModuleNotFoundError,
    NativeError,
    NotImplementedError,
    PythonError,
    StopIteration,
    KeyboardInterrupt,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 22] = [
        ErrorKind::Error,
        ErrorKind::SyntaxError,
        ErrorKind::NameError,
        ErrorKind::TypeError,
        ErrorKind::ValueError,
        ErrorKind::IndexError,
        ErrorKind::KeyError,
        ErrorKind::AttributeError,
        ErrorKind::ZeroDivisionError,
        ErrorKind::OverflowError,
        ErrorKind::MemoryError,
        ErrorKind::RecursionError,
        ErrorKind::ShapeError,
        ErrorKind::IOError,
        ErrorKind::PermissionError,
        ErrorKind::AssertionError,
        ErrorKind::ModuleNotFoundError,
        ErrorKind::NativeError,
        ErrorKind::NotImplementedError,
        ErrorKind::PythonError,
        ErrorKind::StopIteration,
        ErrorKind::KeyboardInterrupt,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Error => "Error",
            ErrorKind::SyntaxError => "SyntaxError",
            ErrorKind::NameError => "NameError",
            ErrorKind::TypeError => "TypeError",
            ErrorKind::ValueError => "ValueError",
            ErrorKind::IndexError => "IndexError",
            ErrorKind::KeyError => "KeyError",
            ErrorKind::AttributeError => "AttributeError",
            ErrorKind::ZeroDivisionError => "ZeroDivisionError",
            ErrorKind::OverflowError => "OverflowError",
            ErrorKind::MemoryError => "MemoryError",
            ErrorKind::RecursionError => "RecursionError",
            ErrorKind::ShapeError => "ShapeError",
            ErrorKind::IOError => "IOError",
            ErrorKind::PermissionError => "PermissionError",
            ErrorKind::AssertionError => "AssertionError",
            ErrorKind::ModuleNotFoundError => "ModuleNotFoundError",
            ErrorKind::NativeError => "NativeError",
            ErrorKind::NotImplementedError => "NotImplementedError",
            ErrorKind::PythonError => "PythonError",
            ErrorKind::StopIteration => "StopIteration",
            ErrorKind::KeyboardInterrupt => "KeyboardInterrupt",
        }
    }

    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// Whether an `except self` clause catches an error of kind `other`.
    pub fn catches(self, other: ErrorKind) -> bool {
        (self == ErrorKind::Error && other != ErrorKind::KeyboardInterrupt) || self == other
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
