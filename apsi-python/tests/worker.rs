//! The real worker: a `python3` process per bridge (each test has its own).
//! Tests with tensors need NumPy; without it they print a note and return.

use apsi_core::api::repr_of;
use apsi_core::api::tensor::DType;
use apsi_core::api::tensor::{as_tensor, tensor_value, Tensor};
use apsi_core::api::ErrorKind;
use apsi_core::api::Value;
use apsi_python::Bridge;
use std::process::Command;
use std::sync::Arc;

fn bridge() -> Arc<Bridge> {
    Arc::new(Bridge::new(true))
}

fn eval(b: &Bridge, code: &str) -> String {
    match b.eval(code) {
        Ok(v) => repr_of(&v),
        Err(e) => format!("{}: {}", e.kind, e.message),
    }
}

/// Whether the interpreter the worker uses can import numpy.
fn has_numpy(python: &str) -> bool {
    Command::new(python)
        .args(["-c", "import numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn default_python() -> String {
    apsi_python::worker::interpreter().0
}

#[test]
fn values_convert_both_ways() {
    let b = bridge();
    assert_eq!(eval(&b, "1 + 1"), "2");
    assert_eq!(eval(&b, "[x * 2 for x in range(3)]"), "[0, 2, 4]");
    assert_eq!(eval(&b, "(1, 'a', None, True, 2.5)"), "(1, 'a', none, true, 2.5)");
    assert_eq!(
        eval(&b, "{'b': 1, 3: [1.0], (1, 2): {}}"),
        "{'b': 1, 3: [1.0], (1, 2): {}}"
    );
    assert_eq!(eval(&b, "range(2, 10, 3)"), "range(2, 10, 3)");
    assert_eq!(eval(&b, "'é✓'"), "'é✓'");
    for (code, bits) in [
        ("float('-0.0')", (-0.0f64).to_bits()),
        ("float('inf')", f64::INFINITY.to_bits()),
        ("0.1", 0.1f64.to_bits()),
    ] {
        match b.eval(code) {
            Ok(Value::Float(f)) => assert_eq!(f.to_bits(), bits, "{code}"),
            other => panic!("{code} gave {other:?}"),
        }
    }
    assert!(matches!(b.eval("float('nan')"), Ok(Value::Float(f)) if f.is_nan()));
    assert_eq!(eval(&b, "2**63 - 1"), "9223372036854775807");
    assert_eq!(eval(&b, "-2**63"), "-9223372036854775808");
    // Apsi values go over and come back unchanged.
    let v = Value::tuple(vec![
        Value::Int(i64::MIN),
        Value::Float(-0.0),
        Value::str("x"),
        Value::list(vec![Value::None, Value::Bool(false)]),
    ]);
    let back = b.call("copy.deepcopy", std::slice::from_ref(&v), &[]).unwrap();
    assert_eq!(repr_of(&back), repr_of(&v));
}

#[test]
fn big_ints_and_odd_objects_are_clear_errors() {
    let b = bridge();
    let e = b.eval("2**64").unwrap_err();
    assert_eq!(e.kind, ErrorKind::OverflowError);
    assert!(e.message.contains("18446744073709551616"), "{}", e.message);
    let e = b.eval("__import__('math')").unwrap_err();
    assert_eq!(e.kind, ErrorKind::TypeError);
    assert!(
        e.message.contains("a Python module has no Apsi equivalent"),
        "{}",
        e.message
    );
    let e = b.eval("{1, 2}").unwrap_err();
    assert!(e.message.contains("Python set"), "{}", e.message);
    let e = b.eval("10**5000").unwrap_err();
    assert_eq!(e.kind, ErrorKind::OverflowError);
    // The worker survives all of these.
    assert_eq!(eval(&b, "3"), "3");
}

#[test]
fn exec_eval_and_call_share_a_namespace() {
    let b = bridge();
    assert!(matches!(
        b.exec("import math\ndef twice(x, k=2):\n    return x * k\nn = 21"),
        Ok(Value::None)
    ));
    assert_eq!(eval(&b, "twice(n)"), "42");
    assert_eq!(
        repr_of(
            &b.call("twice", &[Value::Int(5)], &[("k".into(), Value::Int(3))])
                .unwrap()
        ),
        "15"
    );
    assert_eq!(
        repr_of(&b.call("math.gcd", &[Value::Int(12), Value::Int(18)], &[]).unwrap()),
        "6"
    );
    assert_eq!(
        repr_of(
            &b.call("os.path.join", &[Value::str("a"), Value::str("b")], &[])
                .unwrap()
        ),
        "'a/b'"
    );
    assert_eq!(repr_of(&b.call("len", &[Value::str("abc")], &[]).unwrap()), "3");
    let e = b.call("no_such_module_xyz.f", &[], &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::PythonError);
    assert!(
        e.message
            .starts_with("ModuleNotFoundError: No module named 'no_such_module_xyz'"),
        "{}",
        e.message
    );
    let e = b.call("math.nope", &[], &[]).unwrap_err();
    assert!(e.message.starts_with("AttributeError:"), "{}", e.message);
    let e = b.call("1bad", &[], &[]).unwrap_err();
    assert!(e.message.contains("dotted name"), "{}", e.message);
}

#[test]
fn python_exceptions_carry_type_message_and_traceback() {
    let b = bridge();
    b.exec("def inner():\n    return 1 / 0\ndef outer():\n    return inner()")
        .unwrap();
    let e = b.eval("outer()").unwrap_err();
    assert_eq!(e.kind, ErrorKind::PythonError);
    assert_eq!(e.message, "ZeroDivisionError: division by zero");
    let hint = e.hint.clone().unwrap_or_default();
    assert!(hint.starts_with("Python traceback (most recent call last):"), "{hint}");
    assert!(
        hint.contains("<python.exec #1>\", line 2, in inner\n    return 1 / 0"),
        "{hint}"
    );
    assert!(
        !hint.contains("<string>"),
        "worker frames leak into the traceback: {hint}"
    );
    let e = b.exec("raise SystemExit(3)").unwrap_err();
    assert_eq!(e.message, "SystemExit: 3");
    let e = b.eval("1 +").unwrap_err();
    assert!(e.message.starts_with("SyntaxError:"), "{}", e.message);
    let e = b.exec("import json\njson.loads('{')").unwrap_err();
    assert!(e.message.starts_with("json.decoder.JSONDecodeError:"), "{}", e.message);
    assert_eq!(eval(&b, "'still here'"), "'still here'");
}

#[test]
fn a_crashed_worker_is_reported_then_restarted() {
    let b = bridge();
    let first = b.start().unwrap();
    let e = b.exec("import os\nos._exit(7)").unwrap_err();
    assert_eq!(e.kind, ErrorKind::PythonError);
    assert!(
        e.message
            .contains("the Python worker stopped during python.exec: it exited with status 7"),
        "{}",
        e.message
    );
    assert!(b.worker_info().is_none());
    assert_eq!(eval(&b, "6 * 7"), "42");
    assert_ne!(b.worker_info().unwrap().pid, first.pid);
    let e = b
        .exec("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        .unwrap_err();
    assert!(e.message.contains("killed by signal 9"), "{}", e.message);
}

#[test]
fn calls_from_many_threads_serialise() {
    let b = bridge();
    b.exec("count = 0\ndef bump(i):\n    global count\n    count += 1\n    return i * i")
        .unwrap();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let b = b.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let v = b.call("bump", &[Value::Int(t * 100 + i)], &[]).unwrap();
                    assert!(matches!(v, Value::Int(x) if x == (t * 100 + i) * (t * 100 + i)));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(eval(&b, "count"), "200");
}

#[test]
fn a_missing_interpreter_is_a_clear_error() {
    // Run in a child process so APSI_PYTHON does not leak into other tests.
    if std::env::var("APSI_PYTHON_TEST_CHILD").is_ok() {
        let b = Bridge::new(true);
        let e = b.eval("1").unwrap_err();
        assert_eq!(e.kind, ErrorKind::ModuleNotFoundError, "{}", e.message);
        assert!(
            e.message.contains("APSI_PYTHON=/nonexistent/python9 was not found"),
            "{}",
            e.message
        );
        assert!(e.hint.clone().unwrap_or_default().contains("APSI_PYTHON"));
        return;
    }
    let me = std::env::current_exe().unwrap();
    let out = Command::new(me)
        .args(["a_missing_interpreter_is_a_clear_error", "--exact", "--nocapture"])
        .env("APSI_PYTHON_TEST_CHILD", "1")
        .env("APSI_PYTHON", "/nonexistent/python9")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
}

#[test]
fn an_interpreter_that_is_not_python_is_a_clear_error() {
    if std::env::var("APSI_PYTHON_TEST_NOT_PYTHON").is_ok() {
        let b = Bridge::new(true);
        let e = b.eval("1").unwrap_err();
        assert_eq!(e.kind, ErrorKind::PythonError, "{}", e.message);
        assert_eq!(
            e.message,
            "the Python worker did not start: '/bin/true' exited with status 0"
        );
        assert!(e.hint.clone().unwrap_or_default().contains("APSI_PYTHON"));
        return;
    }
    if !std::path::Path::new("/bin/true").exists() {
        println!("note: no /bin/true here; skipped");
        return;
    }
    let me = std::env::current_exe().unwrap();
    let out = Command::new(me)
        .args([
            "an_interpreter_that_is_not_python_is_a_clear_error",
            "--exact",
            "--nocapture",
        ])
        .env("APSI_PYTHON_TEST_NOT_PYTHON", "1")
        .env("APSI_PYTHON", "/bin/true")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

#[test]
fn tensors_cross_as_numpy_arrays() {
    let py = default_python();
    if !has_numpy(&py) {
        println!("note: {py} has no NumPy; tensors_cross_as_numpy_arrays skipped");
        return;
    }
    let b = bridge();
    let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], vec![2, 3]);
    let v = b.call("numpy.transpose", &[tensor_value(t)], &[]).unwrap();
    let back = as_tensor(&v).expect("a tensor");
    assert_eq!((back.dtype, back.shape().to_vec()), (DType::F32, vec![3, 2]));
    assert_eq!(back.to_vec::<f32>(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    b.exec("import numpy as np").unwrap();
    for (code, dtype, shape) in [
        ("np.arange(6, dtype=np.int64).reshape(2, 3)", DType::I64, vec![2, 3]),
        ("np.arange(4, dtype='>f8')", DType::F64, vec![4]),
        ("np.array([1, 2], dtype=np.int16)", DType::I32, vec![2]),
        ("np.array([True, False])", DType::Bool, vec![2]),
        ("np.array([1, 255], dtype=np.uint8)", DType::UInt8, vec![2]),
        (
            "np.float16(1.5) * np.ones((2, 2), dtype=np.float16)",
            DType::F16,
            vec![2, 2],
        ),
        ("np.array(3.5)", DType::F64, vec![]),
        ("np.zeros((0, 3))", DType::F64, vec![0, 3]),
    ] {
        let v = b.eval(code).unwrap_or_else(|e| panic!("{code}: {}", e.message));
        let t = as_tensor(&v).unwrap_or_else(|| panic!("{code} gave {}", repr_of(&v)));
        assert_eq!((t.dtype, t.shape().to_vec()), (dtype, shape), "{code}");
    }
    assert_eq!(eval(&b, "np.arange(4, dtype='>f8')[3]"), "3.0");
    assert_eq!(eval(&b, "np.int64(7)"), "7");
    assert_eq!(eval(&b, "np.bool_(True)"), "true");
    let e = b.eval("np.array([1j])").unwrap_err();
    assert_eq!(e.kind, ErrorKind::TypeError);
    assert!(e.message.contains("complex128"), "{}", e.message);
}

#[test]
fn without_numpy_a_tensor_is_a_clear_error() {
    // Needs an interpreter that lacks NumPy: $APSI_TEST_PYTHON_NO_NUMPY, or
    // the system python3 when it has none.
    if let Ok(py) = std::env::var("APSI_PYTHON_TEST_NO_NUMPY_CHILD") {
        let b = Bridge::new(true);
        let t = tensor_value(Tensor::from_vec(vec![1.0f64], vec![1]));
        let e = b.call("len", &[t], &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ModuleNotFoundError);
        assert!(e.message.contains("NumPy is not installed"), "{}", e.message);
        assert!(e.hint.clone().unwrap_or_default().contains("pip install numpy"));
        // A result that is an array made without numpy cannot exist; plain values still work.
        assert_eq!(eval(&b, "[1, 2]"), "[1, 2]");
        println!("checked with {py}");
        return;
    }
    let candidates: Vec<String> = std::env::var("APSI_TEST_PYTHON_NO_NUMPY")
        .into_iter()
        .chain(["/usr/bin/python3".to_string(), default_python()])
        .collect();
    let Some(py) = candidates
        .into_iter()
        .find(|p| Command::new(p).arg("-V").output().is_ok() && !has_numpy(p))
    else {
        println!("note: every Python here has NumPy; without_numpy_a_tensor_is_a_clear_error skipped");
        return;
    };
    let me = std::env::current_exe().unwrap();
    let out = Command::new(me)
        .args(["without_numpy_a_tensor_is_a_clear_error", "--exact", "--nocapture"])
        .env("APSI_PYTHON_TEST_NO_NUMPY_CHILD", &py)
        .env("APSI_PYTHON", &py)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn module_functions_check_their_arguments() {
    let m = apsi_python::module_for(&bridge());
    assert_eq!(m.name, "python");
    assert_eq!(m.capabilities, vec!["python"]);
    let names: Vec<&str> = m.exports.iter().map(|(n, _)| &**n).collect();
    assert_eq!(names, vec!["eval", "exec", "call"]);
}

#[test]
fn bytes_convert_both_ways() {
    let b = bridge();
    assert_eq!(eval(&b, "b'GIF\\x89\\x00'"), "b'GIF\\x89\\x00'");
    assert_eq!(eval(&b, "bytearray(b'ab')"), "b'ab'");
    assert_eq!(eval(&b, "memoryview(b'')"), "b''");
    let v = Value::bytes(vec![0, 255, 65]);
    let back = b.call("copy.deepcopy", std::slice::from_ref(&v), &[]).unwrap();
    assert_eq!(repr_of(&back), "b'\\x00\\xffA'");
    assert_eq!(repr_of(&b.call("len", &[v], &[]).unwrap()), "3");
}
