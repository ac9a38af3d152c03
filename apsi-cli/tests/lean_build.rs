//! Lean builds: a `use` of a module that a build left out says so and how to
//! get it. A lean binary cannot be built inside `cargo test`, so the checker
//! is given exactly what such a binary gives it: no compiled-in modules.
//! (`.ci/run` builds the lean feature subsets themselves.)

use apsi_core::check::{load_with, AbsentModule, CheckEnv, LoadOptions};
use apsi_core::diagnostic::SourceMap;
use std::sync::Arc;

fn check_without_modules(src: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prog.apsi");
    std::fs::write(&path, src).unwrap();
    let env = CheckEnv {
        prelude: vec!["print".into()],
        builtin_modules: vec![],
        allowed: vec![],
        // What the CLI gives a lean build (modules::absent).
        absent_modules: ["parallel", "precision", "native"]
            .iter()
            .map(|m| AbsentModule {
                name: m.to_string(),
                help: format!("'{m}' is an Apsi module that this binary was built without: rebuild apsi with the `{m}` cargo feature (cargo install --path apsi-cli --features {m})"),
            })
            .collect(),
        source_readers: vec![],
    };
    let opts = LoadOptions {
        packages_dir: Some(dir.path().join("packages")),
        parser: &apsi_core::syntax::parse,
    };
    let sources = Arc::new(SourceMap::new());
    match load_with(&path, "prog.apsi", &env, sources, &opts) {
        Ok(_) => String::new(),
        Err(ds) => ds
            .iter()
            .map(|d| {
                format!(
                    "{}\n{}\n{}\n",
                    d.message,
                    d.notes.join("\n"),
                    d.help.clone().unwrap_or_default()
                )
            })
            .collect(),
    }
}

#[test]
fn a_module_left_out_of_the_build_says_so_and_how_to_get_it() {
    for m in ["parallel", "precision", "native"] {
        let out = check_without_modules(&format!("use {m}\n"));
        assert!(out.contains(&format!("no module named '{m}'")), "{out}");
        assert!(out.contains("built without"), "{m}: {out}");
        assert!(out.contains(&format!("--features {m}")), "{m}: {out}");
        assert!(
            !out.contains("apsi pkg install"),
            "{m} is a module of apsi, not a package: {out}"
        );
    }
}

#[test]
fn an_unknown_module_points_at_packages_instead() {
    let out = check_without_modules("use mathx\n");
    assert!(out.contains("apsi pkg install mathx"), "{out}");
    assert!(!out.contains("built without"), "{out}");
}
