//! Fetching bytes from a registry: `file://` folders and HTTP(S) through
//! reqwest (rustls; `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` are honoured,
//! `SSL_CERT_FILE` adds trusted certificates). A transport is only ever built
//! when the client is online, so `--offline` opens no socket.
//!
//! Every read is capped: metadata by a size limit, downloads by the length the
//! signed index declares; a body longer than declared is an error.

use crate::error::{err, io_err, ErrorKind, PkgError, Result};
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The default time to wait for a connection or for the next bytes.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

pub enum Transport {
    File(PathBuf),
    Http {
        base: String,
        client: reqwest::blocking::Client,
        /// The wait for a connection or the next bytes; also the grace
        /// period before [`MIN_RATE`] applies to a body.
        timeout: Duration,
    },
}

/// The slowest a registry may send once a body has had the network wait
/// to get going (bytes per second, averaged from the start of the body).
/// Below it the transfer is abandoned: a server that trickles a byte every
/// few seconds resets any idle timeout forever (TUF's slow-retrieval attack)
/// and would hold the store lock for as long as it liked.
pub const MIN_RATE: u64 = 1024;

/// A body reader that fails once it has run longer than `grace` and its
/// average rate since the start is under [`MIN_RATE`].
struct RateFloor<R> {
    inner: R,
    start: std::time::Instant,
    grace: Duration,
    got: u64,
}

impl<R> RateFloor<R> {
    fn new(inner: R, grace: Duration) -> RateFloor<R> {
        RateFloor {
            inner,
            start: std::time::Instant::now(),
            grace,
            got: 0,
        }
    }
}

impl<R: Read> Read for RateFloor<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.got += n as u64;
        let t = self.start.elapsed();
        if n > 0 && t > self.grace {
            let owed = (t - self.grace).as_secs_f64() * MIN_RATE as f64;
            if (self.got as f64) < owed {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "the registry sends too slowly: {} bytes in {:.0} s (the floor is {MIN_RATE} bytes/s after the first {:.0} s)",
                        self.got,
                        t.as_secs_f64(),
                        self.grace.as_secs_f64()
                    ),
                ));
            }
        }
        Ok(n)
    }
}

