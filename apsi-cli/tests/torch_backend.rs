//! `backend="torch"` and `check_torch` through the real `apsi` binary
//! (LAYERS.md §7).
//!
//! The refusals (no permission, no backend) run everywhere. The rest needs
//! a Python with torch, numpy and safetensors named by `APSI_TORCH_PYTHON`
//! (`.ci/run`'s PyTorch group sets it; `APSI_TORCH_PYTHON=/path/to/python
//! cargo test --workspace --test torch_backend`); without it those tests say
//! why and pass. A named but broken interpreter is a failure.
#![cfg(all(feature = "layers", feature = "python"))]

use std::process::{Command, Output};

struct Run {
    code: Option<i32>,
    out: String,
    err: String,
}

fn run(src: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("prog.apsi"), src).unwrap();
    let mut all: Vec<&str> = vec!["run"];
    all.extend_from_slice(args);
    all.push("prog.apsi");
    let home = dir.path().join("home");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_apsi"));
    cmd.args(&all)
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("APSI_HOME", &home)
        .env_remove("APSI_TORCH_PYTHON");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o: Output = cmd.output().unwrap();
    Run {
        code: o.status.code(),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn torch_python() -> Option<String> {
    let py = match std::env::var("APSI_TORCH_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => {
            eprintln!("skipped: APSI_TORCH_PYTHON is not set; set it to a Python with torch, numpy and safetensors");
            return None;
        }
    };
    match Command::new(&py).args(["-c", "import torch, numpy"]).output() {
        Ok(o) if o.status.success() => Some(py),
        Ok(o) => panic!(
            "APSI_TORCH_PYTHON={py} cannot import torch and numpy: {}",
            String::from_utf8_lossy(&o.stderr).trim().lines().last().unwrap_or("")
        ),
        Err(e) => panic!("APSI_TORCH_PYTHON={py} does not run: {e}"),
    }
}

const TINY: &str = "use layers\nm = Sequential([Dense(2, 1)])\nfit(m, (ones((4, 2)), ones((4, 1))), loss=\"mse\", epochs=1, backend=\"torch\")\n";

#[test]
fn without_the_flag_nothing_runs_and_the_error_names_it() {
    let r = run(TINY, &[], &[]);
    assert_eq!(r.code, Some(1), "{}", r.err);
    assert!(
        r.err.contains("PermissionError") && r.err.contains("--allow-python"),
        "{}",
        r.err
    );
    assert!(r.err.contains("apsi pkg install torch"), "{}", r.err);
    let r = run("use layers\nprint(1)\ncheck_torch()\n", &[], &[]);
    assert_eq!((r.code, r.out.as_str()), (Some(1), ""), "{}", r.err);
    assert!(r.err.contains("`check_torch()` needs --allow-python"), "{}", r.err);
}

#[test]
fn without_the_package_the_error_gives_the_install_command() {
    for src in [TINY, "use layers\ncheck_torch()\n"] {
        let r = run(src, &["--allow-python"], &[]);
        assert_eq!(r.code, Some(1), "{}", r.err);
        assert!(
            r.err
                .contains("ModuleNotFoundError: the PyTorch backend is not installed"),
            "{}",
            r.err
        );
        assert!(r.err.contains("apsi pkg install torch"), "{}", r.err);
    }
    let r = run(
        TINY,
        &["--allow-python"],
        &[("APSI_TORCH_PYTHON", "/nonexistent/python")],
    );
    assert!(
        r.err.contains("APSI_TORCH_PYTHON=/nonexistent/python does not exist"),
        "{}",
        r.err
    );
}

