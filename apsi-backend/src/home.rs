//! Where installed packages live: `$APSI_HOME` (default `~/.apsi`).
//!
//! ```text
//! $APSI_HOME/
//!   trust/<registry-id>/root.json       highest trusted root seen
//!   trust/<registry-id>/snapshot.json   highest snapshot seen
//!   index/<registry-id>/...             verified index files (for --offline)
//!   store/dl/<sha256>.tar.gz            downloads, content-addressed
//!   store/dl/<sha256>.partial           a download in progress (resumable)
//!   store/pkg/<sha256>/                 extracted archives, with the completion
//!                                       marker and the record of every file
//!   store/tmp/                          extraction in progress
//!   store/.lock                         the store lock (holds the holder's pid)
//!   packages/<name> -> ../store/pkg/<sha256>/<name>-<version>
//!   installed/<name>.json               what is installed, from which registry
//!   venvs/<name>/                       the Python environment of a package with a
//!                                       [python] table, with .apsi-requirements.sha256
//!   venvs/.<name>.tmp-<pid>             one being created (renamed into place when done)
//! ```

use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Home {
    pub root: PathBuf,
}

impl Home {
    /// `$APSI_HOME`, else `$HOME/.apsi`; `None` when neither is set.
    pub fn locate() -> Option<Home> {
        if let Some(h) = std::env::var_os("APSI_HOME").filter(|h| !h.is_empty()) {
            return Some(Home { root: PathBuf::from(h) });
        }
        let h = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"))?;
        Some(Home {
            root: PathBuf::from(h).join(".apsi"),
        })
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
    /// The extracted archive with this sha256 (it holds `NAME-VERSION/`).
    pub fn tree(&self, cksum: &str) -> PathBuf {
        self.store().join("pkg").join(cksum)
    }
    pub fn packages(&self) -> PathBuf {
        self.root.join("packages")
    }
    pub fn installed(&self) -> PathBuf {
        self.root.join("installed")
    }
    /// The Python environments of installed packages (`venvs/NAME`).
    pub fn venvs(&self) -> PathBuf {
        self.root.join("venvs")
    }
    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.toml")
    }
}
