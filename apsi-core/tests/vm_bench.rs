//! Timing of the VM on small programs (not assertions; run with
//! `cargo test --release -p apsi-core --test vm_bench -- --ignored --nocapture`).

mod vm_common;

use std::time::Instant;

fn time(name: &str, src: &str, ops: f64) {
    // Best of three runs: the machine is shared, so the minimum is the signal.
    let stack = std::env::var("APSI_THREAD_STACK")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut best = f64::INFINITY;
    let mut out = String::new();
    for _ in 0..3 {
        let t = Instant::now();
        let o = vm_common::run_src_with(
            src,
            apsi_core::driver::RuntimeConfig {
                thread_stack: stack,
                ..Default::default()
            },
        );
        let dt = t.elapsed().as_secs_f64();
        if let Err(e) = &o.result {
            panic!("{name} failed: {e:?}");
        }
        best = best.min(dt);
        out = o.out;
    }
    println!(
        "{name:<28} {:8.1} ms {:8.2} ns/op   (output {})",
        best * 1e3,
        best * 1e9 / ops,
        out.trim()
    );
}

#[test]
#[ignore]
fn bench_vm() {
    time(
        "fib(30) per call",
        "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\nprint(fib(30))\n",
        2_692_537.0,
    );
    time(
        "s += i*i loop per iter",
        "def f():\n    s = 0\n    for i in range(2000000):\n        s += i * i\n    return s\nprint(f())\n",
        2_000_000.0,
    );
    time(
        "s = add(s, i) per call",
        "def add(a, b):\n    return a + b\ndef f():\n    s = 0\n    for i in range(1000000):\n        s = add(s, i)\n    return s\nprint(f())\n",
        1_000_000.0,
    );
    time(
        "str(i) + join per string",
        "def f():\n    parts = []\n    for i in range(1000000):\n        parts.append(str(i))\n    return len(\"\".join(parts))\nprint(f())\n",
        1_000_000.0,
    );
    time(
        "dict insert per op",
        "def f():\n    d = {}\n    for i in range(1000000):\n        k = (i * 2654435761) % 4294967296\n        d[k] = k\n    return len(d)\nprint(f())\n",
        1_000_000.0,
    );
    time(
        "dict insert+lookup per op",
        "def f():\n    keys = [(i * 2654435761) % 4294967296 for i in range(1000000)]\n    d = {}\n    for k in keys:\n        d[k] = k\n    s = 0\n    for k in keys:\n        s += d[k]\n    return s\nprint(f())\n",
        2_000_000.0,
    );
}

/// Time one program given by the file in `APSI_BENCH_FILE` (for profiling).
#[test]
#[ignore]
fn bench_file() {
    if let Ok(p) = std::env::var("APSI_BENCH_FILE") {
        let src = std::fs::read_to_string(&p).expect("read APSI_BENCH_FILE");
        time(&p, &src, 1.0);
    }
}
