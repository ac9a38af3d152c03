//! `use data` through the real `apsi` binary: `.npy` files both ways, a
//! parallel `map` with `--threads 1` and `2`, and an error raised inside a
//! map worker reaching the user with its location.

use std::process::{Command, Output};

fn apsi_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("cannot run apsi")
}

/// Runs apsi in `dir`; it must succeed: its standard output.
fn apsi_ok(dir: &std::path::Path, args: &[&str]) -> String {
    let o = apsi_in(dir, args);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(
        o.status.code(),
        Some(0),
        "apsi {args:?}\nstderr: {}\nstdout: {out}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("apsi-data-e2e-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

#[cfg(feature = "data")]
#[test]
fn data_program_runs_with_one_and_two_threads() {
    let d = temp_dir("prog");
    let src = "use data\n\
x = arange(0, 12).astype(f32).reshape((4, 3))\n\
save_tensor(\"x.npy\", x)\n\
m = load_tensor(\"x.npy\", mmap=true)\n\
print(m.shape, m.dtype, m.sum())\n\
t = open_tensor(\"big.npy\", (1000, 4), f32)\n\
t[:, 0] = 1.0\n\
print(load_tensor(\"big.npy\", mmap=false).sum())\n\
ys = from_range(200) |> map(lambda v: v * 2, workers=4) |> batch(50)\n\
print([b.sum() for b in ys])\n\
print(len(list(from_list([1, 2, 3]) |> repeat(3))))\n\
print(throughput(from_tensors(x, batch=3)).rows)\n";
    std::fs::write(d.join("p.apsi"), src).expect("write");
    for threads in ["1", "2"] {
        let out = apsi_ok(&d, &["run", "--threads", threads, "p.apsi"]);
        assert_eq!(
            out, "(4, 3) f32 66.0\n1000.0\n[2450, 7450, 12450, 17450]\n9\n4\n",
            "threads {threads}"
        );
    }
    // The files are real .npy files: the header is NumPy's.
    let bytes = std::fs::read(d.join("x.npy")).expect("x.npy");
    assert!(bytes.starts_with(b"\x93NUMPY\x01\x00"));
    assert!(String::from_utf8_lossy(&bytes[10..80]).contains("'descr': '<f4', 'fortran_order': False, 'shape': (4, 3)"));
    assert_eq!(bytes.len(), 128 + 48);
}

#[cfg(feature = "data")]
#[test]
fn a_map_worker_error_reaches_the_user_with_its_line() {
    let d = temp_dir("err");
    let src = concat!(
        "use data\n",
        "def f(v):\n",
        "    if v == 7:\n",
        "        raise ValueError(\"bad item 7\")\n",
        "    return v\n",
        "for x in from_range(20) |> map(f, workers=3):\n",
        "    pass\n",
    );
    std::fs::write(d.join("e.apsi"), src).expect("write");
    let o = apsi_in(&d, &["run", "--threads", "2", "e.apsi"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("ValueError: bad item 7"), "{e}");
    assert!(e.contains("e.apsi:4"), "{e}");
}

#[cfg(feature = "data")]
#[test]
fn npy_errors_are_clear() {
    let d = temp_dir("npyerr");
    std::fs::write(d.join("bad.npy"), b"\x93NUMPY\x01\x00\x10\x00{'descr': '<c16'").expect("write");
    std::fs::write(d.join("e.apsi"), "use data\nload_tensor(\"bad.npy\")\n").expect("write");
    let o = apsi_in(&d, &["run", "e.apsi"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("bad.npy") && e.contains("expected"), "{e}");
    std::fs::write(d.join("m.apsi"), "use data\nload_tensor(\"missing.npy\")\n").expect("write");
    let o = apsi_in(&d, &["run", "m.apsi"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("IOError") && e.contains("missing.npy"), "{e}");
}

/// `from_csv` streams: a pass over a CSV file far larger than the reader's
/// chunk (64 KiB) keeps one record at a time, so the process's peak memory
/// stays well below the file's size (the whole file in memory, as rows,
/// would be several times it).
#[cfg(all(feature = "data", target_os = "linux"))]
#[test]
fn from_csv_streams_in_bounded_memory() {
    use std::io::Write;
    let d = temp_dir("csv-stream");
    let rows = 500_000u64;
    {
        let f = std::fs::File::create(d.join("big.csv")).expect("big.csv");
        let mut w = std::io::BufWriter::new(f);
        writeln!(w, "id,x,label").expect("write");
        for i in 0..rows {
            writeln!(
                w,
                "{i},{}.5,\"row {i:08}, padded to make the line longer: xxxxxxxxxxxxxxxxxxxxxxxx\"",
                i % 1000
            )
            .expect("write");
        }
    }
    let size = std::fs::metadata(d.join("big.csv")).expect("size").len();
    assert!(size > 40_000_000, "{size}");
    // The peak resident size before and after the loop: the process's
    // own start-up (the binary, the runtime) is not the stream's.
    let src = r#"use data
def peak():
    for line in read_text("/proc/self/status").split("\n"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0
before = peak()
n = 0
s = 0.0
for r in from_csv("big.csv"):
    n += 1
    s += r["x"]
print(n, s)
print(peak() - before)
"#;
    std::fs::write(d.join("p.apsi"), src).expect("write");
    let out = apsi_ok(&d, &["run", "p.apsi"]);
    let mut lines = out.lines();
    // Each block of 1000 rows adds 0.5 + 1.5 + … + 999.5 = 500,000.
    let expected_sum = (rows / 1000) as f64 * 500_000.0;
    assert_eq!(
        lines.next(),
        Some(format!("{rows} {expected_sum:.1}").as_str()),
        "{out}"
    );
    let grown_kb: u64 = lines.next().and_then(|l| l.trim().parse().ok()).expect("VmHWM");
    assert!(
        grown_kb * 1024 < size / 4,
        "peak memory grew by {grown_kb} kB reading a {size}-byte file: from_csv does not stream"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A loopback HTTP server answering GETs with `files` (others: 404), for
/// as many connections as come; returns its base URL.
#[cfg(feature = "data")]
fn serve(files: Vec<(&'static str, Vec<u8>)>) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut first = String::new();
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = first.split_whitespace().nth(1).unwrap_or("/").to_string();
            let found = files.iter().find(|(p, _)| *p == path);
            let (status, body) = match found {
                Some((_, b)) => ("200 OK", b.clone()),
                None => ("404 Not Found", b"no such file".to_vec()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    base
}

/// `--allow-net` lets a program read `http(s)://` sources (issue 17):
/// `read_text`, `from_csv` and `load_tensor` fetch them through the HTTP
/// client `apsi pkg` uses; without the flag a URL the Guard could not see
/// (built at run time) is a `PermissionError` with the hint; a missing file
/// is an `IOError` naming the status; writing functions and `from_files`
/// refuse URLs.
#[cfg(all(feature = "data", feature = "pkg"))]
#[test]
fn allow_net_reads_http_sources() {
    let d = temp_dir("net");
    std::fs::write(
        d.join("x.apsi"),
        "use data\nsave_tensor(\"x.npy\", arange(0, 6).reshape((2, 3)))\n",
    )
    .expect("write");
    apsi_ok(&d, &["run", "x.apsi"]);
    let npy = std::fs::read(d.join("x.npy")).expect("x.npy");
    let base = serve(vec![
        ("/hello.txt", b"hello from the server\n".to_vec()),
        ("/t.csv", b"a,b\n1,x\n2,y\n".to_vec()),
        ("/x.npy", npy),
    ]);
    let prog = format!(
        r#"use data
base = "{base}"
print(read_text(base + "/hello.txt").strip())
print(list(from_csv(base + "/t.csv")))
print(load_tensor(base + "/x.npy").sum())
try:
    read_text(base + "/missing.txt")
except IOError as e:
    print(e.message)
try:
    save_tensor(base + "/y.npy", ones(2))
except ValueError as e:
    print(e.message.split(";")[0])
try:
    from_files(base + "/*.csv")
except ValueError as e:
    print(e.message.split(";")[0])
"#
    );
    std::fs::write(d.join("net.apsi"), &prog).expect("write");
    let out = apsi_ok(&d, &["run", "--allow-net", "net.apsi"]);
    assert_eq!(
        out,
        format!(
            "hello from the server\n[{{'a': 1.0, 'b': 'x'}}, {{'a': 2.0, 'b': 'y'}}]\n15\n\
             read_text(): cannot read {base}/missing.txt: the server answered HTTP 404 Not Found\n\
             save_tensor() works on a local file\n\
             from_files() matches local files\n"
        )
    );
    // Without the flag, a URL made at run time is refused where it is read.
    let o = apsi_in(&d, &["run", "net.apsi"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("PermissionError: read_text(): reading http://"), "{err}");
    assert!(err.contains("apsi run --allow-net FILE"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
