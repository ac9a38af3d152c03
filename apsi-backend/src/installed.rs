//! `installed/NAME.json`: what is installed, which archive it came from,
//! and the tags it was chosen with (so `apsi pkg update` keeps them).

use crate::error::Error;
use crate::home::Home;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Installed {
    pub name: String,
    pub version: String,
    pub target: String,
    pub kind: String,
    /// The archive's sha256 (its extracted tree is `store/pkg/<cksum>/`).
    pub cksum: String,
    pub registry: String,
    /// The `--tag`s the install enabled (records from before tags were kept have none).
    #[serde(default)]
    pub tags: Vec<String>,
}

impl Installed {
    /// `NAME VERSION`, as errors name a package.
    pub fn label(&self) -> String {
        format!("{} {}", self.name, self.version)
    }

    /// `NAME-VERSION`, the package's folder inside its tree.
    pub fn prefix(&self) -> String {
        format!("{}-{}", self.name, self.version)
    }
}

/// Every installed package, sorted by name. A damaged record is an error
/// naming its file.
pub fn list(home: &Home) -> Result<Vec<Installed>, Error> {
    let dir = home.installed();
    let rd = match std::fs::read_dir(&dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::new(format!("cannot read the folder '{}': {e}", dir.display()))),
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let b = std::fs::read(&p).map_err(|e| Error::new(format!("cannot read '{}': {e}", p.display())))?;
        let rec: Installed = serde_json::from_slice(&b).map_err(|e| {
            Error::new(format!("'{}' is damaged: {e}", p.display()))
                .hint("remove that file and install the package again (`apsi pkg install NAME`)")
        })?;
        out.push(rec);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
