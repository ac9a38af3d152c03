//! Where the package client keeps its state: `$APSI_HOME` (default `~/.apsi`).
//!
//! ```text
//! $APSI_HOME/
//!   trust/<registry-id>/root.json       highest trusted root seen
//!   trust/<registry-id>/snapshot.json   highest snapshot seen
//!   index/<registry-id>/...             verified index files (for --offline)
//!   store/dl/<sha256>.tar.gz            downloads, content-addressed
//!   store/dl/<sha256>.partial           a download in progress (resumable)
//!   store/pkg/<sha256>/                 extracted archives (with a marker)
//!   store/tmp/                          extraction in progress
//!   store/.lock                         the store lock (holds the holder's pid)
//!   packages/<name> -> ../store/pkg/<sha256>/<name>-<version>
//!   installed/<name>.json               what is installed, from which registry
//! ```

use crate::error::{err, ErrorKind, Result};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Home {
    pub root: PathBuf,
}

impl Home {
    /// `$APSI_HOME`, else `$HOME/.apsi`.
    pub fn from_env() -> Result<Home> {
        if let Some(h) = std::env::var_os("APSI_HOME").filter(|h| !h.is_empty()) {
            return Ok(Home { root: PathBuf::from(h) });
        }
        match std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE")) {
            Some(h) => Ok(Home {
                root: PathBuf::from(h).join(".apsi"),
            }),
            None => err(
                ErrorKind::Usage,
                "cannot find the Apsi home: neither APSI_HOME nor HOME is set",
            ),
        }
    }

    pub fn at(root: impl AsRef<Path>) -> Home {
        Home {
            root: root.as_ref().to_path_buf(),
        }
    }

    pub fn trust_dir(&self, registry_id: &str) -> PathBuf {
        self.root.join("trust").join(registry_id)
    }
    pub fn index_dir(&self, registry_id: &str) -> PathBuf {
        self.root.join("index").join(registry_id)
    }
    pub fn store(&self) -> PathBuf {
        self.root.join("store")
    }
    pub fn packages(&self) -> PathBuf {
        self.root.join("packages")
    }
    pub fn installed(&self) -> PathBuf {
        self.root.join("installed")
    }
    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.toml")
    }
}
