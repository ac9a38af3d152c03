//! `apsi doctor`: what this machine can do for Apsi. The probes live in
//! `apsi-doctor`; this file parses the options, adds the checks only the CLI
//! can make (what is in this build, the `@native` plugin, BLAS, and with the
//! `pkg` feature the installed packages and the registry), runs them all in
//! parallel and prints `[✓]/[!]/[✗]` lines or `--json`.
//!
//! Exit status: 0 no errors (with `--strict`: no warnings either), 1 any
//! error, 2 doctor itself failed (bad options, a probe thread that cannot start).

use apsi_doctor::{probes, render, Check, Env, Probe};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

pub const HELP: &str = "\
apsi doctor [OPTIONS]

Checks what this machine can do for Apsi, reading only: OS, CPU and cores
(cgroup quota, affinity), SIMD (AVX2, AVX-512, AMX; NEON, SVE, SME), memory,
disk under $APSI_HOME (~/.apsi), what is in this build, the @native LLVM back
end, BLAS threads, NVIDIA GPUs and driver, installed packages and whether
they still verify, Python and PyTorch, the cache key's permissions, the
compile cache, and whether the registry answers. Each problem comes with its fix.

Options:
  --json              machine-readable: {schema_version, apsi_version, checks}
  --strict            exit 1 on warnings too
  --offline           do not contact the registry
  --verbose, -v       print every detail under each line
  --proc-root DIR     read DIR instead of /proc (also APSI_DOCTOR_PROC)
  --sys-root DIR      read DIR instead of /sys (also APSI_DOCTOR_SYS)

Exit status: 0 no errors, 1 errors (or warnings with --strict), 2 doctor failed.
";

/// The order checks are reported in.
const ORDER: &[&str] = &[
    "os",
    "cpu",
    "simd",
    "memory",
    "disk",
    "build",
    "native",
    "gemm",
    "gpu",
    "packages",
    "python",
    "cache-key",
    "compile-cache",
    "registry",
];

#[derive(Debug, Default, PartialEq)]
struct Opts {
    json: bool,
    strict: bool,
    offline: bool,
    verbose: bool,
    proc_root: Option<PathBuf>,
    sys_root: Option<PathBuf>,
}

fn parse(argv: &[String]) -> Result<Option<Opts>, String> {
    let mut o = Opts {
        proc_root: std::env::var_os("APSI_DOCTOR_PROC")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from),
        sys_root: std::env::var_os("APSI_DOCTOR_SYS")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from),
        ..Opts::default()
    };
    let mut i = 0;
    while i < argv.len() {
        let a = argv[i].as_str();
        let mut value = |flag: &str| -> Result<PathBuf, String> {
            i += 1;
            argv.get(i)
                .map(PathBuf::from)
                .ok_or_else(|| format!("'{flag}' needs a folder"))
        };
        match a {
            "--json" => o.json = true,
            "--strict" => o.strict = true,
            "--offline" => o.offline = true,
            "--verbose" | "-v" => o.verbose = true,
            "--proc-root" => o.proc_root = Some(value(a)?),
            "--sys-root" => o.sys_root = Some(value(a)?),
            "--help" | "-h" => return Ok(None),
            _ => return Err(format!("unknown option '{a}' for 'apsi doctor'")),
        }
        i += 1;
    }
    for (flag, root) in [("--proc-root", &o.proc_root), ("--sys-root", &o.sys_root)] {
        if let Some(r) = root {
            if !r.is_dir() {
                return Err(format!("{flag}: '{}' is not a folder", r.display()));
            }
        }
    }
    Ok(Some(o))
}

