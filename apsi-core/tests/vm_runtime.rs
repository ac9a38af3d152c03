//! Runtime API: REPL snippets, diagnostics of uncaught errors, exit,
//! compiled-in modules, and running Apsi code from several threads.

#![allow(clippy::result_large_err)]

mod vm_common;

use apsi_core::diagnostic::FileId;
use apsi_core::driver::{RunError, Runtime, RuntimeConfig};
use apsi_core::module::ModuleBuilder;
use apsi_core::syntax;
use apsi_core::value::{Caller, Value};
use vm_common::{error, output, run_src, run_src_with, Capture};

fn repl() -> (Runtime, Capture) {
    let cap = Capture::default();
    let rt = Runtime::new(RuntimeConfig {
        output: Some(Box::new(cap.clone())),
        ..Default::default()
    })
    .expect("runtime");
    (rt, cap)
}

fn eval(rt: &mut Runtime, src: &str) -> Result<Option<Value>, RunError> {
    let (m, diags) = syntax::parse(FileId(0), src);
    assert!(diags.is_empty(), "{diags:?}");
    rt.eval_snippet(FileId(0), &m)
}

#[test]
fn runtime_is_send_and_sync() {
    fn is<T: Send + Sync>() {}
    is::<Runtime>();
    fn send<T: Send>() {}
    send::<apsi_core::vm::Executor>();
}

#[test]
fn repl_keeps_globals_and_returns_trailing_expressions() {
    let (mut rt, cap) = repl();
    assert!(matches!(eval(&mut rt, "x = 20\n"), Ok(None)));
    assert!(matches!(eval(&mut rt, "def f(y):\n    return x + y\n"), Ok(None)));
    match eval(&mut rt, "f(22)\n") {
        Ok(Some(Value::Int(42))) => {}
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(eval(&mut rt, "print('hi')\n"), Ok(None)),
        "a none value is not returned"
    );
    assert_eq!(cap.text(), "hi\n");
    // An error leaves earlier state intact; later inputs can define what was missing.
    assert!(matches!(eval(&mut rt, "g()\n"), Err(RunError::Error(d)) if d.kind.name() == "NameError"));
    assert!(matches!(eval(&mut rt, "def g():\n    return f(1)\n"), Ok(None)));
    assert!(matches!(eval(&mut rt, "g()\n"), Ok(Some(Value::Int(21)))));
    // Redefinition works in the REPL.
    assert!(matches!(eval(&mut rt, "def f(y):\n    return y\n"), Ok(None)));
    assert!(matches!(eval(&mut rt, "g()\n"), Ok(Some(Value::Int(1)))));
}

#[test]
fn uncaught_errors_carry_the_apsi_stack() {
    let src = "def inner(xs):\n    return xs[5]\n\ndef outer():\n    return inner([1])\n\nprint('before')\nouter()\n";
    let o = run_src(src);
    assert_eq!(o.out, "before\n", "output is flushed before the error");
    let Err(RunError::Error(d)) = o.result else {
        panic!("{:?}", o.result)
    };
    assert_eq!(d.kind.name(), "IndexError");
    let names: Vec<&str> = d.trace.iter().map(|t| t.function.as_str()).collect();
    assert_eq!(names, ["<module>", "outer", "inner"]);
    let sp = d.primary_span().expect("a primary label");
    assert_eq!(&src[sp.start as usize..sp.end as usize], "xs[5]");
    let call = d.trace[1].span;
    assert_eq!(&src[call.start as usize..call.end as usize], "inner([1])");
}

#[test]
fn type_errors_name_what_was_expected_and_found() {
    assert_eq!(
        error("def f(n: int):\n    return n\nf('x')\n"),
        ("TypeError".into(), "f() argument 'n' must be int, not str".into())
    );
    assert_eq!(error("1 + 'a'\n").0, "TypeError");
    assert_eq!(
        error("x = 5\nx()\n"),
        ("TypeError".into(), "'int' object is not callable".into())
    );
    assert_eq!(error("raise 5\n").0, "TypeError");
}

