//! Python and PyTorch, asked in a subprocess with a time limit. PyTorch is
//! found through its installed metadata rather than imported: `import torch`
//! takes seconds, and doctor must answer in well under one.

use crate::check::Check;
use crate::subprocess::{self, Outcome};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

const SCRIPT: &str = r#"
import json, sys, importlib.util
r = {"version": sys.version.split()[0], "executable": sys.executable, "torch": None, "numpy": None}
try:
    import importlib.metadata as md
except Exception:
    md = None
for mod, dist in (("torch", "torch"), ("numpy", "numpy")):
    try:
        if importlib.util.find_spec(mod) is not None:
            r[mod] = md.version(dist) if md else "unknown version"
    except Exception:
        r[mod] = "unknown version"
print(json.dumps(r))
"#;

/// Which PyTorch `backend="torch"` would use (LAYERS.md §7), found
/// without starting it: `APSI_TORCH_PYTHON`, else the environment the
/// `torch` package's installation made (`$APSI_HOME/venvs/torch`).
fn torch_backend(home: Option<&Path>) -> Option<String> {
    if let Some(p) = std::env::var_os("APSI_TORCH_PYTHON").filter(|p| !p.is_empty()) {
        return Some(format!("APSI_TORCH_PYTHON={}", Path::new(&p).display()));
    }
    let python = home?.join("venvs").join("torch").join("bin").join("python");
    python
        .exists()
        .then(|| format!("the torch package ({})", python.display()))
}

/// `python`: the interpreter to ask (`python3` on PATH unless told).
pub fn probe(python: &str, limit: Duration, home: Option<&Path>) -> Check {
    match subprocess::run(python, &["-c", SCRIPT], limit) {
        Outcome::NotStarted(e) => Check::warn("python", format!("{python} not found ({e})"))
            .detail("python", python)
            .fix("only `use python` and backend=\"torch\" need Python: install Python 3 (Debian/Ubuntu: `apt install python3`)"),
        Outcome::TimedOut => Check::warn("python", format!("{python} did not answer within {:.0} s", limit.as_secs_f64()))
            .detail("python", python)
            .fix("check that `python3 -c pass` runs quickly (a slow site-packages or a stuck network file system?)"),
        Outcome::Done { code, stdout, stderr } => {
            let parsed: Option<Value> = (code == Some(0)).then(|| serde_json::from_str(stdout.trim()).ok()).flatten();
            let Some(v) = parsed else {
                return Check::warn("python", format!("{python} failed: {}", stderr.lines().last().unwrap_or("no output").trim()))
                    .detail("python", python)
                    .fix("check your Python installation: `python3 -c 'import json'` must work");
            };
            let version = v["version"].as_str().unwrap_or("?").to_string();
            let torch = v["torch"].as_str().map(str::to_string);
            let mut summary = format!("Python {version}");
            match &torch {
                Some(t) => summary.push_str(&format!(", PyTorch {t}")),
                None => summary.push_str(" (no PyTorch)"),
            }
            let backend = torch_backend(home);
            match &backend {
                Some(src) => summary.push_str(&format!("; backend=\"torch\" uses {src}")),
                None => summary.push_str("; backend=\"torch\" needs the backend package: apsi pkg install torch"),
            }
            Check::ok("python", summary)
                .detail("torch_backend", backend)
                .detail("python", python)
                .detail("executable", v["executable"].clone())
                .detail("version", version)
                .detail("torch", torch)
                .detail("numpy", v["numpy"].clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_python_is_a_warning_with_a_fix() {
        let c = probe("apsi-no-such-python", Duration::from_secs(5), None);
        assert_eq!(c.status, crate::Status::Warn);
        assert!(c.fix.unwrap().contains("install Python"));
    }

    #[test]
    fn a_python_that_hangs_is_cut() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let fake = t.path().join("python3");
        std::fs::write(&fake, "#!/bin/sh\nsleep 600\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Another test thread forking while the script was being written
        // makes its exec fail with "Text file busy" (ETXTBSY) for a moment:
        // that is the test's race, not the probe's, so try again.
        let mut c = probe(fake.to_str().unwrap(), Duration::from_millis(200), None);
        for _ in 0..20 {
            if !c.summary.contains("not found") {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
            c = probe(fake.to_str().unwrap(), Duration::from_millis(200), None);
        }
        assert_eq!(c.status, crate::Status::Warn);
        assert!(c.summary.contains("did not answer"), "{}", c.summary);
    }

    #[test]
    fn the_real_python_answers_if_present() {
        if !subprocess::on_path("python3") {
            return;
        }
        let c = probe("python3", Duration::from_secs(30), None);
        assert_eq!(c.status, crate::Status::Ok, "{c:?}");
        assert!(c.summary.starts_with("Python 3."), "{}", c.summary);
    }
}
