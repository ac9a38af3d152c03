//! Which registry to use and which root to trust first.
//!
//! The default registry and its root are pinned in the binary. A private
//! registry is chosen with `APSI_REGISTRY` (URL) and `APSI_REGISTRY_ROOT`
//! (path of its `1.root.json`, obtained from its operator out of band), or
//! the same two in `$APSI_HOME/config.toml`:
//!
//! ```toml
//! [registry]
//! url = "https://pkg.example.org/apsi"
//! root = "/etc/apsi/example-root.json"
//! ```

use crate::digest::sha256_hex;
use crate::error::{io_err, ErrorKind, PkgError, Result};
use crate::home::Home;
use serde::Deserialize;
use std::path::PathBuf;

/// The official registry's URL.
pub const DEFAULT_REGISTRY: &str = "https://registry.apsi.invalid";

/// The official registry's first root, pinned. (Its secret key is held
/// offline by the project; replace this with the production root when the
/// official registry is stood up.)
pub const PINNED_ROOT: &str = include_str!("pinned_root.json");

#[derive(Debug, Clone)]
pub struct RegistryConfig {
    pub url: String,
    /// The bytes of the first trusted root.
    pub root: Vec<u8>,
}

#[derive(Deserialize, Default)]
struct FileConfig {
    #[serde(default)]
    registry: Option<FileRegistry>,
}

#[derive(Deserialize, Default)]
struct FileRegistry {
    url: Option<String>,
    root: Option<PathBuf>,
}

impl RegistryConfig {
    /// Environment first, then `$APSI_HOME/config.toml`, then the pinned default.
    pub fn from_env(home: &Home) -> Result<RegistryConfig> {
        let mut url = std::env::var("APSI_REGISTRY").ok().filter(|s| !s.is_empty());
        let mut root = std::env::var_os("APSI_REGISTRY_ROOT")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from);
        let cfg_path = home.config_file();
        if cfg_path.exists() {
            let text = std::fs::read_to_string(&cfg_path).map_err(|e| io_err("read", &cfg_path, &e))?;
            let fc: FileConfig = toml::from_str(&text)
                .map_err(|e| PkgError::new(ErrorKind::Usage, format!("{}: {}", cfg_path.display(), e.message())))?;
            if let Some(r) = fc.registry {
                url = url.or(r.url);
                root = root.or(r.root);
            }
        }
        let url = url.unwrap_or_else(|| DEFAULT_REGISTRY.to_string());
        let root = match root {
            Some(p) => std::fs::read(&p).map_err(|e| io_err("read the registry's root", &p, &e))?,
            None if url == DEFAULT_REGISTRY => PINNED_ROOT.as_bytes().to_vec(),
            None => {
                return Err(PkgError::new(
                    ErrorKind::Usage,
                    format!("registry '{url}' has no trusted root configured"),
                )
                .hint("set APSI_REGISTRY_ROOT (or `root` under [registry] in $APSI_HOME/config.toml) to the registry's 1.root.json"))
            }
        };
        Ok(RegistryConfig {
            url: url.trim_end_matches('/').to_string(),
            root,
        })
    }

    /// A short stable id for the registry, used for its trust and cache folders.
    pub fn id(&self) -> String {
        let h = sha256_hex(self.url.as_bytes());
        h.get(..16).unwrap_or(&h).to_string()
    }
}
