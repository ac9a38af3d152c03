//! `apsi doctor` as a user and a program meet it: the JSON schema (pinned by
//! a snapshot), exit statuses, the NVIDIA fixtures under
//! `tests/fixtures/doctor/` (modelled on what the driver writes under
//! `/proc/driver/nvidia` and what the kernel shows under `/sys/bus/pci`), a
//! machine without a GPU, and the SIMD report against the real `/proc/cpuinfo`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/doctor")
        .join(name)
}

/// Runs `apsi doctor ARGS` with a fresh APSI_HOME and no colour.
fn doctor(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_apsi"))
        .arg("doctor")
        .args(args)
        .env("APSI_HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("APSI_DOCTOR_PROC")
        .env_remove("APSI_DOCTOR_SYS")
        .output()
        .expect("cannot run apsi")
}

/// `apsi doctor --json --offline` on a fixture machine.
fn doctor_json(home: &Path, machine: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let root = fixture(machine);
    let (p, s) = (root.join("proc"), root.join("sys"));
    let mut args = vec![
        "--json",
        "--offline",
        "--proc-root",
        p.to_str().unwrap(),
        "--sys-root",
        s.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = doctor(home, &args);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code(), v)
}

fn check<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check '{id}' in {doc}"))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The checks whose every value comes from the fixture files (or a fresh
/// home); the others (disk space, the plugin, BLAS, Python) describe the
/// machine the test runs on, so only their shape is pinned.
const FROM_FIXTURES: &[&str] = &[
    "os",
    "cpu",
    "simd",
    "memory",
    "gpu",
    "packages",
    "cache-key",
    "compile-cache",
    "registry",
];

#[test]
fn json_schema_is_pinned() {
    let home = tempfile::tempdir().unwrap();
    let (code, doc) = doctor_json(home.path(), "gpu-host", &[]);
    assert_eq!(code, Some(0), "{doc:#}");
    let mut out = String::new();
    let top: Vec<String> = doc
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k}: {}", type_name(v)))
        .collect();
    out.push_str(&format!("top: {}\n", top.join(", ")));
    out.push_str(&format!("schema_version: {}\n", doc["schema_version"]));
    assert_eq!(doc["apsi_version"], env!("CARGO_PKG_VERSION"));
    for c in doc["checks"].as_array().unwrap() {
        let id = c["id"].as_str().unwrap();
        assert!(
            matches!(c["status"].as_str(), Some("ok" | "warn" | "error" | "skip")),
            "{c}"
        );
        if FROM_FIXTURES.contains(&id) {
            let mut c = c.clone();
            // The home is a fresh temporary folder: name it the same each run.
            let text = serde_json::to_string_pretty(&c)
                .unwrap()
                .replace(home.path().to_str().unwrap(), "$APSI_HOME");
            c = serde_json::from_str(&text).unwrap();
            out.push_str(&format!("\n{id}:\n{}\n", serde_json::to_string_pretty(&c).unwrap()));
        } else {
            // Machine-dependent: only the field names and types are pinned
            // (`fix` is a string for a problem, else null).
            let fields: Vec<String> = c
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| {
                    if k == "fix" {
                        "fix: string|null".to_string()
                    } else {
                        format!("{k}: {}", type_name(v))
                    }
                })
                .collect();
            out.push_str(&format!("\n{id}: {{{}}}\n", fields.join(", ")));
        }
    }
    insta::assert_snapshot!("doctor_json_schema", out);
}

#[test]
fn nvidia_proc_and_sys_fixtures_are_parsed() {
    let home = tempfile::tempdir().unwrap();
    let (_, doc) = doctor_json(home.path(), "gpu-host", &[]);
    let gpu = check(&doc, "gpu");
    assert_eq!(gpu["status"], "ok");
    let d = &gpu["details"];
    assert_eq!(d["driver_version"], "550.54.15");
    assert_eq!(d["source"], "/proc/driver/nvidia");
    let gpus = d["gpus"].as_array().unwrap();
    // Two H100s; the NVSwitch (class 0x0680) and the Intel bridge are not GPUs.
    assert_eq!(gpus.len(), 2, "{gpus:?}");
    assert_eq!(gpus[0]["name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(gpus[0]["bus"], "0000:18:00.0");
    assert_eq!(gpus[0]["uuid"], "GPU-9d2a7c1e-5b3f-4e8a-a1c6-7f0e2d4b8c91");
    assert_eq!(gpus[0]["pci_device_id"], "0x2330");
    assert_eq!(gpus[1]["bus"], "0000:2a:00.0");
    assert_eq!(gpus[1]["uuid"], "GPU-0b7e4f2a-9c1d-4a63-8e5f-3d2c1b0a9f87");
    // The same fixture's CPU: cgroup v2 quota 2 of 4 allowed cores.
    let cpu = &check(&doc, "cpu")["details"];
    assert_eq!(cpu["model"], "Intel(R) Xeon(R) Platinum 8480+");
    assert_eq!(
        (cpu["logical_cores"].clone(), cpu["usable_cores"].clone()),
        (4.into(), 2.into())
    );
}

#[test]
fn a_gpu_without_its_driver_is_an_error_exit_1() {
    let home = tempfile::tempdir().unwrap();
    let (code, doc) = doctor_json(home.path(), "no-driver", &[]);
    let gpu = check(&doc, "gpu");
    assert_eq!(gpu["status"], "error", "{gpu}");
    assert!(gpu["summary"].as_str().unwrap().contains("0000:18:00.0"));
    assert!(gpu["fix"].as_str().unwrap().contains("driver"));
    assert_eq!(code, Some(1));
}

#[test]
fn no_gpu_is_a_warning_not_a_crash() {
    let home = tempfile::tempdir().unwrap();
    let (code, doc) = doctor_json(home.path(), "no-gpu", &[]);
    let gpu = check(&doc, "gpu");
    assert_eq!(gpu["status"], "warn", "{gpu}");
    assert_eq!(gpu["details"]["gpus"], serde_json::json!([]));
    assert!(gpu["fix"].is_string());
    // Warnings alone: success; with --strict: failure.
    assert_eq!(code, Some(0), "{doc:#}");
    let (strict, _) = doctor_json(home.path(), "no-gpu", &["--strict"]);
    assert_eq!(strict, Some(1));
    // The Arm fixture's vector extensions.
    let f = &check(&doc, "simd")["details"]["features"];
    assert_eq!(
        (f["neon"].clone(), f["sve2"].clone(), f["sme"].clone()),
        (true.into(), true.into(), false.into())
    );
}

#[test]
fn doctor_failures_exit_2() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["--bogus"][..],
        &["--proc-root"],
        &["--proc-root", "/nonexistent-apsi-fixture"],
    ] {
        let o = doctor(home.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&o.stderr).starts_with("error: "));
    }
}

