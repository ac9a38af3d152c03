//! `apsi-registry serve`: a static file server for a registry folder, with
//! byte ranges (so clients can resume) and nothing else. Paths are confined
//! to the folder; only GET and HEAD are answered.

use apsi_pkg::error::{ErrorKind, PkgError, Result};
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use tiny_http::{Header, Method, Response, Server, StatusCode};

/// Serves until killed. Prints `listening on http://ADDR` once bound.
pub fn serve(reg: &Path, addr: &str, threads: usize) -> Result<()> {
    let (server, bound) = bind(addr)?;
    println!("listening on http://{bound}");
    let _ = std::io::stdout().flush();
    run(server, reg, threads);
    Ok(())
}

/// Binds the listening socket; returns it with the address it got.
pub fn bind(addr: &str) -> Result<(Server, String)> {
    let server =
        Server::http(addr).map_err(|e| PkgError::new(ErrorKind::Network, format!("cannot listen on {addr}: {e}")))?;
    let bound = server
        .server_addr()
        .to_ip()
        .map(|a| a.to_string())
        .unwrap_or_else(|| addr.to_string());
    Ok((server, bound))
}

/// Answers requests on `threads` threads until the server is dropped elsewhere
/// or the process ends.
pub fn run(server: Server, reg: &Path, threads: usize) {
    let reg = reg.to_path_buf();
    let server = &server;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while let Ok(req) = server.recv() {
                    answer(&reg, req);
                }
            });
        }
    });
}

/// The file a URL path names, if it stays inside the registry.
fn locate(reg: &Path, url: &str) -> Option<PathBuf> {
    let path = url.split('?').next().unwrap_or("");
    let mut out = reg.to_path_buf();
    for c in Path::new(path.trim_start_matches('/')).components() {
        match c {
            Component::Normal(s) => {
                let s = s.to_str()?;
                if s.starts_with('.') {
                    return None;
                }
                out.push(s);
            }
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(out)
}

/// Parses `bytes=A-` or `bytes=A-B` against a length.
fn parse_range(h: &str, len: u64) -> Option<(u64, u64)> {
    let spec = h.trim().strip_prefix("bytes=")?;
    let (a, b) = spec.split_once('-')?;
    let start: u64 = a.trim().parse().ok()?;
    let end: u64 = if b.trim().is_empty() {
        len.checked_sub(1)?
    } else {
        b.trim().parse::<u64>().ok()?.min(len.checked_sub(1)?)
    };
    (start <= end && start < len).then_some((start, end))
}

fn header(k: &str, v: &str) -> Header {
    Header::from_bytes(k.as_bytes(), v.as_bytes())
        .unwrap_or_else(|_| Header::from_bytes(&b"X-Bad"[..], &b"1"[..]).expect("static header"))
}

fn answer(reg: &Path, req: tiny_http::Request) {
    let head = *req.method() == Method::Head;
    if !head && *req.method() != Method::Get {
        let _ = req.respond(Response::empty(StatusCode(405)));
        return;
    }
    let Some(path) = locate(reg, req.url()) else {
        let _ = req.respond(Response::empty(StatusCode(404)));
        return;
    };
    let Ok(mut file) = std::fs::File::open(&path) else {
        let _ = req.respond(Response::empty(StatusCode(404)));
        return;
    };
    let len = match file.metadata() {
        Ok(m) if m.is_file() => m.len(),
        _ => {
            let _ = req.respond(Response::empty(StatusCode(404)));
            return;
        }
    };
    let range = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("Range"))
        .map(|h| h.value.as_str().to_string());
    let ctype = if path.extension().and_then(|e| e.to_str()) == Some("gz") {
        "application/gzip"
    } else {
        "application/json"
    };
    match range {
        Some(r) => match parse_range(&r, len) {
            Some((start, end)) => {
                use std::io::{Read, Seek, SeekFrom};
                if file.seek(SeekFrom::Start(start)).is_err() {
                    let _ = req.respond(Response::empty(StatusCode(500)));
                    return;
                }
                let n = end - start + 1;
                let body: Box<dyn Read + Send> = if head {
                    Box::new(std::io::empty())
                } else {
                    Box::new(file.take(n))
                };
                let resp = Response::new(
                    StatusCode(206),
                    vec![
                        header("Content-Range", &format!("bytes {start}-{end}/{len}")),
                        header("Content-Type", ctype),
                        header("Accept-Ranges", "bytes"),
                    ],
                    body,
                    Some(n as usize),
                    None,
                );
                let _ = req.respond(resp);
            }
            None => {
                let resp =
                    Response::empty(StatusCode(416)).with_header(header("Content-Range", &format!("bytes */{len}")));
                let _ = req.respond(resp);
            }
        },
        None => {
            let body: Box<dyn std::io::Read + Send> = if head {
                Box::new(std::io::empty())
            } else {
                Box::new(file)
            };
            let resp = Response::new(
                StatusCode(200),
                vec![header("Content-Type", ctype), header("Accept-Ranges", "bytes")],
                body,
                Some(len as usize),
                None,
            );
            let _ = req.respond(resp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("bytes=10-", 100), Some((10, 99)));
        assert_eq!(parse_range("bytes=10-19", 100), Some((10, 19)));
        assert_eq!(parse_range("bytes=100-", 100), None);
        assert_eq!(parse_range("bytes=5-2", 100), None);
        assert_eq!(parse_range("items=1-2", 100), None);
    }

    #[test]
    fn paths_stay_inside() {
        let r = Path::new("/reg");
        assert_eq!(
            locate(r, "/index/ab/cd/abcd"),
            Some(PathBuf::from("/reg/index/ab/cd/abcd"))
        );
        assert_eq!(locate(r, "/../etc/passwd"), None);
        assert_eq!(locate(r, "/.scratch"), None);
    }
}
