//! `apsi-registry serve`: a static file server for a registry folder, with
//! byte ranges (so clients can resume) and nothing else: HTTP/1.1 GET and
//! HEAD, keep-alive, one thread per connection (capped), paths confined to
//! the folder, files sent with the kernel's copy (`std::io::copy`).

use apsi_pkg::error::{ErrorKind, PkgError, Result};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Idle keep-alive connections are closed after this long.
const IDLE: Duration = Duration::from_secs(30);
/// Request heads larger than this are refused.
const MAX_HEAD: usize = 16 << 10;

/// Serves until killed. Prints `listening on http://ADDR` once bound.
pub fn serve(reg: &Path, addr: &str, max_connections: usize) -> Result<()> {
    let (listener, bound) = bind(addr)?;
    println!("listening on http://{bound}");
    let _ = std::io::stdout().flush();
    run(listener, reg, max_connections);
    Ok(())
}

/// Binds the listening socket; returns it with the address it got.
pub fn bind(addr: &str) -> Result<(TcpListener, String)> {
    let l = TcpListener::bind(addr)
        .map_err(|e| PkgError::new(ErrorKind::Network, format!("cannot listen on {addr}: {e}")))?;
    let bound = l
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| addr.to_string());
    Ok((l, bound))
}

/// Accepts connections forever, each on its own thread (at most
/// `max_connections` at once; more wait in the kernel's backlog).
pub fn run(listener: TcpListener, reg: &Path, max_connections: usize) {
    let live = Arc::new(AtomicUsize::new(0));
    let reg = Arc::new(reg.to_path_buf());
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        while live.load(Ordering::SeqCst) >= max_connections.max(1) {
            std::thread::sleep(Duration::from_millis(5));
        }
        live.fetch_add(1, Ordering::SeqCst);
        let (live2, reg2) = (live.clone(), reg.clone());
        let spawned = std::thread::Builder::new().name("serve".into()).spawn(move || {
            let _ = connection(stream, &reg2);
            live2.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            live.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

struct Request {
    method: String,
    path: String,
    range: Option<String>,
    close: bool,
}

/// Reads one request head; `None` at a clean end of the connection.
fn read_head(r: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut first = String::new();
    if r.read_line(&mut first)? == 0 {
        return Ok(None);
    }
    let mut parts = first.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("/").to_string();
    let version = parts.next().unwrap_or("HTTP/1.0").to_string();
    let mut req = Request {
        method,
        path,
        range: None,
        close: version != "HTTP/1.1",
    };
    let mut total = first.len();
    loop {
        let mut h = String::new();
        let n = r.read_line(&mut h)?;
        total += n;
        if n == 0 || total > MAX_HEAD {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "bad request head"));
        }
        let t = h.trim_end();
        if t.is_empty() {
            break;
        }
        if let Some((k, v)) = t.split_once(':') {
            let v = v.trim();
            if k.eq_ignore_ascii_case("range") {
                req.range = Some(v.to_string());
            } else if k.eq_ignore_ascii_case("connection") {
                req.close = v.eq_ignore_ascii_case("close");
            }
        }
    }
    Ok(Some(req))
}

fn connection(stream: TcpStream, reg: &Path) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IDLE))?;
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut w = stream;
    while let Some(req) = read_head(&mut reader)? {
        answer(&mut w, reg, &req)?;
        if req.close {
            break;
        }
    }
    Ok(())
}

fn status_line(code: u16) -> &'static str {
    match code {
        200 => "200 OK",
        206 => "206 Partial Content",
        404 => "404 Not Found",
        405 => "405 Method Not Allowed",
        416 => "416 Range Not Satisfiable",
        _ => "500 Internal Server Error",
    }
}

fn empty(w: &mut TcpStream, code: u16, extra: &str) -> std::io::Result<()> {
    write!(w, "HTTP/1.1 {}\r\nContent-Length: 0\r\n{extra}\r\n", status_line(code))?;
    w.flush()
}

fn answer(w: &mut TcpStream, reg: &Path, req: &Request) -> std::io::Result<()> {
    let head = req.method == "HEAD";
    if !head && req.method != "GET" {
        return empty(w, 405, "Allow: GET, HEAD\r\n");
    }
    let Some(path) = locate(reg, &req.path) else {
        return empty(w, 404, "");
    };
    let Ok(mut file) = std::fs::File::open(&path) else {
        return empty(w, 404, "");
    };
    let len = match file.metadata() {
        Ok(m) if m.is_file() => m.len(),
        _ => return empty(w, 404, ""),
    };
    let ctype = if path.extension().and_then(|e| e.to_str()) == Some("gz") {
        "application/gzip"
    } else {
        "application/json"
    };
    let (code, start, n, extra) = match &req.range {
        Some(r) => match parse_range(r, len) {
            Some((a, b)) => (206, a, b - a + 1, format!("Content-Range: bytes {a}-{b}/{len}\r\n")),
            None => return empty(w, 416, &format!("Content-Range: bytes */{len}\r\n")),
        },
        None => (200, 0, len, String::new()),
    };
    write!(
        w,
        "HTTP/1.1 {}\r\nContent-Length: {n}\r\nContent-Type: {ctype}\r\nAccept-Ranges: bytes\r\n{extra}\r\n",
        status_line(code)
    )?;
    if !head {
        file.seek(SeekFrom::Start(start))?;
        let sent = std::io::copy(&mut (&mut file).take(n), w)?;
        if sent != n {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "file shrank while sending",
            ));
        }
    }
    w.flush()
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
    let last = len.checked_sub(1)?;
    let end: u64 = if b.trim().is_empty() {
        last
    } else {
        b.trim().parse::<u64>().ok()?.min(last)
    };
    (start <= end).then_some((start, end))
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
        assert_eq!(parse_range("bytes=0-", 0), None);
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

    #[test]
    fn serves_files_and_ranges_over_loopback() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("f.json"), b"0123456789").unwrap();
        let (l, addr) = bind("127.0.0.1:0").unwrap();
        let dir = t.path().to_path_buf();
        std::thread::spawn(move || run(l, &dir, 4));
        let mut s = TcpStream::connect(&addr).unwrap();
        write!(
            s,
            "GET /f.json HTTP/1.1\r\nRange: bytes=4-\r\n\r\nGET /nope HTTP/1.1\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 206 Partial Content\r\n"), "{out}");
        assert!(out.contains("Content-Range: bytes 4-9/10\r\n"), "{out}");
        assert!(out.contains("\r\n\r\n456789HTTP/1.1 404 Not Found"), "{out}");
    }
}
