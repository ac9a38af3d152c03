//! Unit tests of the checker on small programs.

use super::*;
use crate::diagnostic::{Diagnostic, SourceMap};
use crate::error::ErrorKind;
use std::sync::Arc;

fn strs(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

fn env() -> CheckEnv {
    CheckEnv {
        prelude: strs(&[
            "print",
            "len",
            "range",
            "sum",
            "min",
            "max",
            "list",
            "read_text",
            "zeros",
            "cpu_count",
        ]),
        builtin_modules: vec![
            BuiltinModuleInfo {
                name: "alpha".into(),
                exports: strs(&["shared", "only_a"]),
                capabilities: vec![],
                namespace_only: false,
            },
            BuiltinModuleInfo {
                name: "beta".into(),
                exports: strs(&["shared", "cpu_count"]),
                capabilities: vec![],
                namespace_only: false,
            },
            BuiltinModuleInfo {
                name: "torchy".into(),
                exports: vec![],
                capabilities: strs(&["python"]),
                namespace_only: false,
            },
        ],
        allowed: vec![],
        absent_modules: vec![AbsentModule {
            name: "gamma".into(),
            help: "gamma is not in this build".into(),
        }],
        source_readers: [
            "read_text",
            "read_bytes",
            "load_tensor",
            "open_tensor",
            "from_npy",
            "from_csv",
            "from_files",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    }
}

/// Checks `src` as a program file (written to a fresh temporary folder).
fn check_env(src: &str, env: &CheckEnv) -> Vec<Diagnostic> {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("apsi-check-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("t.apsi");
    std::fs::write(&path, src).expect("write test program");
    let (_, errs) = crate::syntax::parse(crate::diagnostic::FileId(0), src);
    assert!(errs.is_empty(), "parse errors in test source: {errs:?}");
    let sources = Arc::new(SourceMap::new());
    let opts = LoadOptions {
        packages_dir: Some(dir.join("packages")),
        parser: &crate::syntax::parse,
    };
    let result = load_with(&path, "t.apsi", env, sources, &opts);
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(_) => Vec::new(),
        Err(ds) => ds,
    }
}

fn check(src: &str) -> Vec<Diagnostic> {
    check_env(src, &env())
}

fn messages(src: &str) -> Vec<String> {
    check(src).into_iter().map(|d| d.message).collect()
}

fn clean(src: &str) {
    let ds = check(src);
    assert!(
        ds.is_empty(),
        "expected no errors, got {:?}",
        ds.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
}

#[test]
fn python_scoping_is_clean() {
    clean("def f():\n    print(y)\n    y = 1\n");
    clean("def outer():\n    a = 1\n    def inner():\n        return a\n    return inner\n");
    clean("xs = [i for i in range(3)]\nd = {k: v for k, v in [(1, 2)]}\n");
    clean("struct P:\n    x: int = 0\n    def m(self):\n        return G + self.x\nG = 1\n");
    clean("f = lambda a, *r, **kw: (a, r, kw)\n");
    clean("def g():\n    global made\n    made = 1\nprint(made)\n");
    clean("try:\n    pass\nexcept ValueError as e:\n    print(e, e.message)\n");
    clean("for a, (b, *c) in []:\n    print(a, b, c)\n");
    clean("x: int = 3\nprint(x, argv, native, bf16, ShapeError, Tensor)\n");
    clean("def f(n):\n    while n:\n        n -= 1\n        if n == 2:\n            break\n        continue\n    return n\n");
}

#[test]
fn unknown_names_everywhere() {
    assert_eq!(
        messages("def never():\n    return nope\n"),
        ["name 'nope' is not defined"]
    );
    // A comprehension's variable does not leak.
    assert_eq!(
        messages("ys = [q for q in range(2)]\nprint(q)\n"),
        ["name 'q' is not defined"]
    );
    // A struct's field is not a name in its methods.
    assert_eq!(
        messages("struct P:\n    x: int\n    def m(self):\n        return x\n"),
        ["name 'x' is not defined"]
    );
    // Inside decorators, defaults, lambdas, f-strings and except clauses.
    let ds = messages(
        "@deco\ndef f(a=dflt):\n    return f\"{fmt}\"\ng = lambda: lam\ntry:\n    pass\nexcept Nope:\n    pass\n",
    );
    assert_eq!(
        ds,
        [
            "name 'deco' is not defined",
            "name 'dflt' is not defined",
            "name 'fmt' is not defined",
            "name 'lam' is not defined",
            "name 'Nope' is not defined"
        ]
    );
}

#[test]
fn did_you_mean() {
    let d = check("total = 1\nprint(totl)\n");
    assert_eq!(d[0].kind, ErrorKind::NameError);
    assert_eq!(d[0].help.as_deref(), Some("did you mean 'total'?"));
    let d = check("prnit(1)\n");
    assert_eq!(d[0].help.as_deref(), Some("did you mean 'print'?"));
}

#[test]
fn module_exports_and_collisions() {
    clean("use alpha\nprint(only_a, alpha.shared)\n");
    assert_eq!(
        messages("use alpha\nuse beta\nprint(shared)\n"),
        ["name 'shared' is ambiguous: it is exported by 'alpha' and 'beta'"]
    );
    // A local name wins; qualified use is fine; `as` binds only the alias.
    clean("use alpha\nuse beta\nshared = 1\nprint(shared, alpha.shared)\n");
    clean("use alpha\nuse beta\ndef f(shared):\n    return shared\n");
    assert_eq!(
        messages("use alpha as a\nprint(a.only_a, only_a)\n"),
        ["name 'only_a' is not defined"]
    );
    assert_eq!(
        messages("use alpha as a\nprint(alpha)\n"),
        ["name 'alpha' is not defined"]
    );
    // A module export hides the prelude's name: no collision with the prelude.
    clean("use beta\nprint(cpu_count())\n");
    // `use` inside a function binds there.
    clean("def f():\n    use alpha\n    return only_a\n");
    assert_eq!(
        messages("def f():\n    use alpha\nprint(only_a)\n"),
        ["name 'only_a' is not defined"]
    );
}

#[test]
fn missing_module_does_not_cascade() {
    let ds = check("use helpers\nprint(helper_fn(1))\n");
    assert_eq!(ds.len(), 1);
    assert_eq!(ds[0].kind, ErrorKind::ModuleNotFoundError);
    assert_eq!(ds[0].message, "no module named 'helpers'");
}

#[test]
fn arity() {
    let m = |src: &str| messages(&format!("def f(a, b=1, *, c, d=2):\n    pass\n{src}\n"));
    assert_eq!(
        m("f(1, 2, 3, c=1)"),
        ["f() takes from 1 to 2 positional arguments but 3 were given"]
    );
    assert_eq!(m("f(c=1)"), ["f() missing 1 required positional argument: 'a'"]);
    assert_eq!(m("f(1)"), ["f() missing 1 required keyword-only argument: 'c'"]);
    assert_eq!(m("f(1, c=1, z=2)"), ["f() got an unexpected keyword argument 'z'"]);
    assert_eq!(m("f(1, a=1, c=1)"), ["f() got multiple values for argument 'a'"]);
    // What `*xs` / `**kw` might supply is not judged.
    assert!(m("f(*xs)\nxs = []").is_empty());
    assert!(m("f(1, **kw)\nkw = {}").is_empty());
    assert_eq!(m("f(1, 2, *xs, c=1)\nxs = []"), Vec::<String>::new());
    assert_eq!(
        messages("def g(a, b):\n    pass\ng(1, *xs, 2, 3)\nxs = []\n"),
        ["g() takes 2 positional arguments but at least 3 were given"]
    );
    assert_eq!(
        messages("def g():\n    pass\ng(1)\n"),
        ["g() takes 0 positional arguments but 1 was given"]
    );
    assert_eq!(
        messages("def g(a, b, c):\n    pass\ng()\n"),
        ["g() missing 3 required positional arguments: 'a', 'b', and 'c'"]
    );
    // *args / **kwargs in the definition.
    clean("def v(a, *rest, **kw):\n    pass\nv(1, 2, 3, x=1)\n");
    // Unknown callees: decorated, rebound, parameters, methods.
    clean("def deco(f):\n    return f\n@deco\ndef g(a):\n    pass\ng(1, 2, 3)\n");
    clean("def g(a):\n    pass\ng = print\ng(1, 2, 3)\n");
    clean("def g(a):\n    pass\ndef h(g):\n    return g(1, 2, 3)\n");
    // A local def is known too; struct constructors.
    assert_eq!(
        messages("def o():\n    def i(a):\n        pass\n    i()\n"),
        ["i() missing 1 required positional argument: 'a'"]
    );
    assert_eq!(
        messages("struct P:\n    x: int\n    y: int = 0\nP(1, z=2)\n"),
        ["P() got an unexpected field 'z'"]
    );
    clean("struct P:\n    x: int\n    y: int = 0\nP(y=1, x=2)\n");
}

#[test]
fn literal_types() {
    let m = |src: &str| {
        messages(&format!(
            "def f(n: int, x: float = 0.0, s: str = none, xs: list[int] = []):\n    pass\n{src}\n"
        ))
    };
    assert!(m("f(1, 2, \"a\", [1])").is_empty());
    assert!(m("f(true, x=1)").is_empty());
    assert_eq!(m("f(\"a\")"), ["f() argument 'n' must be int, not str"]);
    assert_eq!(m("f(1.5)"), ["f() argument 'n' must be int, not float"]);
    assert_eq!(m("f(-2, s=-1)"), ["f() argument 's' must be str, not int"]);
    assert_eq!(m("f(none)"), ["f() argument 'n' must be int, not none"]);
    assert_eq!(m("f(1, xs=(1, 2))"), ["f() argument 'xs' must be list, not tuple"]);
    assert_eq!(
        m("f(1, 2.0, f\"{1}\", {})"),
        ["f() argument 'xs' must be list, not dict"]
    );
    // Non-literals are judged at run time.
    assert!(m("f(len([]) * 1.5)").is_empty());
    assert_eq!(
        messages("def g(n: int = \"x\"):\n    pass\n"),
        ["default of 'n' in g() must be int, not str"]
    );
    assert_eq!(
        messages("struct S:\n    n: float = \"x\"\n"),
        ["default of 'n' in struct S must be float, not str"]
    );
    assert_eq!(
        messages("struct S:\n    n: float\nS([])\n"),
        ["S() argument 'n' must be float, not list"]
    );
}

#[test]
fn tensor_annotations() {
    clean("def f(a: Tensor, b: Tensor[f32], c: Tensor[N, M], d: Tensor[N, 3, fp8]) -> Tensor[N, bf16]:\n    pass\n");
    assert_eq!(
        messages("def f(a: Tensor[n]):\n    pass\n"),
        ["unknown dtype 'n' in a Tensor annotation"]
    );
    assert_eq!(
        messages("x: list[Tensor[N, f99]] = []\n"),
        ["unknown dtype 'f99' in a Tensor annotation"]
    );
    assert_eq!(
        messages("def f(a: Tensor[f32, f64]):\n    pass\n"),
        ["a Tensor annotation names at most one dtype"]
    );
    assert_eq!(
        messages("struct S:\n    t: Tensor[N, \"f32\"]\n"),
        ["a Tensor annotation takes dimensions and a dtype"]
    );
}

#[test]
fn parallel_for_rules() {
    clean("parallel for i in range(3):\n    if i:\n        continue\n    for j in range(2):\n        break\n");
    clean("def f():\n    parallel for i in range(3):\n        def g():\n            return i\n        g()\n    return 1\n");
    assert_eq!(
        messages("parallel for i in range(3):\n    break\n"),
        ["'break' is not allowed inside 'parallel for'"]
    );
    assert_eq!(
        messages("def f():\n    parallel for i in range(3):\n        while true:\n            return 1\n"),
        ["'return' is not allowed inside 'parallel for'"]
    );
    assert_eq!(
        messages("for i in []:\n    def f():\n        break\n"),
        ["'break' outside loop"]
    );
}

#[test]
fn guard() {
    let ds = check(
        "use torchy\nx = read_text(\"http://a\")\ny = read_text(f\"https://{x}\")\nprint(list(x, backend=\"torch\"))\n",
    );
    assert_eq!(ds.len(), 1);
    let d = &ds[0];
    assert_eq!(d.kind, ErrorKind::PermissionError);
    assert_eq!(
        d.message,
        "this program needs permission it was not given: --allow-python, --allow-net"
    );
    assert_eq!(d.labels.len(), 4);
    assert!(d
        .help
        .as_deref()
        .is_some_and(|h| h.contains("apsi run --allow-python --allow-net t.apsi")));
    let mut allowed = env();
    allowed.allowed = strs(&["python", "net"]);
    assert!(check_env("use torchy\nread_text(\"https://a\")\n", &allowed).is_empty());
    // Plain strings that merely mention a URL are not arguments; other backends are fine.
    clean("u = \"https://a\"\nprint(list([], backend=\"cpu\"))\n");
    // Printing or formatting a URL reads nothing (issue 17); reading one does,
    // by name or through a module.
    clean("print(\"http://example.com\")\nlen(\"https://a\")\n");
    let ds = check("def f(data):\n    return data.from_csv(\"https://x/y.csv\")\n");
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].kind, ErrorKind::PermissionError);
}

#[test]
fn repl_scope_learns_only_from_clean_inputs() {
    let env = env();
    let sources = Arc::new(SourceMap::new());
    let nowhere = std::path::PathBuf::from("/nonexistent-apsi-check-test");
    let mut scope = ReplScope::new(&nowhere);
    let opts = LoadOptions {
        packages_dir: Some(nowhere),
        parser: &crate::syntax::parse,
    };
    let run = |src: &str, scope: &mut ReplScope| {
        let file = sources.add("<repl>", src);
        let (tree, _) = crate::syntax::parse(file, src);
        check_source_with(tree, file, &env, scope, sources.clone(), &opts)
    };
    assert!(run("a = 1\nprint(b)", &mut scope).is_err());
    assert!(!scope.names.contains("a"));
    assert!(run("use alpha\nb = only_a", &mut scope).is_ok());
    assert!(run("print(a)", &mut scope).is_err());
    assert!(run("print(b, only_a, alpha)", &mut scope).is_ok());
    // A function may name what a later input defines; code that runs now may not.
    assert!(run("def f():\n    return later()\ng = lambda: later2", &mut scope).is_ok());
    assert!(run("h = [later3 for _ in range(1)]", &mut scope).is_err());
    let guard = run("use torchy", &mut scope).expect_err("python not allowed");
    assert!(guard[0]
        .help
        .as_deref()
        .is_some_and(|h| h.contains("restart the REPL with: apsi repl --allow-python")));
}

#[test]
fn file_exports_rules() {
    let src = "use alpha\nX = 1\n_p = 2\ndef f():\n    global G\n    G = 1\nstruct S:\n    a: int\nif X:\n    Y = 2\n";
    let (tree, _) = crate::syntax::parse(crate::diagnostic::FileId(0), src);
    let table = scopes::analyze(&tree, &["alpha".to_string()]);
    assert_eq!(table.exports(), ["G", "S", "X", "Y", "f"]);
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    const PIECES: &[&str] = &[
        "x = 1\n",
        "def f(a, b=1, *r, k, **kw):\n",
        "    return a\n",
        "    nonlocal q\n",
        "parallel for i in range(3):\n",
        "    break\n",
        "    continue\n",
        "for j in xs:\n",
        "struct S:\n",
        "    t: Tensor[N, f9]\n",
        "    def m(self):\n",
        "        return self\n",
        "f(1, 2, 3, z=4)\n",
        "S(1, 2)\n",
        "use alpha\n",
        "use nowhere.deep as d\n",
        "use beta\n",
        "print(shared)\n",
        "global g\n",
        "y = [v for v in w]\n",
        "lambda: zz\n",
        "read_text(\"https://x\")\n",
        "try:\n",
        "    pass\n",
        "except E as e:\n",
        "with a as (b, c):\n",
        "if x:\n",
        "else:\n",
        "  \n",
        "\t\n",
        "(\n",
        ")\n",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        #[test]
        fn checker_never_panics(idx in proptest::collection::vec(0..PIECES.len(), 0..30)) {
            let src: String = idx.iter().map(|&i| PIECES[i]).collect();
            let sources = Arc::new(SourceMap::new());
            let file = sources.add("fuzz.apsi", src.as_str());
            let (tree, _) = crate::syntax::parse(file, &src);
            let nowhere = std::path::PathBuf::from("/nonexistent-apsi-check-test");
            let mut scope = ReplScope::new(&nowhere);
            let opts = LoadOptions { packages_dir: Some(nowhere), parser: &crate::syntax::parse };
            if let Err(ds) = check_source_with(tree, file, &env(), &mut scope, sources.clone(), &opts) {
                let text = crate::diagnostic::render_all(&ds, &sources, true);
                prop_assert!(!text.is_empty());
            }
        }
    }
}

#[test]
fn deep_nesting_does_not_overflow() {
    // Within the parser's nesting limit, and a long flat chain of `+`
    // (a left-leaning tree as deep as the chain is long; the parser allows 1000).
    let mut src = String::from("x = 1\ndef f(v):\n    return v\n");
    for i in 0..150 {
        src.push_str(&" ".repeat(i));
        src.push_str("if x:\n");
    }
    src.push_str(&" ".repeat(150));
    src.push_str("pass\n");
    src.push_str(&format!("y = {}1{}\n", "(".repeat(150), ")".repeat(150)));
    src.push_str(&format!("w = {}\n", vec!["f(1)"; 990].join(" + ")));
    src.push_str("print(nope)\n");
    let sources = Arc::new(SourceMap::new());
    let file = sources.add("deep.apsi", src.as_str());
    let (tree, perr) = crate::syntax::parse(file, &src);
    assert!(perr.is_empty(), "{perr:?}");
    let nowhere = std::path::PathBuf::from("/nonexistent-apsi-check-test");
    let mut scope = ReplScope::new(&nowhere);
    let opts = LoadOptions {
        packages_dir: Some(nowhere),
        parser: &crate::syntax::parse,
    };
    let ds = check_source_with(tree, file, &env(), &mut scope, sources.clone(), &opts).expect_err("nope is unknown");
    assert_eq!(ds.len(), 1);
    assert!(crate::diagnostic::render_all(&ds, &sources, false).contains("nope"));
}

#[test]
fn an_absent_module_gets_the_help_the_driver_gave() {
    let ds = check_env("use gamma\n", &env());
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].help.as_deref(), Some("gamma is not in this build"));
    let ds = check_env("use gamme\n", &env());
    assert!(
        ds[0]
            .help
            .as_deref()
            .unwrap_or("")
            .contains("did you mean `use gamma`?"),
        "{ds:?}"
    );
}