#[test]
fn an_open_cache_key_is_an_error_with_its_fix() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let key = home.path().join("cache.key");
    std::fs::write(&key, [1u8; 32]).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, doc) = doctor_json(home.path(), "gpu-host", &[]);
    let c = check(&doc, "cache-key");
    assert_eq!(c["status"], "error");
    assert!(c["fix"].as_str().unwrap().contains("chmod 600"), "{c}");
    assert_eq!(code, Some(1));
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (code, doc) = doctor_json(home.path(), "gpu-host", &[]);
    assert_eq!(check(&doc, "cache-key")["status"], "ok");
    assert_eq!(code, Some(0));
}

#[test]
fn text_output_is_plain_when_not_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let root = fixture("no-gpu");
    let o = doctor(
        home.path(),
        &[
            "--offline",
            "--proc-root",
            root.join("proc").to_str().unwrap(),
            "--sys-root",
            root.join("sys").to_str().unwrap(),
        ],
    );
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(!s.contains('\x1b'), "{s}");
    assert!(s.contains("[✓] cpu"), "{s}");
    assert!(s.contains("[!] gpu"), "{s}");
    assert!(s.contains("fix: "), "{s}");
    assert!(s.contains("[-] registry"), "{s}");
    assert!(s.contains("[✓] build") && s.contains("apsi 2."), "{s}");
}

/// On the live machine doctor's AVX-512 and AMX answers (CPUID) agree with
/// the kernel's flags in `/proc/cpuinfo`, whether this processor has them or not.
#[test]
fn simd_report_matches_proc_cpuinfo() {
    let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let o = doctor(home.path(), &["--json", "--offline"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{o:?}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let simd = check(&doc, "simd");
    let features = &simd["details"]["features"];
    let line = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags") || l.starts_with("Features"))
        .unwrap_or_default();
    let flags: Vec<&str> = line.split(':').nth(1).unwrap_or_default().split_whitespace().collect();
    let pairs: &[(&str, &str)] = if cfg!(target_arch = "x86_64") {
        &[
            ("avx512f", "avx512f"),
            ("avx512_bf16", "avx512_bf16"),
            ("avx512_fp16", "avx512_fp16"),
            ("amx_tile", "amx_tile"),
            ("amx_bf16", "amx_bf16"),
            ("amx_int8", "amx_int8"),
            ("avx2", "avx2"),
            ("fma", "fma"),
            ("sse4_2", "sse4_2"),
        ]
    } else {
        &[("neon", "asimd"), ("sve", "sve"), ("sme", "sme")]
    };
    for (key, flag) in pairs {
        assert_eq!(
            features[*key],
            flags.contains(flag),
            "{key}: doctor says {}, /proc/cpuinfo says {}",
            features[*key],
            flags.contains(flag)
        );
    }
    // The summary names what is there and what is not.
    let summary = simd["summary"].as_str().unwrap();
    if flags.contains(&"avx512f") {
        assert!(
            summary.starts_with("SSE4.2") || summary.contains("AVX-512 F"),
            "{summary}"
        );
    }
}

#[test]
fn version_and_doctor_list_the_build() {
    let o = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .arg("--version")
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("apsi-doctor 1."), "{s}");
    assert!(s.contains("\nfeatures: "), "{s}");
    let home = tempfile::tempdir().unwrap();
    let (_, doc) = doctor_json(home.path(), "no-gpu", &[]);
    let b = check(&doc, "build");
    let feats = b["details"]["features"].as_object().unwrap();
    for f in ["parallel", "precision", "native", "pkg", "blas"] {
        assert!(feats.contains_key(f), "{b}");
    }
}

#[test]
fn fixture_roots_can_come_from_the_environment() {
    let home = tempfile::tempdir().unwrap();
    let root = fixture("no-driver");
    let o = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(["doctor", "--json", "--offline"])
        .env("APSI_HOME", home.path())
        .env("APSI_DOCTOR_PROC", root.join("proc"))
        .env("APSI_DOCTOR_SYS", root.join("sys"))
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(check(&doc, "gpu")["status"], "error");
    assert_eq!(
        check(&doc, "cpu")["details"]["model"],
        "Intel(R) Xeon(R) Platinum 8480+"
    );
    assert_eq!(o.status.code(), Some(1));
}
