//! Sources a program names by URL (`read_text("https://…")`, `from_csv`,
//! `load_tensor`): the core has no network code, so an embedder that lets
//! a program read the network (`apsi run --allow-net`) installs a
//! [`UrlSource`] in the runtime (`RuntimeConfig::url_source`), and the
//! functions that read sources turn a URL into a local file through
//! [`local_source`].

use super::{err, Caller, ErrorObj, VResult};
use crate::error::ErrorKind;
use std::path::PathBuf;

/// Fetches `http(s)://` sources for a program.
pub trait UrlSource: Send + Sync {
    /// Downloads `url` into a local file and returns its path (the same
    /// path for the same URL within a run). The error says what failed.
    fn fetch(&self, url: &str) -> Result<PathBuf, String>;
}

/// Whether `s` names a network source.
pub fn is_url(s: &str) -> bool {
    let starts = |p: &str| {
        s.as_bytes()
            .get(..p.len())
            .is_some_and(|b| b.eq_ignore_ascii_case(p.as_bytes()))
    };
    starts("http://") || starts("https://")
}

/// The local file a source names: a path as it is, a URL fetched through
/// the runtime's [`UrlSource`] — a `PermissionError` when the program may
/// not read the network. `who` is the function, for the messages.
pub fn local_source(c: &dyn Caller, source: &str, who: &str) -> VResult<PathBuf> {
    if !is_url(source) {
        return Ok(PathBuf::from(source));
    }
    match c.url_source() {
        Some(net) => net
            .fetch(source)
            .map_err(|m| err(ErrorKind::IOError, format!("{who}(): cannot read {source}: {m}"))),
        None => Err(ErrorObj::with_hint(
            ErrorKind::PermissionError,
            format!("{who}(): reading {source} needs permission to read from the network"),
            "run the program with `apsi run --allow-net FILE`",
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_are_told_by_their_scheme_in_any_case() {
        use super::is_url;
        assert!(is_url("https://x.org/a.csv") && is_url("HTTP://x") && is_url("http://"));
        assert!(!is_url("data/http://x") && !is_url("ftp://x") && !is_url("http:/") && !is_url(""));
        assert!(!is_url("héllo://wörld"), "a multi-byte prefix is not a scheme");
    }
}
