//! Snapshot tests of every diagnostic the checker produces, rendered in full
//! (no colour), plus end-to-end checks of module loading and of programs
//! that must check clean. Fixtures live in tests/fixtures/check/.
//!
//! Update snapshots with `INSTA_UPDATE=always cargo test -p apsi-core --test check_snapshots`
//! and review the .snap files by reading them.

use apsi_core::check::{self, AbsentModule, BuiltinModuleInfo, CheckEnv, LoadOptions, Program, ReplScope, UseTarget};
use apsi_core::diagnostic::{render, render_all, Diagnostic, SourceMap, Span, TraceEntry};
use apsi_core::error::ErrorKind;
use apsi_core::syntax;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const FIXTURES: &str = "tests/fixtures/check";

fn strs(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

fn env(allowed: &[&str]) -> CheckEnv {
    let prelude = "print len range enumerate zip sorted reversed sum min max abs round int float str bool list \
        dict tuple isinstance type map filter reduce input read_text write_text exit time bench cpu_count grad \
        value_and_grad sqrt exp log log1p sin cos tan tanh sigmoid floor ceil sign maximum minimum where isnan \
        isinf concat stack matmul dot outer norm softmax tensor zeros ones full arange linspace eye rand randn \
        seed inf nan pi e Tensor super staticmethod property NotImplemented Exception hash iter next set bytes";
    CheckEnv {
        prelude: prelude.split_whitespace().map(String::from).collect(),
        builtin_modules: vec![
            BuiltinModuleInfo {
                name: "parallel".into(),
                exports: strs(&[
                    "spawn",
                    "wait_all",
                    "wait_any",
                    "channel",
                    "lock",
                    "atomic",
                    "parallel_for",
                    "parallel_reduce",
                    "pmap",
                    "set_threads",
                    "cpu_count",
                    "bench",
                ]),
                capabilities: vec![],
                namespace_only: false,
            },
            BuiltinModuleInfo {
                name: "python".into(),
                exports: strs(&["eval", "exec", "call"]),
                capabilities: strs(&["python"]),
                namespace_only: false,
            },
        ],
        allowed: strs(allowed),
        // As the `apsi` command describes a module of the design that no
        // build of this release has (apsi-cli/src/modules.rs).
        absent_modules: vec![AbsentModule {
            name: "gpu".into(),
            help: "`use gpu` (GPU tensors and `@gpu` kernels) is part of Apsi's design but not of this release (2.0.0): no build option or package provides it yet".into(),
        }],
        source_readers: ["read_text", "read_bytes", "load_tensor", "open_tensor", "from_npy", "from_csv", "from_files"].iter().map(|s| s.to_string()).collect(),
    }
}

fn opts() -> LoadOptions<'static> {
    LoadOptions {
        packages_dir: Some(PathBuf::from(FIXTURES).join("packages")),
        parser: &syntax::parse,
    }
}

/// Loads `FIXTURES/rel`, shown as `rel`.
fn load(rel: &str, env: &CheckEnv) -> (Result<Program, Vec<Diagnostic>>, Arc<SourceMap>) {
    let sources = Arc::new(SourceMap::new());
    let path = Path::new(FIXTURES).join(rel);
    (check::load_with(&path, rel, env, sources.clone(), &opts()), sources)
}

/// The full rendered text of a fixture's diagnostics.
fn rendered(rel: &str, env: &CheckEnv) -> String {
    match load(rel, env) {
        (Ok(_), _) => panic!("{rel} checked clean, expected errors"),
        (Err(ds), sources) => render_all(&ds, &sources, false),
    }
}

fn kinds(rel: &str, env: &CheckEnv) -> Vec<ErrorKind> {
    match load(rel, env) {
        (Ok(_), _) => Vec::new(),
        (Err(ds), _) => ds.iter().map(|d| d.kind).collect(),
    }
}

#[test]
fn syntax_error() {
    insta::assert_snapshot!(rendered("syntax_error.apsi", &env(&[])));
}

#[test]
fn name_error_with_hint() {
    insta::assert_snapshot!(rendered("name_error.apsi", &env(&[])));
}

#[test]
fn name_error_python_constants() {
    insta::assert_snapshot!(rendered("python_constants.apsi", &env(&[])));
}

#[test]
fn conformance_20_name_error() {
    let out = rendered("20_check_error.apsi", &env(&[]));
    assert!(
        out.starts_with("NameError: name 'undefined_name' is not defined\n"),
        "{out}"
    );
    assert!(out.contains("20_check_error.apsi:5:16"), "{out}");
}

