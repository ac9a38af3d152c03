//! A backend package end to end: the real LLVM back end of `@native`
//! (`libapsi_native_llvm.so`, built by `cargo build -p apsi-native-llvm`)
//! packed with `apsi-registry build` from `apsi-native-llvm/apsi-package.toml`,
//! signed into a loopback registry, installed with `apsi pkg install
//! native-llvm` into an `apsi` that has no plugin beside it, and used by a
//! program. Then the refusals: an edited library (and `apsi pkg verify`
//! reporting it), a wrong ABI version, a `requires` this core does not
//! satisfy, and a build for another target.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PROGRAM: &str = "@native\ndef add3(a: int, b: int, c: int) -> int:\n    return a + b * c\nprint(add3(1, 2, 3))\n";

mod common;
use common::{new_registry, reg_tool, serve, sign};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The plugin the README's test command built beside the test binaries.
fn plugin() -> PathBuf {
    let p = Path::new(env!("CARGO_BIN_EXE_apsi")).with_file_name("libapsi_native_llvm.so");
    assert!(
        p.is_file(),
        "{} is missing: run `cargo build -p apsi-native-llvm` first (the README's test command does)",
        p.display()
    );
    p
}

struct World {
    tmp: tempfile::TempDir,
    url: String,
    bin: PathBuf,
}

impl World {
    fn path(&self, p: &str) -> PathBuf {
        self.tmp.path().join(p)
    }

    fn apsi(&self, args: &[&str]) -> Output {
        Command::new(&self.bin)
            .args(args)
            .current_dir(self.path("work"))
            .env("APSI_HOME", self.path("home"))
            .env("APSI_REGISTRY", &self.url)
            .env("APSI_REGISTRY_ROOT", self.path("reg").join("1.root.json"))
            .env("NO_COLOR", "1")
            .env_remove("APSI_NATIVE_PLUGIN")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .output()
            .expect("cannot run apsi")
    }

    fn run_program(&self) -> Output {
        self.apsi(&["run", "prog.apsi"])
    }

    /// Packs the real library under `manifest` (the repository's, edited by
    /// `edit`) and publishes it.
    fn publish(&self, edit: &dyn Fn(String) -> String, target: &str) {
        let text = std::fs::read_to_string(repo().join("apsi-native-llvm").join("apsi-package.toml")).unwrap();
        let m = self.path("manifest.toml");
        std::fs::write(&m, edit(text)).unwrap();
        let built = self.path("built");
        reg_tool(&[
            "build",
            "--manifest",
            m.to_str().unwrap(),
            "--target",
            target,
            "--out",
            built.to_str().unwrap(),
            plugin().to_str().unwrap(),
        ]);
        let archive = std::fs::read_dir(&built)
            .unwrap()
            .map(|e| e.unwrap().path())
            .max_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap())
            .unwrap();
        let reg = self.path("reg");
        reg_tool(&["index", reg.to_str().unwrap(), archive.to_str().unwrap()]);
        sign(&self.path("keys"), &reg);
        std::fs::remove_file(archive).unwrap();
    }
}

fn world() -> World {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = tmp.path();
    for d in ["work", "bin", "home"] {
        std::fs::create_dir_all(t.join(d)).unwrap();
    }
    std::fs::write(t.join("work").join("prog.apsi"), PROGRAM).unwrap();
    // An apsi with nothing beside it (a hard link: the same binary, in a
    // folder without the plugin; current_exe() names the link's folder).
    let bin = t.join("bin").join("apsi");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_apsi"), &bin).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_apsi"), &bin).unwrap();
    }
    let keys = t.join("keys");
    let reg = t.join("reg");
    new_registry(&keys, &reg);
    World {
        tmp,
        url: serve(&reg),
        bin,
    }
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn ok(o: &Output) -> String {
    let (out, err) = text(o);
    assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    out
}

fn refused(o: &Output, needles: &[&str]) {
    let (out, err) = text(o);
    assert_ne!(
        o.status.code(),
        Some(0),
        "expected a refusal\nstdout: {out}\nstderr: {err}"
    );
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}:\n{err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

fn installed_library(w: &World, name: &str) -> PathBuf {
    w.path("home")
        .join("packages")
        .join(name)
        .join("libapsi_native_llvm.so")
}

/// The version of the package (kept equal to the crate's; a test below checks).
fn package_version() -> String {
    let m = std::fs::read_to_string(repo().join("apsi-native-llvm").join("apsi-package.toml")).unwrap();
    m.lines()
        .find_map(|l| {
            l.strip_prefix("version = ")
                .map(|v| v.trim().trim_matches('"').to_string())
        })
        .unwrap()
}

/// `name version` for messages, leaked for the needle lists.
fn label(name: &str) -> &'static str {
    Box::leak(format!("{name} {}", package_version()).into_boxed_str())
}