pub fn main(argv: &[String]) -> u8 {
    let opts = match parse(argv) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{HELP}");
            return 0;
        }
        Err(e) => {
            eprintln!("error: {e}\n  = hint: see 'apsi doctor --help'");
            return 2;
        }
    };
    let env = Arc::new(Env::system(opts.offline).with_roots(opts.proc_root.clone(), opts.sys_root.clone()));
    let mut all = apsi_doctor::system_probes(&env);
    all.extend(cli_probes(&env));
    all.sort_by_key(|p| ORDER.iter().position(|id| *id == p.id).unwrap_or(ORDER.len()));
    let checks = match apsi_doctor::run_all(all) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: apsi doctor failed: {e}");
            return 2;
        }
    };
    let version = crate::APSI_VERSION;
    let text = if opts.json {
        format!("{}\n", render::json_text(version, &checks))
    } else {
        let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal();
        render::text(&checks, color, opts.verbose)
    };
    // A closed pipe (`apsi doctor | head -1`) is not a failure of doctor's.
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: apsi doctor cannot write its report: {e}");
            return 2;
        }
    }
    render::exit_code(&checks, opts.strict)
}

/// The core's rule for OpenBLAS's AVX-512 small-matrix kernels, for the gemm probe.
fn small_kernels(config: &str, core: &str) -> bool {
    #[cfg(feature = "blas")]
    {
        apsi_core::tensor::cblas::runs_small_kernels(config, core)
    }
    #[cfg(not(feature = "blas"))]
    {
        let _ = (config, core);
        false
    }
}

/// The checks only the CLI can make.
fn cli_probes(env: &Arc<Env>) -> Vec<Probe> {
    let quick = apsi_doctor::FILE_LIMIT;
    let slow = apsi_doctor::PROGRAM_LIMIT;
    #[allow(unused_mut)]
    let mut out = vec![
        Probe::new("build", quick, build_check),
        Probe::new("native", slow, native_check),
        Probe::new("gemm", slow, || {
            probes::blas::probe(
                cfg!(feature = "blas"),
                apsi_core::builtins::cpu_count_value(),
                small_kernels,
            )
        }),
    ];
    #[cfg(feature = "pkg")]
    {
        let (e1, e2) = (Arc::clone(env), Arc::clone(env));
        out.push(Probe::new("packages", slow, move || pkg_checks::packages(&e1)));
        out.push(Probe::new("registry", pkg_checks::REGISTRY_LIMIT, move || {
            pkg_checks::registry(&e2)
        }));
    }
    #[cfg(not(feature = "pkg"))]
    {
        let _ = env;
        out.push(Probe::new("packages", quick, || {
            Check::skip(
                "packages",
                "this apsi was built without package support (the `pkg` feature)",
            )
        }));
        out.push(Probe::new("registry", quick, || {
            Check::skip(
                "registry",
                "this apsi was built without package support (the `pkg` feature)",
            )
        }));
    }
    out
}

fn build_check() -> Check {
    let modules: Vec<(String, String)> = crate::modules::compiled_in()
        .into_iter()
        .map(|m| (m.name.to_string(), m.version.to_string()))
        .collect();
    probes::build::probe(crate::APSI_VERSION, crate::modules::FEATURES, &modules)
}

#[cfg(feature = "native")]
fn native_check() -> Check {
    use apsi_native::plugin;
    match plugin::locate() {
        Err(e) => Check::error("native", e.message).detail("found", true).fix(e.hint),
        Ok(found) => {
            let (paths, source) = match found {
                Some(l) => (vec![l.path], Some(l.source)),
                None => (plugin::candidates(), None),
            };
            probes::native::probe(&paths, plugin::COMPILE_SYMBOL_NAME, &plugin::how_to_get())
                .detail_opt("source", source)
        }
    }
}

#[cfg(not(feature = "native"))]
fn native_check() -> Check {
    Check::skip(
        "native",
        "this apsi was built without @native (the `native` feature): decorated functions run in the interpreter",
    )
}

#[cfg(feature = "pkg")]
mod pkg_checks {
    use super::*;
    use apsi_pkg::archive::MARKER;
    use apsi_pkg::config::RegistryConfig;
    use apsi_pkg::digest::sha256_file;
    use apsi_pkg::home::Home;
    use apsi_pkg::ops;
    use apsi_pkg::session::Session;
    use apsi_pkg::store::Store;
    use apsi_pkg::transport::Transport;
    use std::time::Duration;