#[test]
fn module_not_found() {
    insta::assert_snapshot!(rendered("missing_module/main.apsi", &env(&[])));
}

#[test]
fn arity_errors() {
    insta::assert_snapshot!(rendered("arity.apsi", &env(&[])));
}

#[test]
fn literal_type_errors() {
    insta::assert_snapshot!(rendered("literal_type.apsi", &env(&[])));
}

#[test]
fn conformance_28_literal_type() {
    let out = rendered("28_static_type_error.apsi", &env(&[]));
    assert!(
        out.starts_with("TypeError: g() argument 'n' must be int, not str\n"),
        "{out}"
    );
    assert!(out.contains("--> 28_static_type_error.apsi:7:9"), "{out}");
}

#[test]
fn unknown_dtype() {
    insta::assert_snapshot!(rendered("dtype.apsi", &env(&[])));
}

#[test]
fn break_and_return_in_parallel_for() {
    insta::assert_snapshot!(rendered("parallel_break.apsi", &env(&[])));
}

#[test]
fn names_assigned_in_a_parallel_for_body_stay_there() {
    insta::assert_snapshot!(rendered("parallel_scope.apsi", &env(&["parallel"])));
}

#[test]
fn del_attribute_is_an_error() {
    insta::assert_snapshot!(rendered("del_attr.apsi", &env(&[])));
}

#[test]
fn conformance_34_del_field() {
    let out = rendered("del_attr.apsi", &env(&[]));
    assert!(
        out.starts_with("AttributeError: cannot delete attribute 'y': struct fields are fixed\n"),
        "{out}"
    );
    assert!(out.contains("--> del_attr.apsi:6:5"), "{out}");
}

#[test]
fn misplaced_yield() {
    insta::assert_snapshot!(rendered("yield.apsi", &env(&[])));
}

#[test]
fn misplaced_control_flow() {
    insta::assert_snapshot!(rendered("control.apsi", &env(&[])));
}

#[test]
fn guard_names_every_missing_flag() {
    insta::assert_snapshot!(rendered("guard.apsi", &env(&[])));
}

#[test]
fn guard_names_check_torch() {
    std::env::remove_var("APSI_TORCH_PYTHON");
    insta::assert_snapshot!(rendered("guard_check_torch.apsi", &env(&[])));
    assert_eq!(kinds("guard_check_torch.apsi", &env(&["python"])), vec![]);
}

#[test]
fn guard_respects_allowed_flags() {
    assert_eq!(kinds("guard.apsi", &env(&["python", "net"])), vec![]);
    let out = rendered("guard.apsi", &env(&["python"]));
    assert!(
        out.starts_with("PermissionError: this program needs permission it was not given: --allow-net\n"),
        "{out}"
    );
    assert!(!out.contains("--allow-python"), "{out}");
    assert_eq!(kinds("21_guard.apsi", &env(&[])), vec![ErrorKind::PermissionError]);
    assert_eq!(kinds("22_guard_allowed.apsi", &env(&["python"])), vec![]);
    // Without the python module compiled in, `use python` is reported as a
    // missing module only: capabilities come from module descriptors, and
    // the core names no module itself.
    let mut bare = env(&[]);
    bare.builtin_modules.clear();
    assert_eq!(kinds("21_guard.apsi", &bare), vec![ErrorKind::ModuleNotFoundError]);
}

#[test]
fn missing_main_file() {
    let sources = Arc::new(SourceMap::new());
    let err = check::load_with(
        Path::new("no/such/prog.apsi"),
        "no/such/prog.apsi",
        &env(&[]),
        sources.clone(),
        &opts(),
    )
    .expect_err("a missing file cannot load");
    insta::assert_snapshot!(render_all(&err, &sources, false));
}

#[test]
fn runtime_diagnostic_layout() {
    let sources = SourceMap::new();
    let f = sources.add(
        "19_runtime_error.apsi",
        "def get(xs, i):\n    return xs[i]\n\nprint(\"before\")\nprint(get([1, 2, 3], 7))\n",
    );
    let mut d = Diagnostic::new(ErrorKind::IndexError, "list index 7 out of range (length 3)")
        .at(Span::new(f, 27, 32))
        .help("a list of length 3 has indices 0 to 2 (or -3 to -1)");
    d.trace = vec![
        TraceEntry {
            function: "<module>".into(),
            span: Span::new(f, 56, 74),
        },
        TraceEntry {
            function: "get".into(),
            span: Span::new(f, 27, 32),
        },
    ];
    insta::assert_snapshot!(render(&d, &sources, false));
}

