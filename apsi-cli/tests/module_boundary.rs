//! The Module API boundary (docs/MODULES.md): every `use` module crate and
//! back end reaches the core only through `apsi_core::api`. A path such as
//! `apsi_core::value::Value` in a module crate's `src/` fails this test,
//! with the file and line; the fix is to use (or, as an API decision, add
//! to) `apsi_core::api`. Tests of a module crate may embed a whole runtime,
//! so only `src/` is held to the boundary.

use std::path::{Path, PathBuf};

const MODULE_CRATES: &[&str] = &[
    "apsi-parallel",
    "apsi-precision",
    "apsi-data",
    "apsi-python",
    "apsi-native",
    "apsi-math",
    "apsi-random",
    "apsi-plot",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `apsi_core::X` paths in `text` (comments left out) whose `X` is not `api`.
fn reaches_past_api(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("apsi_core::") {
            let after = &rest[at + "apsi_core::".len()..];
            let seg: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if seg != "api" {
                found.push((i + 1, line.trim().to_string()));
                break;
            }
            rest = after;
        }
    }
    found
}

#[test]
fn the_checker_of_the_boundary_sees_a_violation() {
    assert_eq!(reaches_past_api("use apsi_core::api::{Value, err};").len(), 0);
    assert_eq!(reaches_past_api("// apsi_core::vm is named in a comment").len(), 0);
    assert_eq!(reaches_past_api("use apsi_core::value::Value;").len(), 1);
    assert_eq!(
        reaches_past_api("let x = apsi_core::api::f(apsi_core::ops::g());").len(),
        1
    );
    assert_eq!(reaches_past_api("use apsi_core::{api, vm};").len(), 1);
}

#[test]
fn module_crates_use_only_the_module_api() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut violations = Vec::new();
    let mut files_seen = 0;
    for c in MODULE_CRATES {
        let mut files = Vec::new();
        rust_files(&root.join(c).join("src"), &mut files);
        assert!(!files.is_empty(), "{c}/src has no Rust files: is the list out of date?");
        for f in files {
            files_seen += 1;
            let text = std::fs::read_to_string(&f).unwrap();
            for (line, code) in reaches_past_api(&text) {
                violations.push(format!(
                    "{}:{line}: {code}",
                    f.strip_prefix(&root).unwrap_or(&f).display()
                ));
            }
        }
    }
    assert!(files_seen > 20);
    assert!(
        violations.is_empty(),
        "module crates reach past apsi_core::api (docs/MODULES.md):\n{}",
        violations.join("\n")
    );
}