#[test]
fn native_llvm_installs_as_a_signed_backend_and_tampering_is_refused() {
    let w = world();
    w.publish(&|t| t, "host");

    // Without the plugin beside it, @native says how to get it.
    refused(&w.run_program(), &["not installed", "apsi pkg install native-llvm"]);

    let out = ok(&w.apsi(&["pkg", "install", "native-llvm"]));
    assert!(out.contains("native-llvm"), "{out}");
    assert_eq!(ok(&w.run_program()), "7\n");
    let out = ok(&w.apsi(&["doctor", "--offline", "--json"]));
    assert!(out.contains(&format!("package {}", label("native-llvm"))), "{out}");
    assert!(ok(&w.apsi(&["pkg", "verify"])).contains("native-llvm"));

    // One byte more in the installed library: verify reports it, and the
    // program is refused with the verify hint instead of loading it.
    let lib = installed_library(&w, "native-llvm");
    let mut bytes = std::fs::read(&lib).unwrap();
    bytes.push(0);
    std::fs::write(&lib, &bytes).unwrap();
    let v = w.apsi(&["pkg", "verify"]);
    refused(&v, &[]);
    let (vout, verr) = text(&v);
    assert!(
        (vout.clone() + &verr).contains("libapsi_native_llvm.so: modified"),
        "{vout}{verr}"
    );
    refused(
        &w.run_program(),
        &[
            label("native-llvm"),
            "libapsi_native_llvm.so: modified",
            "apsi pkg verify native-llvm",
        ],
    );
    // Installing again restores the published files.
    ok(&w.apsi(&["pkg", "install", "native-llvm"]));
    assert_eq!(ok(&w.run_program()), "7\n");
    ok(&w.apsi(&["pkg", "verify"]));
}

#[test]
fn backends_that_do_not_fit_this_apsi_are_refused_by_name() {
    let w = world();
    let rename =
        |name: &'static str| move |t: String| t.replace("name = \"native-llvm\"", &format!("name = \"{name}\""));
    w.publish(&|t| rename("llvm-abi2")(t).replace("abi = 1", "abi = 2"), "host");
    w.publish(
        &|t| rename("llvm-core9")(t).replace("requires = \"^2.0\"", "requires = \"^9.0\""),
        "host",
    );
    w.publish(&rename("llvm-arm"), "aarch64-linux-gnu");

    let cases: [(&str, &[&str], &[&str]); 3] = [
        (
            "llvm-abi2",
            &["install", "llvm-abi2"],
            &[label("llvm-abi2"), "ABI v2", "needs v1", "apsi pkg info llvm-abi2"],
        ),
        (
            "llvm-core9",
            &["install", "llvm-core9"],
            &[
                label("llvm-core9"),
                Box::leak(
                    format!("requires the Apsi core ^9.0, and this is core {}", apsi_core::VERSION).into_boxed_str(),
                ),
            ],
        ),
        (
            "llvm-arm",
            &["install", "llvm-arm", "--target", "aarch64-linux-gnu"],
            &[label("llvm-arm"), "built for aarch64-linux-gnu, and this machine is"],
        ),
    ];
    for (name, install, needles) in cases {
        let mut args = vec!["pkg"];
        args.extend_from_slice(install);
        ok(&w.apsi(&args));
        refused(&w.run_program(), needles);
        ok(&w.apsi(&["pkg", "remove", name]));
    }
}

#[test]
fn the_package_manifest_keeps_the_crate_version() {
    let m = std::fs::read_to_string(repo().join("apsi-native-llvm").join("apsi-package.toml")).unwrap();
    let c = std::fs::read_to_string(repo().join("apsi-native-llvm").join("Cargo.toml")).unwrap();
    let version = |t: &str| {
        t.lines()
            .find_map(|l| l.strip_prefix("version = ").map(|v| v.trim().to_string()))
            .unwrap()
    };
    assert_eq!(version(&m), version(&c));
    let parsed = apsi_pkg::manifest::PackageManifest::parse(&m).unwrap();
    let decl = parsed.backend.unwrap();
    assert_eq!(decl.symbol, "apsi_native_compile_v1");
    assert_eq!(decl.provides, "native");
    assert_eq!(decl.abi, 1);
}
