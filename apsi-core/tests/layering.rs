//! The core's layers (docs/ARCHITECTURE.md, "Layers"): a top-level module
//! of `apsi-core` may import only from its own layer and the layers below
//! it. This test reads every source file, finds each `crate::X` path
//! (also inside `use crate::{…}`), and fails, naming the file and line, on
//! an import that goes up. A new top-level module fails it too until it is
//! given a layer here and in the docs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bottom to top. Modules in one layer may import each other.
const LAYERS: &[&[&str]] = &[
    &["error", "text", "diagnostic", "measure"],
    &["syntax"],
    &["check"],
    &["value", "code", "interrupt"],
    &["par"],
    &["module"],
    &["ops", "format", "builtins", "tensor"],
    &["compile", "serial"],
    &["vm"],
    &["driver"],
    &["api"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

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

/// The top-level modules named by `crate::` paths in `text`, with their
/// line numbers (comments left out).
fn imports(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // Brace groups of a `use crate::{…}` may span lines: join them first,
    // keeping track of where each character came from.
    let mut code = String::new();
    let mut line_of = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split("//").next().unwrap_or("");
        for ch in line.chars().chain(std::iter::once('\n')) {
            code.push(ch);
            line_of.push(i + 1);
        }
    }
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    let pat: Vec<char> = "crate::".chars().collect();
    while i + pat.len() <= bytes.len() {
        let preceded_by_ident = i > 0 && (bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_' || bytes[i - 1] == '$');
        if bytes[i..i + pat.len()] == pat[..] && !preceded_by_ident {
            let mut j = i + pat.len();
            if j < bytes.len() && bytes[j] == '{' {
                // `crate::{a, b::c, d::{e}}`: the first segment of each item.
                let mut depth = 0;
                let mut item = String::new();
                let mut at_item_start = true;
                j += 1;
                while j < bytes.len() {
                    let c = bytes[j];
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            if !item.is_empty() {
                                out.push((line_of[j], std::mem::take(&mut item)));
                            }
                            at_item_start = true;
                            j += 1;
                            continue;
                        }
                        _ => {}
                    }
                    if at_item_start && depth == 0 {
                        if c.is_alphanumeric() || c == '_' {
                            item.push(c);
                        } else if !item.is_empty() || !c.is_whitespace() {
                            if !item.is_empty() {
                                out.push((line_of[j], std::mem::take(&mut item)));
                            }
                            at_item_start = false;
                        }
                    }
                    j += 1;
                }
                if !item.is_empty() {
                    out.push((line_of[j.min(line_of.len() - 1)], item));
                }
            } else {
                let name: String = bytes[j..]
                    .iter()
                    .take_while(|c| c.is_alphanumeric() || **c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push((line_of[i], name));
                }
            }
            i += pat.len();
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn the_import_reader_finds_paths_and_brace_groups() {
    let found = |t: &str| imports(t).into_iter().map(|(_, m)| m).collect::<Vec<_>>();
    assert_eq!(found("use crate::value::Value;"), ["value"]);
    assert_eq!(found("use crate::{error::ErrorKind, vm::{a, b}};"), ["error", "vm"]);
    assert_eq!(
        found("use crate::{\n    ops,\n    format::str_of,\n};"),
        ["ops", "format"]
    );
    assert_eq!(found("// crate::vm in a comment"), Vec::<String>::new());
    assert_eq!(found("let x = $crate::tensor::f();"), Vec::<String>::new());
    assert_eq!(
        found("f(crate::ops::binary(a), crate::value::err(k))"),
        ["ops", "value"]
    );
}

#[test]
fn core_modules_import_only_from_their_layer_and_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        let p = e.path();
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        if name == "lib" {
            continue;
        }
        let files = modules.entry(name).or_default();
        if p.is_dir() {
            rust_files(&p, files);
        } else {
            files.push(p);
        }
    }
    let mut problems = Vec::new();
    for (module, files) in &modules {
        let Some(from) = layer_of(module) else {
            problems.push(format!(
                "top-level module `{module}` has no layer: add it to LAYERS in apsi-core/tests/layering.rs and to docs/ARCHITECTURE.md"
            ));
            continue;
        };
        for f in files {
            let text = std::fs::read_to_string(f).unwrap();
            for (line, target) in imports(&text) {
                match layer_of(&target) {
                    Some(to) if to > from => problems.push(format!(
                        "{}:{line}: `{module}` (layer {from}) imports `crate::{target}` (layer {to}), a layer above it",
                        f.strip_prefix(&src).unwrap_or(f).display()
                    )),
                    _ => {}
                }
            }
        }
    }
    assert!(modules.len() >= 16, "found only {:?}", modules.keys());
    assert!(problems.is_empty(), "layering broken:\n{}", problems.join("\n"));
}