    /// How long the registry may take to answer (the probe's limit is a little longer).
    const NET_WAIT: Duration = Duration::from_secs(3);
    pub const REGISTRY_LIMIT: Duration = Duration::from_secs(4);

    /// Installed packages, and whether each still verifies against the signed
    /// index cached by the last online `apsi pkg` (no network is used, and
    /// unlike `apsi pkg verify` nothing is removed: a corrupt archive stays
    /// for `apsi pkg install` to replace).
    pub fn packages(env: &Env) -> Check {
        let Some(root) = env.home.clone() else {
            return Check::skip("packages", "no Apsi home (APSI_HOME and HOME unset)");
        };
        let home = Home::at(&root);
        let installed = match ops::list(&home) {
            Ok(l) => l,
            Err(e) => {
                return Check::error("packages", format!("cannot read what is installed: {}", e.message)).fix(format!(
                    "check {}; `apsi pkg list` shows the same problem",
                    home.installed().display()
                ))
            }
        };
        if installed.is_empty() {
            return Check::ok("packages", "no packages installed").detail("installed", Vec::<String>::new());
        }
        let backends: Vec<String> = installed
            .iter()
            .filter(|p| p.kind == "backend")
            .map(|p| format!("{} {}", p.name, p.version))
            .collect();
        let listed: Vec<serde_json::Value> = installed
            .iter()
            .map(|p| serde_json::json!({"name": p.name, "version": p.version, "kind": p.kind, "target": p.target}))
            .collect();
        let what = format!(
            "{} installed ({} backend{}{})",
            installed.len(),
            backends.len(),
            if backends.len() == 1 { "" } else { "s" },
            if backends.is_empty() {
                String::new()
            } else {
                format!(": {}", backends.join(", "))
            }
        );
        let session = RegistryConfig::from_env(&home)
            .and_then(|cfg| Session::open(&home, &cfg, true, Duration::from_secs(3), apsi_pkg::trust::now_secs()));
        let session = match session {
            Ok(s) => s,
            Err(e) => {
                return Check::warn(
                    "packages",
                    format!("{what}; their signatures could not be checked: {}", e.message),
                )
                .detail("installed", listed)
                .fix("run `apsi pkg verify` (online) to refresh the signed index, and check the registry settings")
            }
        };
        let store = Store::new(home.store());
        let mut bad: Vec<(String, String)> = Vec::new();
        for rec in &installed {
            let mut problems: Vec<String> = Vec::new();
            match session.lines(&rec.name) {
                Ok(lines) => match lines.iter().find(|l| l.vers == rec.version && l.target == rec.target) {
                    Some(l) if l.cksum == rec.cksum => match sha256_file(&store.archive_path(&l.cksum)) {
                        Ok((h, n)) if h == l.cksum && n == l.size => {}
                        Ok(_) => {
                            problems.push("its archive in the store does not match the signed sha256 (corrupt)".into())
                        }
                        Err(_) => problems.push("its archive is missing from the store".into()),
                    },
                    Some(l) => problems.push(format!(
                        "the signed index now gives sha256 {}, the installed one is {}",
                        l.cksum, rec.cksum
                    )),
                    None => problems.push("the signed index no longer lists this version".into()),
                },
                Err(e) => problems.push(e.message),
            }
            let tree = store.tree_path(&rec.cksum);
            if !tree.join(MARKER).is_file() {
                problems.push("its extracted files are incomplete".into());
            } else {
                let changed = apsi_pkg::backend::files::check(&tree);
                if !changed.is_empty() {
                    problems.push(format!("its files changed since extraction: {}", changed.join(", ")));
                }
            }
            if !problems.is_empty() {
                bad.push((
                    rec.name.clone(),
                    format!("{} {}: {}", rec.name, rec.version, problems.join("; ")),
                ));
            }
        }
        let c = Check::ok("packages", format!("{what}, all verify against the signed index"))
            .detail("installed", listed)
            .detail("failed", bad.iter().map(|b| b.1.clone()).collect::<Vec<_>>())
            .detail("index_warnings", session.warnings.clone());
        if bad.is_empty() {
            return c;
        }
        let names: Vec<&str> = bad.iter().map(|b| b.0.as_str()).collect();
        Check {
            status: apsi_doctor::Status::Error,
            summary: format!(
                "{what}; {} do{} not verify: {}",
                bad.len(),
                if bad.len() == 1 { "es" } else { "" },
                bad.iter().map(|b| b.1.as_str()).collect::<Vec<_>>().join(" | ")
            ),
            ..c
        }
        .fix(format!(
            "do not use them until reinstalled: `apsi pkg install {}`",
            names.join(" ")
        ))
    }