#[test]
fn ambiguous_exports() {
    insta::assert_snapshot!(rendered("ambiguous/main.apsi", &env(&[])));
}

#[test]
fn use_cycle() {
    insta::assert_snapshot!(rendered("cycle/main.apsi", &env(&[])));
}

#[test]
fn modules_load_once_in_dependency_order() {
    let (res, _) = load("modules/main.apsi", &env(&[]));
    let program = res.expect("18_modules checks clean");
    let names: Vec<&str> = program.units.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["geometry", "__main__"]);
    let main = &program.units[1];
    assert_eq!(main.uses.len(), 2);
    assert_eq!(
        (main.uses[0].binding.as_str(), main.uses[0].unqualified),
        ("geometry", true)
    );
    assert_eq!((main.uses[1].binding.as_str(), main.uses[1].unqualified), ("g", false));
    assert_eq!(main.uses[0].target, UseTarget::File(0));
    assert_eq!(main.uses[1].target, UseTarget::File(0));
    let geometry = program.sources.get(program.units[0].file).expect("file");
    assert_eq!(
        geometry.name,
        format!(
            "modules{}lib{}geometry.apsi",
            std::path::MAIN_SEPARATOR,
            std::path::MAIN_SEPARATOR
        )
    );
    assert_eq!(program.units[0].scopes.exports(), ["TAU", "circumference"]);
}

#[test]
fn python_scoping_checks_clean() {
    let (res, sources) = load("scoping.apsi", &env(&[]));
    if let Err(ds) = res {
        panic!("{}", render_all(&ds, &sources, false));
    }
}

#[test]
fn conformance_programs_check_clean() {
    let dir = Path::new(FIXTURES).join("ok");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("ok/")
        .map(|e| e.expect("entry").path())
        .collect();
    names.sort();
    assert!(names.len() >= 6);
    for path in names {
        let rel = format!("ok/{}", path.file_name().and_then(|n| n.to_str()).expect("name"));
        let (res, sources) = load(&rel, &env(&[]));
        if let Err(ds) = res {
            panic!("{rel}:\n{}", render_all(&ds, &sources, false));
        }
    }
}

#[test]
fn repl_scope_accumulates_names() {
    let env = env(&[]);
    let sources = Arc::new(SourceMap::new());
    let mut scope = ReplScope::new(FIXTURES);
    let input = |text: &str, scope: &mut ReplScope| {
        let file = sources.add("<repl>", text);
        let (tree, errs) = syntax::parse(file, text);
        assert!(errs.is_empty(), "{text}");
        check::check_source_with(tree, file, &env, scope, sources.clone(), &opts())
    };
    let err = input("print(x)", &mut scope).expect_err("x is unknown");
    assert_eq!(err[0].message, "name 'x' is not defined");
    input("x = 1\ndef sq(v):\n    return v * v", &mut scope).expect("defines x and sq");
    input("print(sq(x))", &mut scope).expect("x and sq are known now");
    input("use parallel", &mut scope).expect("builtin module");
    input("print(spawn, parallel)", &mut scope).expect("exports are known");
    let program = input("use modules.lib.geometry\nprint(circumference(1.0))", &mut scope).expect("file module");
    assert_eq!(program.units.len(), 2);
    assert!(scope.names.contains("TAU"));
    // A failed input defines nothing.
    assert!(input("y = 2\nprint(zz)", &mut scope).is_err());
    assert!(!scope.names.contains("y"));
}

#[test]
fn calls_into_file_modules_are_checked() {
    let (res, sources) = load("modules/bad_calls.apsi", &env(&[]));
    let ds = res.expect_err("two bad calls");
    let messages: Vec<&str> = ds.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "circumference() missing 1 required positional argument: 'r'",
            "circumference() takes 1 positional argument but 2 were given"
        ]
    );
    // The definition is labelled in the module's own file.
    let out = render_all(&ds, &sources, false);
    assert!(
        out.contains("::: modules/lib/geometry.apsi:3:5") || out.contains("::: modules\\lib\\geometry.apsi:3:5"),
        "{out}"
    );
}

#[test]
fn bad_bytes_literal() {
    insta::assert_snapshot!(rendered("bad_bytes.apsi", &env(&[])));
}

#[test]
fn struct_rules() {
    insta::assert_snapshot!(rendered("structs.apsi", &env(&[])));
}
