//! The one error type of the package client: a kind, a message that says what
//! was expected and what was found, and an optional hint with the fix.

use std::fmt;

/// What went wrong, coarsely: callers (the CLI, tests) branch on this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad command-line input or a malformed manifest/lockfile.
    Usage,
    /// A signature, threshold, version or expiry check failed.
    Trust,
    /// A size or hash did not match what the signed metadata declares.
    Integrity,
    /// An archive entry was refused by the extraction allowlist or caps.
    Archive,
    /// No version satisfies the requirements, or the lockfile disagrees.
    Resolve,
    /// The network or the registry answered with an error.
    Network,
    /// `--offline` and the needed data is not cached.
    Offline,
    /// The store lock could not be taken in time.
    Lock,
    /// A local file-system operation failed.
    Io,
    /// A package is not installed / not known.
    NotFound,
    /// Creating a package's Python environment failed: no Python of the
    /// version it needs, `venv` or pip failed.
    Python,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PkgError {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
}

pub type Result<T> = std::result::Result<T, PkgError>;

impl PkgError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> PkgError {
        PkgError {
            kind,
            message: message.into(),
            hint: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> PkgError {
        self.hint = Some(hint.into());
        self
    }
}

/// Shorthand for `Err(PkgError::new(kind, msg))`.
pub fn err<T>(kind: ErrorKind, message: impl Into<String>) -> Result<T> {
    Err(PkgError::new(kind, message))
}

impl fmt::Display for PkgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  = hint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PkgError {}

/// Wraps an I/O error with what was being done to which path.
pub fn io_err(what: &str, path: &std::path::Path, e: &std::io::Error) -> PkgError {
    PkgError::new(ErrorKind::Io, format!("cannot {what} '{}': {e}", path.display()))
}

impl From<apsi_backend::Error> for PkgError {
    fn from(e: apsi_backend::Error) -> PkgError {
        let message = match e.package {
            Some(p) => format!("{p}: {}", e.message),
            None => e.message,
        };
        PkgError {
            kind: ErrorKind::Io,
            message,
            hint: e.hint,
        }
    }
}