    /// Whether the registry answers with its `config.json` (skipped offline).
    pub fn registry(env: &Env) -> Check {
        if env.offline {
            return Check::skip("registry", "not contacted (--offline)");
        }
        let home = match &env.home {
            Some(h) => Home::at(h),
            None => return Check::skip("registry", "no Apsi home (APSI_HOME and HOME unset)"),
        };
        let cfg = match RegistryConfig::from_env(&home) {
            Ok(c) => c,
            Err(e) => {
                return Check::error("registry", format!("the registry settings are wrong: {}", e.message))
                    .fix(e.hint.unwrap_or_else(|| {
                        "check APSI_REGISTRY, APSI_REGISTRY_ROOT and $APSI_HOME/config.toml".into()
                    }))
            }
        };
        if cfg.url == apsi_pkg::config::DEFAULT_REGISTRY {
            let e = apsi_pkg::session::no_registry();
            return Check::warn("registry", e.message)
                .detail("url", cfg.url.clone())
                .fix(e.hint.unwrap_or_default());
        }
        let t0 = std::time::Instant::now();
        let got = Transport::new(&cfg.url, NET_WAIT).and_then(|t| t.get_optional("config.json", 1 << 20));
        let ms = t0.elapsed().as_millis() as u64;
        let c = |s: apsi_doctor::Status, summary: String| {
            Check::new("registry", s, summary)
                .detail("url", cfg.url.clone())
                .detail("elapsed_ms", ms)
        };
        match got {
            Ok(Some(_)) => c(apsi_doctor::Status::Ok, format!("{} answers ({ms} ms)", cfg.url)),
            Ok(None) => c(apsi_doctor::Status::Warn, format!("{} answers but has no config.json", cfg.url))
                .fix("check the registry URL (APSI_REGISTRY): it must point at the folder holding config.json"),
            Err(e) => c(
                apsi_doctor::Status::Warn,
                format!("{} cannot be reached: {}", cfg.url, e.message.trim_end_matches(" (transient)")),
            )
            .fix(
                "check the network; behind a proxy set HTTPS_PROXY (and NO_PROXY), for a TLS-inspecting proxy SSL_CERT_FILE; \
                 `apsi pkg install --offline` works from what is cached",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn options() {
        let o = parse(&s(&[
            "--json",
            "--strict",
            "--offline",
            "-v",
            "--proc-root",
            "/",
            "--sys-root",
            "/",
        ]))
        .unwrap()
        .unwrap();
        assert!(o.json && o.strict && o.offline && o.verbose);
        assert_eq!(o.proc_root, Some(PathBuf::from("/")));
        assert!(parse(&s(&["--help"])).unwrap().is_none());
        assert!(parse(&s(&["--bogus"])).unwrap_err().contains("--bogus"));
        assert!(parse(&s(&["--proc-root"])).unwrap_err().contains("needs a folder"));
        assert!(parse(&s(&["--sys-root", "/nonexistent-apsi-root"]))
            .unwrap_err()
            .contains("not a folder"));
    }

    #[test]
    fn every_check_has_a_place_in_the_order() {
        let env = Arc::new(Env::system(true));
        let mut ids: Vec<&str> = apsi_doctor::system_probes(&env).iter().map(|p| p.id).collect();
        ids.extend(cli_probes(&env).iter().map(|p| p.id));
        ids.sort();
        let mut order = ORDER.to_vec();
        order.sort();
        assert_eq!(ids, order);
    }
}