/// The digits MLP on both backends from the same weights: the fp32 and
/// fp64 training curves agree per epoch (1e-4 and 1e-10), and so do the
/// validation metrics, `evaluate` and `predict`.
#[test]
fn the_torch_curve_follows_the_apsi_engine() {
    let Some(py) = torch_python() else { return };
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/bench/7_layers/data/");
    if !std::path::Path::new(data).exists() {
        eprintln!("skipped: {data} is not there");
        return;
    }
    let src = format!(
        r#"use layers
use data
X = load_tensor("{data}digits_X.npy")
y = load_tensor("{data}digits_y.npy")
for prec in ["fp32", "fp64"]:
    dt = f32 if prec == "fp32" else f64
    seed(0)
    m1 = Sequential([Dense(64, 128, activation=relu, dtype=dt), Dropout(0.0), Dense(128, 10, dtype=dt)])
    seed(0)
    m2 = Sequential([Dense(64, 128, activation=relu, dtype=dt), Dropout(0.0), Dense(128, 10, dtype=dt)])
    h1 = fit(m1, (X[:1437], y[:1437]), loss="cross_entropy", optimizer=AdamW(lr=1e-3, schedule=cosine_lr(6)), epochs=6, seed=4, metrics=["accuracy"], validation=(X[1437:], y[1437:]), progress=false)
    h2 = fit(m2, (X[:1437], y[:1437]), loss="cross_entropy", optimizer=AdamW(lr=1e-3, schedule=cosine_lr(6)), epochs=6, seed=4, metrics=["accuracy"], validation=(X[1437:], y[1437:]), backend="torch", progress=false)
    d = 0.0
    for i in range(6):
        d = max(d, abs(h1.loss[i] - h2.loss[i]), abs(h1.val_loss[i] - h2.val_loss[i]))
    tol = 1e-4 if prec == "fp32" else 1e-10
    a = max([abs(h1.metrics["val_accuracy"][i] - h2.metrics["val_accuracy"][i]) for i in range(6)])
    print(prec, h2.backend, h2.device, h2.precision, d < tol, a < 0.003)
    e1 = evaluate(m1, (X[1437:], y[1437:]), loss="cross_entropy")
    e2 = evaluate(m1, (X[1437:], y[1437:]), loss="cross_entropy", backend="torch")
    print(abs(e1["loss"] - e2["loss"]) < tol, abs(e1["accuracy"] - e2["accuracy"]) < 0.003)
    print(abs(predict(m2, X[:50]) - predict(m2, X[:50], backend="torch")).max() < tol, params(m2)[0].dtype == dt)
"#
    );
    let r = run(&src, &["--allow-python"], &[("APSI_TORCH_PYTHON", &py)]);
    assert_eq!(
        (r.code, r.out.as_str()),
        (
            Some(0),
            "fp32 torch cpu fp32 true true\ntrue true\ntrue true\nfp64 torch cpu fp64 true true\ntrue true\ntrue true\n"
        ),
        "{}",
        r.err
    );
}

/// Mixed precision trains (the loss falls; weights stay f32), an LSTM too
/// (oneDNN has no bf16 LSTM on CPUs), and wrong requests are the errors
/// LAYERS.md names.
#[test]
fn mixed_precision_trains_and_wrong_requests_are_refused() {
    let Some(py) = torch_python() else { return };
    let src = r#"use layers
seed(1)
X = randn((256, 8))
y = (X[:, 0] + X[:, 1] > 0).astype("int64")
for prec in ["bf16", "fp16", "tf32"]:
    m = Sequential([Dense(8, 32, activation=relu), Dense(32, 2)])
    h = fit(m, (X, y), loss="cross_entropy", optimizer=Adam(lr=1e-2), epochs=8, seed=0, backend="torch", precision=prec, progress=false)
    print(h.precision, h.loss[-1] < h.loss[0], params(m)[0].dtype)
S = randn((64, 6, 3))
t = (S[:, 0, 0] > 0).astype("int64")
m = Sequential([LSTM(3, 8), Dense(8, 2)])
h = fit(m, (S, t), loss="cross_entropy", epochs=2, seed=0, backend="torch", precision="bf16", progress=false)
print(len(h.loss))
try:
    fit(m, (S, t), loss="cross_entropy", backend="torch", device="cuda:7", progress=false)
except ValueError as e:
    print("ValueError", "cuda:7" in str(e))
try:
    fit(m, (S, t), loss=lambda p, q: mse(p, q), backend="torch")
except NotImplementedError as e:
    print("NotImplementedError", "backend=\"cpu\"" in str(e))
try:
    fit(m, (S, t), loss="mse", backend="torch", precision="fp8")
except ValueError as e:
    print("ValueError", "fp8" in str(e))
try:
    evaluate(m, [(S, t)], backend="torch")
except NotImplementedError as e:
    print("NotImplementedError", "a Dataset runs on backend=\"cpu\"" in str(e))
"#;
    let r = run(src, &["--allow-python"], &[("APSI_TORCH_PYTHON", &py)]);
    let has_cuda = Command::new(&py)
        .args([
            "-c",
            "import torch, sys; sys.exit(0 if torch.cuda.device_count() > 7 else 1)",
        ])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if has_cuda {
        return;
    }
    assert_eq!(
        (r.code, r.out.as_str()),
        (
            Some(0),
            "bf16 true f32\nfp16 true f32\ntf32 true f32\n2\nValueError true\nNotImplementedError true\nValueError true\nNotImplementedError true\n"
        ),
        "{}",
        r.err
    );
}

/// `check_torch` at fp64 and fp32: every layer kind agrees, the table and
/// its summary line are printed, the rows come back as structs.
#[test]
fn check_torch_agrees_on_every_layer() {
    let Some(py) = torch_python() else { return };
    let src = r#"use layers
for prec in ["fp64", "fp32"]:
    rows = check_torch(device="cpu", precision=prec)
    bad = [r.layer for r in rows if not r.ok]
    print(prec, len(rows), bad)
"#;
    let r = run(src, &["--allow-python"], &[("APSI_TORCH_PYTHON", &py)]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.out, r.err);
    assert!(r.out.contains("on cpu, fp64: 17/17 layers agree"), "{}", r.out);
    assert!(r.out.contains("on cpu, fp32: 17/17 layers agree"), "{}", r.out);
    assert!(
        r.out.contains("fp64 17 []\n") && r.out.contains("fp32 17 []\n"),
        "{}",
        r.out
    );
    assert!(r.out.starts_with("layer "), "{}", r.out);
}
