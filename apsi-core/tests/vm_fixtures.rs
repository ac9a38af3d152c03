//! Runs every `tests/fixtures/vm/*.apsi` program and the core conformance
//! programs, comparing output with their `# expect:` comments.

mod vm_common;

use std::path::{Path, PathBuf};

fn fixtures(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().map(|x| x == "apsi").unwrap_or(false))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn vm_fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vm");
    let files = fixtures(&dir);
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    let failures: Vec<String> = files.iter().filter_map(|f| vm_common::check_fixture(f).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} fixtures failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
