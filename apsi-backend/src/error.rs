//! The one error of this crate: which package, what is wrong, what fixes it.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    /// `NAME VERSION` of the package concerned, when there is one.
    pub package: Option<String>,
    pub message: String,
    /// A command or step that fixes it.
    pub hint: Option<String>,
}

impl Error {
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            package: None,
            message: message.into(),
            hint: None,
        }
    }

    pub fn package(mut self, p: impl Into<String>) -> Error {
        self.package = Some(p.into());
        self
    }

    pub fn hint(mut self, h: impl Into<String>) -> Error {
        self.hint = Some(h.into());
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.package {
            Some(p) => write!(f, "backend package {p}: {}", self.message)?,
            None => write!(f, "{}", self.message)?,
        }
        if let Some(h) = &self.hint {
            write!(f, "; {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}