/// The network wait, from `APSI_NET_TIMEOUT` (seconds) or the default.
pub fn timeout_from_env() -> Duration {
    std::env::var("APSI_NET_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e6)
        .map(Duration::from_secs_f64)
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// Marks errors worth retrying: no answer, a stall, a dropped connection;
/// not an HTTP status nor an integrity failure.
const TRANSIENT: &str = "(transient)";

/// Whether an error from this module may go away on a retry.
pub fn is_transient(e: &PkgError) -> bool {
    e.kind == ErrorKind::Network && e.message.ends_with(TRANSIENT)
}

fn status_error(what: &str, code: u16) -> PkgError {
    let (msg, hint) = match code {
        404 => (
            "not found on the registry (HTTP 404)",
            "check the name and version; `apsi pkg search` lists what the registry has",
        ),
        410 => (
            "gone: the registry has removed it (HTTP 410)",
            "pick another version; this one was withdrawn",
        ),
        451 => (
            "unavailable for legal reasons (HTTP 451)",
            "the registry may not serve this package where you are; ask the registry's operator",
        ),
        401 | 403 => (
            "the registry refused access (HTTP 401/403)",
            "check the registry URL and any proxy credentials",
        ),
        _ if code >= 500 => ("the registry failed (HTTP 5xx)", "try again later"),
        _ => ("unexpected answer from the registry", "check the registry URL"),
    };
    PkgError::new(ErrorKind::Network, format!("{what}: {msg} [status {code}]")).hint(hint)
}

fn net_error(what: &str, e: &reqwest::Error) -> PkgError {
    let why = if e.is_timeout() {
        "timed out waiting for the registry".to_string()
    } else if e.is_connect() {
        "cannot connect to the registry".to_string()
    } else {
        let mut s = e.to_string();
        let mut src = std::error::Error::source(e);
        while let Some(x) = src {
            s.push_str(": ");
            s.push_str(&x.to_string());
            src = x.source();
        }
        s
    };
    let transient = e.is_timeout() || e.is_connect() || e.is_body() || e.is_request();
    let tag = if transient {
        format!(" {TRANSIENT}")
    } else {
        String::new()
    };
    PkgError::new(ErrorKind::Network, format!("{what}: {why}{tag}"))
        .hint("check the network and the registry URL, or use --offline to work from what is cached")
}

fn read_capped(what: &str, mut r: impl Read, cap: u64) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let n = r
        .by_ref()
        .take(cap.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| PkgError::new(ErrorKind::Network, format!("{what}: reading failed: {e}")))?;
    if n as u64 > cap {
        return err(
            ErrorKind::Integrity,
            format!("{what}: the body is longer than the {cap} bytes declared or allowed"),
        );
    }
    Ok(out)
}

impl Transport {
    /// A transport for a registry URL (`file:///path`, `http://…`, `https://…`).
    pub fn new(url: &str, timeout: Duration) -> Result<Transport> {
        if let Some(p) = url.strip_prefix("file://") {
            return Ok(Transport::File(PathBuf::from(p)));
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return err(
                ErrorKind::Usage,
                format!("registry URL '{url}': expected file://, http:// or https://"),
            );
        }
        let mut b = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("apsi-pkg/", env!("CARGO_PKG_VERSION")));
        if url.starts_with("http://") {
            // A plain-HTTP registry (a loopback or LAN mirror) needs no CA
            // roots: loading the system's ~150 certificate files costs 10-20 ms
            // of every command. Such a client cannot follow a redirect to
            // https, so that redirect is refused with a clear message.
            b = b
                .tls_built_in_root_certs(false)
                .redirect(reqwest::redirect::Policy::custom(|attempt| {
                    if attempt.url().scheme() == "https" {
                        let to = attempt.url().to_string();
                        attempt.error(format!(
                            "the registry redirected to {to}: set the registry URL to its https:// address"
                        ))
                    } else if attempt.previous().len() >= 10 {
                        attempt.error("too many redirects (more than 10)")
                    } else {
                        attempt.follow()
                    }
                }));
        }
        if let Some(path) = std::env::var_os("SSL_CERT_FILE").filter(|p| !p.is_empty()) {
            let path = PathBuf::from(path);
            let pem = fs::read(&path).map_err(|e| io_err("read SSL_CERT_FILE", &path, &e))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                PkgError::new(
                    ErrorKind::Usage,
                    format!("SSL_CERT_FILE '{}': not PEM certificates: {e}", path.display()),
                )
            })?;
            if certs.is_empty() {
                return Err(PkgError::new(
                    ErrorKind::Usage,
                    format!(
                        "SSL_CERT_FILE '{}': no PEM certificate in it (expected -----BEGIN CERTIFICATE----- blocks)",
                        path.display()
                    ),
                )
                .hint("point SSL_CERT_FILE at a PEM file of CA certificates, or unset it"));
            }
            for c in certs {
                b = b.add_root_certificate(c);
            }
        }
        let client = b.build().map_err(|e| net_error("cannot set up HTTP", &e))?;
        Ok(Transport::Http {
            base: url.trim_end_matches('/').to_string(),
            client,
            timeout,
        })
    }

    /// The absolute URL or path of a file relative to the registry root
    /// (an absolute `http(s)://` reference is kept).
    pub fn locate(&self, rel: &str) -> String {
        if rel.starts_with("http://") || rel.starts_with("https://") {
            return rel.to_string();
        }
        match self {
            Transport::File(p) => p.join(rel).display().to_string(),
            Transport::Http { base, .. } => format!("{base}/{}", rel.trim_start_matches('/')),
        }
    }

    /// Reads a small file, at most `cap` bytes. `Ok(None)` when it does not
    /// exist (404 / no such file), which callers treat as "no more roots".
    pub fn get_optional(&self, rel: &str, cap: u64) -> Result<Option<Vec<u8>>> {
        match self {
            Transport::File(root) => {
                let p = root.join(rel);
                match fs::File::open(&p) {
                    Ok(f) => read_capped(rel, f, cap).map(Some),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(io_err("read", &p, &e)),
                }
            }
            Transport::Http { client, timeout, .. } => {
                let url = self.locate(rel);
                let resp = client.get(&url).send().map_err(|e| net_error(&url, &e))?;
                let code = resp.status().as_u16();
                if code == 404 {
                    return Ok(None);
                }
                if code != 200 {
                    return Err(status_error(&url, code));
                }
                if let Some(len) = resp.content_length() {
                    if len > cap {
                        return err(
                            ErrorKind::Integrity,
                            format!("{url}: the body is longer than the {cap} bytes declared or allowed"),
                        );
                    }
                }
                read_capped(&url, RateFloor::new(resp, *timeout), cap).map(Some)
            }
        }
    }

    /// [`get_optional`], with a missing file an error.
    pub fn get(&self, rel: &str, cap: u64) -> Result<Vec<u8>> {
        match self.get_optional(rel, cap)? {
            Some(b) => Ok(b),
            None => Err(status_error(&self.locate(rel), 404)),
        }
    }

    /// Downloads `rel` into `partial`, resuming from its current length with
    /// an HTTP range (a 206 appends, a 200 restarts). Exactly `len` bytes
    /// must arrive. `progress` is told the bytes present so far.
    pub fn download(
        &self,
        rel: &str,
        partial: &Path,
        len: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(DownloadStart, String)> {
        let have = fs::metadata(partial).map(|m| m.len()).unwrap_or(0);
        let have = if have > len { 0 } else { have };
        match self {
            Transport::File(root) => {
                let src = root.join(rel);
                let mut f = fs::File::open(&src).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::NotFound {
                        status_error(&src.display().to_string(), 404)
                    } else {
                        io_err("open", &src, &e)
                    }
                })?;
                f.seek(SeekFrom::Start(have)).map_err(|e| io_err("read", &src, &e))?;
                let out = open_partial(partial, have)?;
                crate::fsutil::reserve(&out, len);
                let sha = copy_exact(&src.display().to_string(), f, out, partial, have, len, progress)?;
                Ok((
                    if have > 0 {
                        DownloadStart::Resumed(have)
                    } else {
                        DownloadStart::Fresh
                    },
                    sha,
                ))
            }
            Transport::Http { client, timeout, .. } => {
                let url = self.locate(rel);
                let mut req = client.get(&url);
                if have > 0 && have < len {
                    req = req.header(reqwest::header::RANGE, format!("bytes={have}-"));
                }
                let resp = req.send().map_err(|e| net_error(&url, &e))?;
                let code = resp.status().as_u16();
                let start = match code {
                    206 if have > 0 => {
                        let cr = resp
                            .headers()
                            .get(reqwest::header::CONTENT_RANGE)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("");
                        let ok = cr
                            .strip_prefix("bytes ")
                            .and_then(|r| r.split('-').next())
                            .and_then(|s| s.parse::<u64>().ok());
                        if ok != Some(have) {
                            return err(
                                ErrorKind::Network,
                                format!("{url}: asked for bytes from {have}, the server sent range '{cr}'"),
                            );
                        }
                        have
                    }
                    200 => 0,
                    416 => {
                        // Our partial file does not fit the server's: start over.
                        let _ = fs::remove_file(partial);
                        return self.download(rel, partial, len, progress);
                    }
                    c => return Err(status_error(&url, c)),
                };
                if let Some(cl) = resp.content_length() {
                    if start.saturating_add(cl) > len {
                        let _ = fs::remove_file(partial);
                        return err(
                            ErrorKind::Integrity,
                            format!("{url}: the body is longer than declared: expected {len} bytes, the server announces {}", start.saturating_add(cl)),
                        );
                    }
                }
                let out = open_partial(partial, start)?;
                crate::fsutil::reserve(&out, len);
                let r = copy_exact(&url, RateFloor::new(resp, *timeout), out, partial, start, len, progress);
                if let Err(e) = &r {
                    if e.kind == ErrorKind::Integrity {
                        let _ = fs::remove_file(partial);
                    }
                }
                let sha = r?;
                let how = if start > 0 {
                    DownloadStart::Resumed(start)
                } else if have > 0 {
                    DownloadStart::Restarted
                } else {
                    DownloadStart::Fresh
                };
                Ok((how, sha))
            }
        }
    }
}

