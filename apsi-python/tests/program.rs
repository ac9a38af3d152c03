//! Apsi programs using `python` through the core's checker and runtime (no
//! CLI): the Guard at check time, and the run-time check for what no scan
//! sees (here: a checker that was told Python is allowed while the process's
//! bridge was not).

use apsi_core::api::ErrorKind;
use apsi_core::driver::RunError;
use apsi_python::Bridge;
use apsi_testkit::{Failure, Program};
use std::sync::Arc;

/// Checks and runs `src` with the module on `bridge`; the checker allows
/// what `check_allows` says. Returns the output and the error kind, message
/// and line of the failure (the first diagnostic of a check failure), if any.
fn run(src: &str, bridge: &Arc<Bridge>, check_allows: &[&str]) -> (String, Option<(ErrorKind, String, usize)>) {
    let o = Program::new("main", src)
        .modules(vec![apsi_python::module_for(bridge)])
        .allow(check_allows)
        .run();
    let failure = match &o.result {
        Ok(()) => None,
        Err(Failure::Check(ds)) => {
            let first = ds.first().expect("a check failure has a diagnostic");
            Some((first.kind, first.message.clone(), o.line_of(first)))
        }
        Err(Failure::Run(RunError::Error(d))) => Some((d.kind, d.message.clone(), o.line_of(d))),
        Err(Failure::Run(RunError::Exit(c))) => Some((ErrorKind::Error, format!("exit {c}"), 0)),
    };
    (o.out, failure)
}

#[test]
fn a_program_runs_python() {
    let b = Arc::new(Bridge::new(true));
    let src = "use python\nprint(python.eval(\"1 + 1\"))\nprint(python.call(\"math.gcd\", 12, 18))\nprint(python.eval(\"[x * 2 for x in range(3)]\"))\n";
    assert_eq!(run(src, &b, &["python"]), ("2\n6\n[0, 2, 4]\n".to_string(), None));
}

#[test]
fn python_errors_are_catchable_with_their_kind() {
    let b = Arc::new(Bridge::new(true));
    let src =
        "use python\ntry:\n    python.eval(\"{}['k']\")\nexcept PythonError as e:\n    print(e.kind, e.message)\n";
    assert_eq!(run(src, &b, &["python"]).0, "PythonError KeyError: 'k'\n");
    let src = "use python\ntry:\n    python.eval(\"2 ** 70\")\nexcept OverflowError as e:\n    print(e.message)\n";
    assert_eq!(
        run(src, &b, &["python"]).0,
        "python.eval: Python int 1180591620717411303424 does not fit Apsi's 64-bit int\n"
    );
    let src = "use python\nprint(python.call(\"round\", 2.675, ndigits=2))\nprint(python.eval(1))\n";
    let (out, e) = run(src, &b, &["python"]);
    assert_eq!(out, "2.67\n");
    let (kind, msg, line) = e.unwrap();
    assert_eq!((kind, line), (ErrorKind::TypeError, 3));
    assert_eq!(msg, "python.eval() expects the Python expression as a str, found int");
}

#[test]
fn the_guard_refuses_before_anything_runs() {
    let b = Arc::new(Bridge::new(true));
    let (out, e) = run("print(\"never\")\nuse python\n", &b, &[]);
    assert_eq!(out, "");
    let (kind, msg, _) = e.unwrap();
    assert_eq!(kind, ErrorKind::PermissionError);
    assert!(msg.contains("--allow-python"), "{msg}");
    assert!(b.worker_info().is_none());
}

#[test]
fn without_permission_at_run_time_a_call_is_refused_where_it_happens() {
    // The checker was told Python is allowed, the process was not: the
    // run-time check refuses the call itself, with its location.
    let b = Arc::new(Bridge::new(false));
    let (out, e) = run("use python\nprint(\"ran\")\nx = python.eval(\"1\")\n", &b, &["python"]);
    assert_eq!(out, "ran\n");
    let (kind, msg, line) = e.unwrap();
    assert_eq!((kind, line), (ErrorKind::PermissionError, 3));
    assert_eq!(
        msg,
        "python.eval needs --allow-python: this program was not given permission to run Python"
    );
    assert!(b.worker_info().is_none(), "a worker started without permission");
}
