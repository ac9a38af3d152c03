//! `apsi kernel` end to end with the real Jupyter stack (issue 21): `apsi
//! kernel install --prefix TMP`, then `tests/kernel/run_notebook.py` runs
//! `examples/notebooks/tour.ipynb` through nbclient and interrupts long
//! loops through jupyter_client (see that script for what it checks).
//!
//! Needs a Python with `jupyter_client`, `nbclient` and `nbformat`, named
//! by `APSI_JUPYTER_PYTHON` (`.ci/run` makes one in a cached venv);
//! without it the test says it was skipped.
#![cfg(feature = "kernel")]

use std::path::Path;
use std::process::Command;

#[test]
fn the_tour_notebook_runs_in_jupyter() {
    let Some(python) = std::env::var_os("APSI_JUPYTER_PYTHON").filter(|p| !p.is_empty()) else {
        eprintln!(
            "kernel_e2e SKIPPED: set APSI_JUPYTER_PYTHON to a python with jupyter_client, nbclient and nbformat \
             (python3 -m venv v && v/bin/pip install jupyter_client nbclient nbformat), as .ci/run does"
        );
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let prefix = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(["kernel", "install", "--prefix"])
        .arg(prefix.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "install failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let data = prefix.path().join("share").join("jupyter");
    let spec = data.join("kernels").join("apsi");
    for f in ["kernel.json", "logo-32x32.png", "logo-64x64.png"] {
        assert!(spec.join(f).is_file(), "{f} not installed in {}", spec.display());
    }
    let kernel_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(spec.join("kernel.json")).unwrap()).unwrap();
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_apsi")).unwrap();
    assert_eq!(kernel_json["argv"][0], exe.to_string_lossy().as_ref());

    // The kernel's own files (connection files, runtime dir) stay in the
    // temporary prefix too.
    let runtime_dir = prefix.path().join("runtime");
    let out = Command::new(&python)
        .arg(root.join("apsi-cli/tests/kernel/run_notebook.py"))
        .arg(root.join("examples/notebooks/tour.ipynb"))
        .env("JUPYTER_PATH", &data)
        .env("JUPYTER_RUNTIME_DIR", &runtime_dir)
        .env("JUPYTER_PLATFORM_DIRS", "1")
        .env("NO_COLOR", "1")
        .current_dir(prefix.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "run_notebook.py failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    assert!(stdout.contains("all kernel checks passed"), "{stdout}");
}
