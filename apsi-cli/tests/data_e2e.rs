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
        let o = apsi_in(&d, &["run", "--threads", threads, "p.apsi"]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "stderr: {}",
            String::from_utf8_lossy(&o.stderr)
        );
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
