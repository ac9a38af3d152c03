//! `apsi-registry serve`: a static file server for a registry folder, with
//! byte ranges (so clients can resume) and nothing else: HTTP/1.1 GET and
//! HEAD on `hyper` (which owns the protocol: parsing, keep-alive, limits),
//! driven by a small tokio runtime; at most `max_connections` connections
//! at once (more wait in the kernel's backlog); paths confined to the
//! folder; files streamed in 64 KiB reads, never held in memory whole.

use apsi_pkg::error::{ErrorKind, PkgError, Result};
use bytes::Bytes;
use http_body::Frame;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use std::io::{SeekFrom, Write};
use std::net::TcpListener;
use std::path::{Component, Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncSeekExt, ReadBuf};

/// Idle keep-alive connections are closed after this long.
const IDLE: Duration = Duration::from_secs(30);
/// Request heads larger than this are refused (by hyper).
const MAX_HEAD: usize = 16 << 10;
/// How much of a file one read sends.
const CHUNK: usize = 64 << 10;

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

/// Accepts connections forever (at most `max_connections` at once).
pub fn run(listener: TcpListener, reg: &Path, max_connections: usize) {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("serve")
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the server's runtime: {e}");
            return;
        }
    };
    let reg = Arc::new(reg.to_path_buf());
    rt.block_on(async move {
        if listener.set_nonblocking(true).is_err() {
            return;
        }
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        let slots = Arc::new(tokio::sync::Semaphore::new(max_connections.max(1)));
        loop {
            let Ok(permit) = slots.clone().acquire_owned().await else {
                return;
            };
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let reg = reg.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| answer(reg.clone(), req));
                let conn = hyper::server::conn::http1::Builder::new()
                    .keep_alive(true)
                    .header_read_timeout(IDLE)
                    .max_buf_size(MAX_HEAD.max(8192))
                    .timer(hyper_util::rt::TokioTimer::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                let _ = conn.await;
                drop(permit);
            });
        }
    });
}

/// A response body: nothing, or `left` bytes of a file read in chunks.
enum Body {
    Empty,
    File { file: tokio::fs::File, left: u64 },
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<std::io::Result<Frame<Bytes>>>> {
        let Body::File { file, left } = &mut *self else {
            return Poll::Ready(None);
        };
        if *left == 0 {
            return Poll::Ready(None);
        }
        let mut buf = vec![0u8; CHUNK.min(*left as usize)];
        let mut rb = ReadBuf::new(&mut buf);
        match Pin::new(file).poll_read(cx, &mut rb) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                if n == 0 {
                    return Poll::Ready(Some(Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "file shrank while sending",
                    ))));
                }
                *left -= n as u64;
                buf.truncate(n);
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf)))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Empty => true,
            Body::File { left, .. } => *left == 0,
        }
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match self {
            Body::Empty => http_body::SizeHint::with_exact(0),
            Body::File { left, .. } => http_body::SizeHint::with_exact(*left),
        }
    }
}

fn empty(code: StatusCode, extra: &[(header::HeaderName, String)]) -> Response<Body> {
    let mut r = Response::new(Body::Empty);
    *r.status_mut() = code;
    for (k, v) in extra {
        if let Ok(v) = HeaderValue::from_str(v) {
            r.headers_mut().insert(k.clone(), v);
        }
    }
    r
}

async fn answer(reg: Arc<PathBuf>, req: Request<hyper::body::Incoming>) -> std::io::Result<Response<Body>> {
    let head = req.method() == Method::HEAD;
    if !head && req.method() != Method::GET {
        return Ok(empty(
            StatusCode::METHOD_NOT_ALLOWED,
            &[(header::ALLOW, "GET, HEAD".into())],
        ));
    }
    let Some(path) = locate(&reg, req.uri().path()) else {
        return Ok(empty(StatusCode::NOT_FOUND, &[]));
    };
    let Ok(mut file) = tokio::fs::File::open(&path).await else {
        return Ok(empty(StatusCode::NOT_FOUND, &[]));
    };
    let len = match file.metadata().await {
        Ok(m) if m.is_file() => m.len(),
        _ => return Ok(empty(StatusCode::NOT_FOUND, &[])),
    };
    let ctype = if path.extension().and_then(|e| e.to_str()) == Some("gz") {
        "application/gzip"
    } else {
        "application/json"
    };
    let range = req.headers().get(header::RANGE).and_then(|v| v.to_str().ok());
    let (code, start, n) = match range {
        Some(r) => match parse_range(r, len) {
            Some((a, b)) => (StatusCode::PARTIAL_CONTENT, a, b - a + 1),
            None => {
                return Ok(empty(
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    &[(header::CONTENT_RANGE, format!("bytes */{len}"))],
                ))
            }
        },
        None => (StatusCode::OK, 0, len),
    };
    if start > 0 {
        file.seek(SeekFrom::Start(start)).await?;
    }
    let body = if head {
        Body::Empty
    } else {
        Body::File { file, left: n }
    };
    let mut r = Response::new(body);
    *r.status_mut() = code;
    let h = r.headers_mut();
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if code == StatusCode::PARTIAL_CONTENT {
        if let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{}/{len}", start + n - 1)) {
            h.insert(header::CONTENT_RANGE, v);
        }
    }
    Ok(r)
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
    use std::io::Read;
    use std::net::TcpStream;

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

    fn exchange(addr: &str, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    /// Whether the response `out` has the header line `line` (any case).
    fn has_header(out: &str, line: &str) -> bool {
        out.to_ascii_lowercase().contains(&format!("\r\n{line}\r\n"))
    }

    #[test]
    fn serves_files_and_ranges_over_loopback() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("f.json"), b"0123456789").unwrap();
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(t.path().join("big.gz"), &big).unwrap();
        let (l, addr) = bind("127.0.0.1:0").unwrap();
        let dir = t.path().to_path_buf();
        std::thread::spawn(move || run(l, &dir, 4));
        // Two requests on one kept-alive connection.
        let out = exchange(
            &addr,
            "GET /f.json HTTP/1.1\r\nHost: x\r\nRange: bytes=4-\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        assert!(out.starts_with("HTTP/1.1 206 Partial Content\r\n"), "{out}");
        assert!(has_header(&out, "content-range: bytes 4-9/10"), "{out}");
        assert!(out.contains("\r\n\r\n456789HTTP/1.1 404 Not Found"), "{out}");
        // A file larger than a chunk arrives whole; HEAD sends no body;
        // other methods and unsatisfiable ranges are refused.
        let mut s = TcpStream::connect(&addr).unwrap();
        s.write_all(b"GET /big.gz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let at = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert_eq!(&raw[at..], &big[..]);
        let out = exchange(&addr, "HEAD /f.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert!(
            out.starts_with("HTTP/1.1 200 OK\r\n") && out.ends_with("\r\n\r\n"),
            "{out}"
        );
        assert!(has_header(&out, "content-length: 10"), "{out}");
        let out = exchange(&addr, "POST /f.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert!(out.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"), "{out}");
        let out = exchange(
            &addr,
            "GET /f.json HTTP/1.1\r\nHost: x\r\nRange: bytes=20-\r\nConnection: close\r\n\r\n",
        );
        assert!(out.starts_with("HTTP/1.1 416 Range Not Satisfiable\r\n"), "{out}");
        assert!(has_header(&out, "content-range: bytes */10"), "{out}");
    }
}
