//! The network settings a user's environment gives: `HTTPS_PROXY`,
//! `HTTP_PROXY` and `NO_PROXY` route (or do not route) registry requests
//! through a proxy, and `SSL_CERT_FILE` adds a CA that the registry's TLS
//! certificate is checked against. Everything runs on loopback: a recording
//! proxy that tunnels CONNECT to a real TLS server (rustls, with a CA and a
//! certificate for `registry.apsi-test.invalid` made by rcgen per run).
//!
//! The environment is process-wide, so the tests here take one lock.

use apsi_pkg::transport::Transport;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

static ENV_LOCK: Mutex<()> = Mutex::new(());

const PROXY_VARS: &[&str] = &[
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// Sets exactly these variables (the proxy ones and SSL_CERT_FILE cleared first).
fn set_env(vars: &[(&str, &str)]) {
    for v in PROXY_VARS.iter().chain(&["SSL_CERT_FILE", "REQUEST_METHOD"]) {
        std::env::remove_var(v);
    }
    for (k, v) in vars {
        std::env::set_var(k, v);
    }
}

const WAIT: Duration = Duration::from_secs(20);
const BODY: &str = "{\"dl\": \"dl/{name}-{vers}-{target}.tar.gz\"}";
const HOST: &str = "registry.apsi-test.invalid";

/// Reads an HTTP request head; returns its lines.
fn read_head(r: &mut BufReader<impl Read>) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let mut l = String::new();
        if r.read_line(&mut l).unwrap_or(0) == 0 {
            break;
        }
        let l = l.trim_end().to_string();
        if l.is_empty() {
            break;
        }
        lines.push(l);
    }
    lines
}

fn ok_response(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A plain HTTP server answering every request with [`BODY`]; records request lines.
fn http_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    thread::spawn(move || {
        for c in l.incoming().flatten() {
            let mut r = BufReader::new(c.try_clone().unwrap());
            let head = read_head(&mut r);
            s2.lock().unwrap().push(head.first().cloned().unwrap_or_default());
            let _ = (&c).write_all(ok_response(BODY).as_bytes());
        }
    });
    (format!("http://{addr}"), seen)
}

/// A proxy: `GET http://…` is answered itself; `CONNECT` is tunnelled to
/// `tls_backend` when given (whatever host was asked for), else refused.
fn proxy(tls_backend: Option<std::net::SocketAddr>) -> (String, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    thread::spawn(move || {
        for c in l.incoming().flatten() {
            let s3 = s2.clone();
            thread::spawn(move || {
                let mut r = BufReader::new(c.try_clone().unwrap());
                let head = read_head(&mut r);
                let first = head.first().cloned().unwrap_or_default();
                s3.lock().unwrap().push(first.clone());
                if first.starts_with("CONNECT ") {
                    let Some(b) = tls_backend else {
                        let _ = (&c).write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
                        return;
                    };
                    let up = TcpStream::connect(b).unwrap();
                    let _ = (&c).write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                    let (mut up_r, mut up_w) = (up.try_clone().unwrap(), up);
                    let mut down_w = c.try_clone().unwrap();
                    let t = thread::spawn(move || {
                        let _ = std::io::copy(&mut up_r, &mut down_w);
                    });
                    // Anything the client sent after the head is in the BufReader.
                    let _ = std::io::copy(&mut r, &mut up_w);
                    let _ = up_w.shutdown(std::net::Shutdown::Write);
                    let _ = t.join();
                } else {
                    let _ = (&c).write_all(ok_response(BODY).as_bytes());
                }
            });
        }
    });
    (format!("http://{addr}"), seen)
}

