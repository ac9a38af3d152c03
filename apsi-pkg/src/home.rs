//! Where the package client keeps its state: `$APSI_HOME` (default
//! `~/.apsi`). The layout is [`apsi_backend::home`]'s, shared with the
//! backend loader.

use crate::error::{err, ErrorKind, Result};
pub use apsi_backend::home::Home;

/// `$APSI_HOME`, else `$HOME/.apsi`; an error when neither is set.
pub fn from_env() -> Result<Home> {
    match Home::locate() {
        Some(h) => Ok(h),
        None => err(
            ErrorKind::Usage,
            "cannot find the Apsi home: neither APSI_HOME nor HOME is set",
        ),
    }
}