/// How a download began: useful to tests and to logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownloadStart {
    Fresh,
    /// Resumed after this many bytes (a 206, or a local seek).
    Resumed(u64),
    /// A partial file existed but the server sent the whole body (200).
    Restarted,
}

fn open_partial(partial: &Path, keep: u64) -> Result<fs::File> {
    if let Some(parent) = partial.parent() {
        fs::create_dir_all(parent).map_err(|e| io_err("create the folder", parent, &e))?;
    }
    let mut f = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(partial)
        .map_err(|e| io_err("open", partial, &e))?;
    f.set_len(keep).map_err(|e| io_err("truncate", partial, &e))?;
    f.seek(SeekFrom::Start(keep))
        .map_err(|e| io_err("seek in", partial, &e))?;
    Ok(f)
}

/// Copies the body after the `start` bytes already in `partial`, hashing the
/// whole file as it goes; returns its sha256.
fn copy_exact(
    what: &str,
    mut r: impl Read,
    mut out: fs::File,
    partial: &Path,
    start: u64,
    len: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<String> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    if start > 0 {
        let f = fs::File::open(partial).map_err(|e| io_err("read", partial, &e))?;
        let n = std::io::copy(&mut f.take(start), &mut hasher).map_err(|e| io_err("read", partial, &e))?;
        if n != start {
            return err(ErrorKind::Io, format!("'{}' changed while resuming", partial.display()));
        }
    }
    let mut buf = vec![0u8; 256 << 10];
    let mut at = start;
    progress(at);
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = out.flush();
                return err(
                    ErrorKind::Network,
                    format!("{what}: the download stopped after {at} of {len} bytes: {e} {TRANSIENT}"),
                )
                .map_err(|e| e.hint("run the same command again: the download resumes where it stopped"));
            }
        };
        if at.saturating_add(n as u64) > len {
            return err(
                ErrorKind::Integrity,
                format!("{what}: the body is longer than declared: expected {len} bytes"),
            );
        }
        out.write_all(&buf[..n])
            .map_err(|e| PkgError::new(ErrorKind::Io, format!("writing the download of {what}: {e}")))?;
        hasher.update(&buf[..n]);
        at += n as u64;
        progress(at);
    }
    out.flush()
        .map_err(|e| PkgError::new(ErrorKind::Io, format!("writing the download of {what}: {e}")))?;
    if at != len {
        return Err(PkgError::new(
            ErrorKind::Network,
            format!("{what}: the download stopped after {at} of {len} bytes {TRANSIENT}"),
        )
        .hint("run the same command again: the download resumes where it stopped"));
    }
    Ok(crate::digest::to_hex(&hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_capped() {
        assert_eq!(read_capped("x", &b"abc"[..], 3).unwrap(), b"abc");
        let e = read_capped("x", &b"abcd"[..], 3).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Integrity);
    }

    #[test]
    fn status_errors_name_the_status() {
        for (code, word) in [(404, "not found"), (410, "gone"), (451, "legal")] {
            let e = status_error("u", code);
            assert!(e.message.contains(word) && e.message.contains(&code.to_string()), "{e}");
            assert!(!is_transient(&e));
        }
    }

    #[test]
    fn file_transport_reads_and_resumes() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("a"), b"0123456789").unwrap();
        let tr = Transport::new(&format!("file://{}", t.path().display()), DEFAULT_TIMEOUT).unwrap();
        assert!(tr.get_optional("missing", 10).unwrap().is_none());
        assert_eq!(tr.get("a", 10).unwrap(), b"0123456789");
        let partial = t.path().join("p");
        std::fs::write(&partial, b"0123").unwrap();
        let (how, sha) = tr.download("a", &partial, 10, &mut |_| {}).unwrap();
        assert_eq!(how, DownloadStart::Resumed(4));
        assert_eq!(sha, crate::digest::sha256_hex(b"0123456789"));
        assert!(Transport::new("ftp://x", DEFAULT_TIMEOUT).is_err());
    }
}