/// A CA (PEM) and a TLS server for [`HOST`] with a certificate it signed.
fn tls_server() -> (String, std::net::SocketAddr) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "apsi test CA");
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec![HOST.to_string()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let config = Arc::new(config);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    thread::spawn(move || {
        for c in l.incoming().flatten() {
            let config = config.clone();
            thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut tls = rustls::StreamOwned::new(conn, c);
                let mut r = BufReader::new(&mut tls);
                let head = read_head(&mut r);
                if head.is_empty() {
                    return;
                }
                let _ = tls.write_all(ok_response(BODY).as_bytes());
                let _ = tls.flush();
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    (ca.pem(), addr)
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    ENV_LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn http_proxy_carries_plain_http_requests() {
    let _g = lock();
    let (purl, seen) = proxy(None);
    set_env(&[("HTTP_PROXY", &purl)]);
    let t = Transport::new(&format!("http://{HOST}"), WAIT).unwrap();
    let got = t.get("config.json", 1 << 20).unwrap();
    assert_eq!(got, BODY.as_bytes());
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [format!("GET http://{HOST}/config.json HTTP/1.1")]
    );
}

#[test]
fn no_proxy_bypasses_the_proxy() {
    let _g = lock();
    let (purl, pseen) = proxy(None);
    let (surl, sseen) = http_server();
    set_env(&[("HTTP_PROXY", &purl), ("NO_PROXY", "localhost,127.0.0.1")]);
    let t = Transport::new(&surl, WAIT).unwrap();
    assert_eq!(t.get("config.json", 1 << 20).unwrap(), BODY.as_bytes());
    assert!(
        pseen.lock().unwrap().is_empty(),
        "the proxy was used: {:?}",
        pseen.lock().unwrap()
    );
    assert_eq!(
        sseen.lock().unwrap().as_slice(),
        ["GET /config.json HTTP/1.1".to_string()]
    );
    // Without NO_PROXY the same request goes through the proxy.
    set_env(&[("HTTP_PROXY", &purl)]);
    let t = Transport::new(&surl, WAIT).unwrap();
    assert_eq!(t.get("config.json", 1 << 20).unwrap(), BODY.as_bytes());
    assert_eq!(pseen.lock().unwrap().len(), 1);
    assert_eq!(sseen.lock().unwrap().len(), 1);
}

#[test]
fn https_through_a_proxy_with_a_ca_from_ssl_cert_file() {
    let _g = lock();
    let (ca_pem, tls_addr) = tls_server();
    let (purl, seen) = proxy(Some(tls_addr));
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca_pem).unwrap();
    let url = format!("https://{HOST}");

    // The CA from SSL_CERT_FILE makes the registry's certificate trusted.
    set_env(&[("HTTPS_PROXY", &purl), ("SSL_CERT_FILE", ca_file.to_str().unwrap())]);
    let got = Transport::new(&url, WAIT).unwrap().get("config.json", 1 << 20).unwrap();
    assert_eq!(got, BODY.as_bytes());
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [format!("CONNECT {HOST}:443 HTTP/1.1")]
    );

    // Without it, the same certificate is refused: TLS is really checked.
    set_env(&[("HTTPS_PROXY", &purl)]);
    let e = Transport::new(&url, WAIT)
        .unwrap()
        .get("config.json", 1 << 20)
        .unwrap_err();
    let msg = e.to_string().to_lowercase();
    assert!(
        msg.contains("certificate") || msg.contains("unknownissuer") || msg.contains("connect"),
        "{e}"
    );
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[test]
fn https_proxy_refusing_the_tunnel_is_an_error_not_a_direct_connection() {
    let _g = lock();
    let (purl, seen) = proxy(None);
    set_env(&[("HTTPS_PROXY", &purl)]);
    let e = Transport::new(&format!("https://{HOST}"), WAIT)
        .unwrap()
        .get("config.json", 1 << 20)
        .unwrap_err();
    assert_eq!(e.kind, apsi_pkg::ErrorKind::Network, "{e}");
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [format!("CONNECT {HOST}:443 HTTP/1.1")]
    );
}

#[test]
fn a_bad_ssl_cert_file_is_a_clear_error() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem");
    set_env(&[("SSL_CERT_FILE", missing.to_str().unwrap())]);
    let e = Transport::new("https://example.invalid", WAIT).err().unwrap();
    assert!(
        e.to_string().contains("SSL_CERT_FILE") && e.to_string().contains("missing.pem"),
        "{e}"
    );
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "this is not a certificate\n").unwrap();
    set_env(&[("SSL_CERT_FILE", junk.to_str().unwrap())]);
    let e = Transport::new("https://example.invalid", WAIT).err().unwrap();
    assert!(
        e.to_string().contains("SSL_CERT_FILE") && e.to_string().contains("junk.pem"),
        "{e}"
    );
    assert!(
        e.to_string().contains("no PEM certificate") || e.to_string().contains("not PEM"),
        "{e}"
    );
    set_env(&[]);
}
