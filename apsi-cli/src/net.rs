//! `apsi run --allow-net`: the program may read `http(s)://` sources
//! (`read_text`, `from_csv`, `load_tensor`, `from_npy`). Each URL is
//! downloaded once per run, through the HTTP client `apsi pkg` uses (proxy
//! variables and `SSL_CERT_FILE` honoured), into a folder of this process
//! under the system's temporary folder, which is removed when the program
//! ends. The core sees only `apsi_core::api::UrlSource`.

use apsi_core::api::UrlSource;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::sync::Mutex;

/// Downloads the URLs a program reads into `dir`.
// A build without `pkg` has no client: its `fetch` only refuses.
#[cfg_attr(not(feature = "pkg"), allow(dead_code))]
pub struct HttpSource {
    dir: PathBuf,
    fetched: Mutex<HashMap<String, PathBuf>>,
    /// Numbers the downloads' files (threads may fetch at once).
    started: AtomicUsize,
}

impl HttpSource {
    pub fn new() -> Arc<HttpSource> {
        Arc::new(HttpSource {
            dir: std::env::temp_dir().join(format!("apsi-net-{}", std::process::id())),
            fetched: Mutex::new(HashMap::new()),
            started: AtomicUsize::new(0),
        })
    }

    #[cfg_attr(not(feature = "pkg"), allow(dead_code))]
    fn fetched(&self) -> std::sync::MutexGuard<'_, HashMap<String, PathBuf>> {
        self.fetched.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes what this run downloaded.
    pub fn clean(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The last part of the URL's path, kept in the file name (so `.npy` and
/// `.csv` stay recognisable), with anything unusual replaced.
#[cfg_attr(not(feature = "pkg"), allow(dead_code))]
fn file_name(url: &str) -> String {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let last = path.rsplit('/').next().unwrap_or("");
    let clean: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if clean.is_empty() || clean.starts_with('.') {
        format!("download{clean}")
    } else {
        clean
    }
}

impl UrlSource for HttpSource {
    #[cfg(feature = "pkg")]
    fn fetch(&self, url: &str) -> Result<PathBuf, String> {
        use apsi_pkg::transport::Transport;
        if let Some(p) = self.fetched().get(url) {
            return Ok(p.clone());
        }
        // The network wait is `apsi pkg`'s: APSI_NET_TIMEOUT seconds, 30 by default.
        let wait = apsi_pkg::transport::timeout_from_env();
        let transport = Transport::new(url, wait).map_err(|e| e.to_string())?;
        let Transport::Http { client, .. } = &transport else {
            return Err("not an http(s):// URL".into());
        };
        let mut resp = client.get(url).send().map_err(|e| e.to_string())?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("the server answered HTTP {status}"));
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let n = self.started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dest = self.dir.join(format!("{n}-{}", file_name(url)));
        let part = self.dir.join(format!("{n}.part"));
        let mut f = std::fs::File::create(&part).map_err(|e| format!("cannot create {}: {e}", part.display()))?;
        resp.copy_to(&mut f)
            .map_err(|e| format!("the download broke off: {e}"))?;
        drop(f);
        std::fs::rename(&part, &dest).map_err(|e| format!("cannot keep the download: {e}"))?;
        self.fetched().insert(url.to_string(), dest.clone());
        Ok(dest)
    }

    #[cfg(not(feature = "pkg"))]
    fn fetch(&self, _url: &str) -> Result<PathBuf, String> {
        Err("this build of apsi has no HTTP client (it was built without the `pkg` feature)".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_keep_the_extension_and_nothing_odd() {
        assert_eq!(file_name("https://x.org/data/train.csv?token=1"), "train.csv");
        assert_eq!(file_name("http://x.org/"), "download");
        assert_eq!(file_name("http://x.org/a b/../w.npy"), "w.npy");
        assert_eq!(file_name("http://x.org/..%2f.."), "download.._2f..");
    }
}