#[test]
fn exit_unwinds_through_finally_but_is_never_caught() {
    let o = run_src("try:\n    try:\n        exit(3)\n    except Error:\n        print('caught')\n    except:\n        print('bare')\n    finally:\n        print('finally')\nexcept Error:\n    print('outer')\nprint('after')\n");
    assert_eq!(o.out, "finally\n");
    assert!(matches!(o.result, Err(RunError::Exit(3))), "{:?}", o.result);
}

#[test]
fn compiled_in_modules_are_used_by_name() {
    let m = ModuleBuilder::new("demo", "1.0.0", "^2.0")
        .function("answer", |_c, _a, _k| Ok(Value::Int(42)))
        .constant("k", Value::Int(7))
        .build();
    let o = run_src_with(
        "use demo\nuse demo as d\nprint(answer(), demo.k, d.answer())\n",
        RuntimeConfig {
            modules: vec![m],
            ..Default::default()
        },
    );
    assert!(o.result.is_ok(), "{:?}", o.result);
    assert_eq!(o.out, "42 7 42\n");
}

#[test]
fn argv_is_a_list_of_strings() {
    let o = run_src_with(
        "print(argv, len(argv))\n",
        RuntimeConfig {
            argv: vec!["a".into(), "b c".into()],
            ..Default::default()
        },
    );
    assert_eq!(o.out, "['a', 'b c'] 2\n");
}

#[test]
fn closures_run_on_several_threads_at_once() {
    let (mut rt, _) = repl();
    let src =
        "counter = {'n': 0}\ndef work(k):\n    s = 0\n    for i in range(k):\n        s += i\n    return s\nwork\n";
    let Ok(Some(f)) = eval(&mut rt, src) else {
        panic!("no function")
    };
    let mut ex = rt.executor();
    let results: Vec<i64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|t| {
                let mut c = ex.new_thread_caller().expect("thread caller");
                let f = f.clone();
                s.spawn(move || match c.call(&f, &[Value::Int(1000 * (t + 1))], &[]) {
                    Ok(Value::Int(v)) => v,
                    other => panic!("{other:?}"),
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    assert_eq!(results, vec![499500, 1999000, 4498500, 7998000]);
    assert!(matches!(ex.call(&f, &[Value::Int(3)], &[]), Ok(Value::Int(3))));
}

#[test]
fn deep_recursion_then_recursion_error() {
    assert_eq!(
        output("def d(n):\n    return 0 if n == 0 else 1 + d(n - 1)\nprint(d(150000))\n"),
        "150000\n"
    );
    let (k, m) = error("def f(n):\n    return f(n + 1)\nf(0)\n");
    assert_eq!(k, "RecursionError");
    assert!(m.contains("maximum recursion depth"), "{m}");
}

#[test]
fn repl_inputs_checked_by_the_checker_can_use_file_modules() {
    use apsi_core::check::{check_source, CheckEnv, ReplScope};
    use apsi_core::diagnostic::SourceMap;
    use std::sync::Arc;
    let dir = std::env::temp_dir().join(format!("apsi-vm-repl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join("helpers.apsi"),
        "print('helpers loaded')\nK = 5\ndef twice(x):\n    return 2 * x\n",
    )
    .expect("write module");
    let env = CheckEnv {
        prelude: apsi_core::builtins::prelude()
            .exports
            .iter()
            .map(|(n, _)| n.to_string())
            .collect(),
        ..Default::default()
    };
    let sources = Arc::new(SourceMap::new());
    let mut scope = ReplScope::new(&dir);
    let (mut rt, cap) = repl();
    let mut input = |src: &str| {
        let file = sources.add("<repl>", src);
        let (m, diags) = syntax::parse(file, src);
        assert!(diags.is_empty(), "{diags:?}");
        let program = check_source(m, file, &env, &mut scope, sources.clone()).unwrap_or_else(|ds| panic!("{ds:?}"));
        rt.eval_program(&program)
    };
    assert!(matches!(input("use helpers\n"), Ok(None)));
    assert!(matches!(input("twice(K)\n"), Ok(Some(Value::Int(10)))));
    assert!(matches!(input("use helpers\nhelpers.K + 1\n"), Ok(Some(Value::Int(6)))));
    assert_eq!(cap.text(), "helpers loaded\n", "a module runs once per process");
}
