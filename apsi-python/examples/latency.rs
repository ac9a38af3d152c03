//! Worker start-up and round-trip latency, from Rust (no Apsi interpreter
//! in the way): `cargo run --release -p apsi-python --example latency`.
//! Not a test; it prints what it measures on this machine.

use apsi_python::Bridge;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let mut starts = Vec::new();
    for _ in 0..9 {
        let b = Bridge::new(true);
        let t = Instant::now();
        match b.start() {
            Ok(_) => starts.push(t.elapsed().as_secs_f64() * 1e3),
            Err(e) => {
                eprintln!("{}: {}", e.kind, e.message);
                std::process::exit(1);
            }
        }
    }
    let b = Bridge::new(true);
    let info = b
        .start()
        .map(|i| format!("{} (Python {})", i.executable, i.version))
        .unwrap_or_default();
    let mut rt = Vec::new();
    for _ in 0..1000 {
        let t = Instant::now();
        let _ = b.eval("1");
        rt.push(t.elapsed().as_secs_f64() * 1e6);
    }
    println!("interpreter: {info}");
    println!(
        "worker start-up (spawn to hello), median of 9: {:.1} ms",
        median(starts)
    );
    println!("python eval(\"1\") round trip, median of 1000: {:.1} us", median(rt));
}
