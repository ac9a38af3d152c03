//! `use python` through the real `apsi` binary: the conformance program, the
//! order of Python's and Apsi's output, errors as the user sees them, the
//! Guard, `parallel` tasks calling Python, tensors (when NumPy is there).
#![cfg(feature = "python")]

use std::process::{Command, Output};

fn run_in(dir: &std::path::Path, src: &str, args: &[&str]) -> Output {
    std::fs::write(dir.join("prog.apsi"), src).unwrap();
    let mut all: Vec<&str> = vec!["run"];
    all.extend_from_slice(args);
    all.push("prog.apsi");
    Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(&all)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn run(src: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    run_in(dir.path(), src, args)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const CONFORMANCE_22: &str = "use python\nprint(python.eval(\"1 + 1\"))\nprint(python.call(\"math.gcd\", 12, 18))\nprint(python.eval(\"[x * 2 for x in range(3)]\"))\n";

#[test]
fn the_conformance_program_passes_on_any_thread_count() {
    for threads in [None, Some("1"), Some("2")] {
        let mut args = vec!["--allow-python"];
        if let Some(t) = threads {
            args.extend(["--threads", t]);
        }
        let o = run(CONFORMANCE_22, &args);
        assert_eq!(
            (o.status.code(), text(&o.stdout).as_str()),
            (Some(0), "2\n6\n[0, 2, 4]\n"),
            "{}",
            text(&o.stderr)
        );
    }
    let o = run(CONFORMANCE_22, &["--allow-all"]);
    assert_eq!(text(&o.stdout), "2\n6\n[0, 2, 4]\n");
}

#[test]
fn python_output_keeps_its_place_among_apsi_output() {
    let src = "use python\nprint(\"one\")\npython.exec(\"print('two')\")\nprint(\"three\")\npython.exec(\"import sys\\nsys.stdout.write('four\\\\n')\")\nprint(\"five\")\n";
    let o = run(src, &["--allow-python"]);
    assert_eq!(text(&o.stdout), "one\ntwo\nthree\nfour\nfive\n", "{}", text(&o.stderr));
}

#[test]
fn without_the_flag_nothing_runs() {
    let o = run(
        "print(\"never printed\")\nuse python\nprint(python.eval(\"1 + 1\"))\n",
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stdout), "");
    let err = text(&o.stderr);
    assert!(
        err.starts_with("PermissionError: this program needs permission it was not given: --allow-python"),
        "{err}"
    );
    assert!(err.contains("apsi run --allow-python prog.apsi"), "{err}");
    // `apsi check` says the same.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.apsi"), "use python\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(["check", "p.apsi"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("--allow-python"));
    let o = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(["check", "--allow-python", "p.apsi"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn a_python_exception_shows_kind_location_and_traceback() {
    let src = "use python\n\ndef ratio(a, b):\n    return python.eval(f\"{a} / {b}\")\n\nprint(\"before\")\nprint(ratio(1, 0))\n";
    let o = run(src, &["--allow-python"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stdout), "before\n");
    insta::assert_snapshot!("python_error", text(&o.stderr));
}

#[test]
fn a_crashed_worker_is_an_error_and_the_next_call_works() {
    let src = "use python\ntry:\n    python.exec(\"import os\\nos._exit(3)\")\nexcept PythonError as e:\n    print(e.message)\nprint(python.eval(\"40 + 2\"))\n";
    let o = run(src, &["--allow-python"]);
    assert_eq!(
        text(&o.stdout),
        "the Python worker stopped during python.exec: it exited with status 3\n42\n",
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_missing_interpreter_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("prog.apsi"), "use python\nprint(python.eval(\"1\"))\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(["run", "--allow-python", "prog.apsi"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("APSI_PYTHON", "/nonexistent/python3")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.starts_with("ModuleNotFoundError: `use python` needs a Python 3 interpreter, and none was found: APSI_PYTHON=/nonexistent/python3 was not found"), "{err}");
    assert!(err.contains("prog.apsi:2:7"), "{err}");
}

#[test]
fn parallel_tasks_call_python_in_turn() {
    let src = "use python\nuse parallel\n\ndef sq(i):\n    return python.call(\"operator.mul\", i, i)\n\nprint(pmap(sq, range(20)))\ntasks = [spawn(sq, i) for i in range(8)]\nprint(wait_all(tasks))\n";
    for t in ["1", "2"] {
        let o = run(src, &["--allow-python", "--threads", t]);
        assert_eq!(
            text(&o.stdout),
            "[0, 1, 4, 9, 16, 25, 36, 49, 64, 81, 100, 121, 144, 169, 196, 225, 256, 289, 324, 361]\n[0, 1, 4, 9, 16, 25, 36, 49]\n",
            "--threads {t}: {}",
            text(&o.stderr)
        );
    }
}

#[test]
fn tensors_cross_as_numpy_arrays() {
    let python = std::env::var("APSI_PYTHON").unwrap_or_else(|_| "python3".into());
    let has_numpy = Command::new(&python)
        .args(["-c", "import numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    let src = "use python\nx = tensor([[1.0, 2.0], [3.0, 4.0]])\nprint(python.call(\"numpy.sum\", x))\ny = python.call(\"numpy.transpose\", x)\nprint(y)\nprint(y.dtype, y.shape)\n";
    let o = run(src, &["--allow-python"]);
    if !has_numpy {
        println!("note: {python} has no NumPy; checking the error instead");
        assert!(text(&o.stderr).contains("pip install numpy"), "{}", text(&o.stderr));
        return;
    }
    assert_eq!(
        text(&o.stdout),
        "10.0\ntensor([[1.0, 3.0],\n        [2.0, 4.0]])\nf64 (2, 2)\n",
        "{}",
        text(&o.stderr)
    );
}

#[cfg(target_os = "linux")]
#[test]
fn the_python_worker_does_not_outlive_a_killed_apsi() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("apsi-orphan-check-{}", std::process::id());
    std::fs::write(
        dir.path().join("prog.apsi"),
        format!("use python\nprint(\"calling\")\npython.exec(\"import time; x = '{marker}'; time.sleep(60)\")\n"),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(["run", "--allow-python", "prog.apsi"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let apsi_pid = child.id();
    // The worker is the python3 process whose parent is this apsi.
    let worker = (0..100).find_map(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ppid: u32 = stat.rsplit(')').next()?.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == apsi_pid).then_some(pid)
        })
    });
    let Some(worker) = worker else {
        let _ = child.kill();
        panic!("no Python worker started under apsi {apsi_pid}");
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = (0..40).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::fs::read_to_string(format!("/proc/{worker}/stat"))
            .map(|s| s.rsplit(')').next().and_then(|r| r.split_whitespace().next()) == Some("Z"))
            .unwrap_or(true)
    });
    assert!(gone, "the Python worker {worker} still runs after apsi was killed");
    let _ = marker;
}
