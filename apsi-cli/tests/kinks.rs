//! Gradients at kinks and ties against PyTorch's: `tests/kinks/torch_kinks.json`
//! (written by `tests/kinks/gen_torch.py` with PyTorch, committed) holds, per
//! case, one function in PyTorch and in Apsi, its inputs and PyTorch's
//! gradients of the sum of its result. This test runs every Apsi function
//! through `grad` in the real `apsi` binary and requires the same gradients
//! (equal, both NaN, or within 1e-12 relative); a case marked `apsi_error`
//! must raise that error kind instead (a deliberate difference, explained in
//! the case's note). PyTorch is not needed to run it.

use serde_json::Value as J;
use std::path::Path;
use std::process::Command;

/// An Apsi literal for a fixture value (nested lists; "inf"/"-inf"/"nan").
fn lit(v: &J) -> String {
    match v {
        J::Array(items) => format!("[{}]", items.iter().map(lit).collect::<Vec<_>>().join(", ")),
        J::String(s) => s.clone(),
        J::Number(n) => format!("{:?}", n.as_f64().expect("a number")),
        other => panic!("unexpected fixture value {other}"),
    }
}

fn flat(v: &J, out: &mut Vec<f64>) {
    match v {
        J::Array(items) => items.iter().for_each(|x| flat(x, out)),
        J::String(s) => out.push(s.parse().expect("inf, -inf or nan")),
        J::Number(n) => out.push(n.as_f64().expect("a number")),
        other => panic!("unexpected fixture value {other}"),
    }
}

fn same(got: f64, want: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want || (got - want).abs() <= 1e-12 * want.abs().max(1.0)
}

#[test]
fn gradients_at_kinks_and_ties_match_pytorch() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("tests/kinks/torch_kinks.json")).expect("the fixture");
    let doc: J = serde_json::from_str(&text).expect("fixture JSON");
    let cases = doc["cases"].as_array().expect("cases");
    let mut prog = vec!["def W(v):".to_string(), "    return tensor(v)".to_string()];
    for (i, c) in cases.iter().enumerate() {
        let inputs = c["inputs"].as_object().expect("inputs");
        let names: Vec<&str> = inputs.keys().map(String::as_str).collect();
        let args: Vec<String> = names.iter().map(|n| format!("tensor({})", lit(&inputs[*n]))).collect();
        let argnums: Vec<String> = (0..names.len()).map(|k| k.to_string()).collect();
        prog.push(format!("def case_{i}({}):", names.join(", ")));
        prog.push(format!("    return ({}).sum()", c["apsi"].as_str().expect("apsi")));
        prog.push("try:".into());
        prog.push(format!(
            "    gs = grad(case_{i}, argnums=({},))({})",
            argnums.join(", "),
            args.join(", ")
        ));
        prog.push("    vals = []".into());
        prog.push("    for g in gs:".into());
        prog.push("        vals = vals + [str(v) for v in g.flatten().tolist()]".into());
        prog.push(format!("    print('{i} ' + ' '.join(vals))"));
        prog.push("except Error as err:".into());
        prog.push(format!("    print('{i} error:' + err.kind)"));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kinks.apsi");
    std::fs::write(&file, prog.join("\n") + "\n").unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(["run", file.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "apsi failed: {}\n{stdout}",
        String::from_utf8_lossy(&run.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), cases.len(), "one line per case:\n{stdout}");
    let mut failures = Vec::new();
    for (i, (c, line)) in cases.iter().zip(&lines).enumerate() {
        let name = c["name"].as_str().unwrap_or("?");
        let rest = line
            .strip_prefix(&format!("{i} "))
            .or_else(|| line.strip_prefix(&format!("{i}")));
        let rest = rest.unwrap_or_else(|| panic!("case {i} ({name}): output out of order: {line}"));
        if let Some(kind) = c.get("apsi_error").and_then(J::as_str) {
            if rest != format!("error:{kind}") {
                failures.push(format!("{name}: expected Apsi to raise {kind}, got {rest}"));
            }
            continue;
        }
        let mut want = Vec::new();
        let grads = c["grads"].as_object().expect("grads");
        for n in c["inputs"].as_object().expect("inputs").keys() {
            flat(&grads[n], &mut want);
        }
        // An error, or anything that is not a number, fails the case.
        let got: Vec<Option<f64>> = rest.split_whitespace().map(|s| s.parse().ok()).collect();
        let agrees = got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| g.is_some_and(|g| same(g, *w)));
        if !agrees {
            failures.push(format!(
                "{name} ({}):\n    PyTorch {want:?}\n    Apsi    {rest}",
                c["apsi"].as_str().unwrap_or("?")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from PyTorch {}:\n{}",
        failures.len(),
        cases.len(),
        doc["torch_version"],
        failures.join("\n")
    );
}
