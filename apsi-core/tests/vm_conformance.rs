//! The shared conformance programs that the core alone can run, loaded
//! through the checker (`check::load`) and run by the VM.

#![allow(clippy::result_large_err)]

mod vm_common;

use apsi_core::check::{self, CheckEnv};
use apsi_core::diagnostic::SourceMap;
use apsi_core::driver::{RunError, Runtime, RuntimeConfig};
use std::path::Path;
use std::sync::Arc;

/// `../shared/conformance` beside the checkout (where CI and developers have
/// it); absent elsewhere, in which case these tests say so and skip.
fn conformance_dir() -> Option<std::path::PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!(
            "note: {} not found; the shared conformance programs are skipped",
            p.display()
        );
        None
    }
}

fn run(path: &Path) -> Result<(), String> {
    let env = CheckEnv {
        prelude: apsi_core::builtins::prelude()
            .exports
            .iter()
            .map(|(n, _)| n.to_string())
            .collect(),
        ..Default::default()
    };
    let sources = Arc::new(SourceMap::new());
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let program =
        check::load(path, &name, &env, sources.clone()).map_err(|ds| format!("{name}: check failed: {ds:?}"))?;
    let cap = vm_common::Capture::default();
    let mut rt = Runtime::new(RuntimeConfig {
        output: Some(Box::new(cap.clone())),
        ..Default::default()
    })
    .expect("runtime");
    let result = rt.run(&program);
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let exp = vm_common::expectations(&src);
    let got: Vec<String> = cap.text().lines().map(str::to_string).collect();
    if got != exp.out {
        return Err(format!(
            "{name}: output differs\n--- expected\n{}\n--- got\n{}",
            exp.out.join("\n"),
            got.join("\n")
        ));
    }
    match (&exp.error, result) {
        (None, Ok(())) => Ok(()),
        (Some(k), Err(RunError::Error(d))) if d.kind.name() == k => {
            let text = apsi_core::diagnostic::render(&d, &sources, false);
            for want in &exp.stderr {
                if !text.contains(want.as_str()) {
                    return Err(format!("{name}: stderr lacks {want:?}:\n{text}"));
                }
            }
            Ok(())
        }
        (e, r) => Err(format!("{name}: expected error {e:?}, got {r:?}")),
    }
}

#[test]
fn core_conformance_programs() {
    let Some(dir) = conformance_dir() else { return };
    let names = [
        "01_arith.apsi",
        "02_strings.apsi",
        "03_control.apsi",
        "04_functions.apsi",
        "05_collections.apsi",
        "06_structs.apsi",
        "07_errors.apsi",
        "08_pipes.apsi",
        "09_decorators.apsi",
        "18_modules/main.apsi",
        "19_runtime_error.apsi",
    ];
    let failures: Vec<String> = names.iter().filter_map(|n| run(&dir.join(n)).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
