//! `apsi build`: the executable runs its built-in program with the program's
//! arguments and the build's permissions, without the source, and refuses to
//! run when its payload was changed.

use std::path::Path;
use std::process::{Command, Output};

fn apsi(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(args)
        .current_dir(dir)
        .env("APSI_HOME", dir.join("home"))
        .env("NO_COLOR", "1")
        .output()
        .expect("cannot run apsi")
}

/// Runs a built program. The tests write executables themselves while other
/// test threads fork: a child forked while a file was open for writing holds
/// it until it execs, and meanwhile running the file fails with "Text file
/// busy" (ETXTBSY). That is the test harness's race, not the build's, so it
/// is retried for a while.
fn run(exe: &Path, args: &[&str]) -> Output {
    let mut tries = 0;
    loop {
        match Command::new(exe).args(args).env("NO_COLOR", "1").output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => return r.expect("cannot run the built program"),
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_built_program_runs_without_its_source() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("helper.apsi"), "def shout(s):\n    return s.upper() + \"!\"\n").unwrap();
    std::fs::write(
        d.join("app.apsi"),
        "use helper\nprint(shout(\"hi\"), argv)\nif len(argv) > 0 and argv[0] == \"fail\":\n    print(1 // 0)\n",
    )
    .unwrap();
    let o = apsi(d, &["build", "app.apsi", "-o", "app"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).starts_with("built app ("), "{}", text(&o.stdout));
    // Elsewhere, without the sources.
    let elsewhere = tempfile::tempdir().unwrap();
    let exe = elsewhere.path().join("app");
    std::fs::rename(d.join("app"), &exe).unwrap();
    std::fs::remove_file(d.join("app.apsi")).unwrap();
    std::fs::remove_file(d.join("helper.apsi")).unwrap();
    let o = run(&exe, &["x", "--time"]);
    assert_eq!(text(&o.stdout), "HI! ['x', '--time']\n", "{}", text(&o.stderr));
    assert_eq!(text(&o.stderr), "");
    let o = run(&exe, &["--", "--help"]);
    assert_eq!(text(&o.stdout), "HI! ['--help']\n");
    // Errors show the built-in source.
    let o = run(&exe, &["fail"]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("ZeroDivisionError") && err.contains("app.apsi:4") && err.contains("print(1 // 0)"),
        "{err}"
    );
    let o = run(&exe, &["--help"]);
    let help = text(&o.stdout);
    assert!(
        help.contains("app.apsi built with apsi") && help.contains("Permissions granted at build time: none"),
        "{help}"
    );
}

#[test]
fn permissions_are_recorded_at_build_time() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(
        d.join("net.apsi"),
        "if len(argv) > 3:\n    print(read_text(\"http://127.0.0.1:9/x\"))\nprint(\"ok\")\n",
    )
    .unwrap();
    // Without the permission the build fails as `apsi run` would.
    let o = apsi(d, &["build", "net.apsi", "-o", "net"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("--allow-net"), "{}", text(&o.stderr));
    assert!(!d.join("net").exists());
    let o = apsi(d, &["build", "--allow-net", "net.apsi", "-o", "net"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("--allow-net"));
    let o = run(&d.join("net"), &[]);
    assert_eq!(text(&o.stdout), "ok\n");
    let o = run(&d.join("net"), &["--help"]);
    assert!(text(&o.stdout).contains("Permissions granted at build time: --allow-net"));
}

#[test]
fn a_modified_payload_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("h.apsi"), "print(\"hello\")\n").unwrap();
    let o = apsi(d, &["build", "h.apsi", "-o", "h"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let exe = d.join("h");
    let good = std::fs::read(&exe).unwrap();
    assert_eq!(text(&run(&exe, &[]).stdout), "hello\n");
    // Bytes of the payload (its text, its compiled code) and of the trailer's digest.
    let at = good.windows(14).rposition(|w| w == b"print(\"hello\")").unwrap();
    for i in [at + 7, good.len() - 100, good.len() - 30] {
        let mut bad = good.clone();
        bad[i] ^= 0x01;
        std::fs::write(&exe, &bad).unwrap();
        let o = run(&exe, &[]);
        assert_eq!(o.status.code(), Some(1), "flip at {i}");
        assert!(text(&o.stdout).is_empty());
        assert!(text(&o.stderr).contains("modified or damaged"), "{}", text(&o.stderr));
    }
    // Something appended moves the trailer: then there is none, and the file
    // is plain apsi again (it does not run the old payload).
    let mut longer = good.clone();
    longer.extend_from_slice(b"junk");
    std::fs::write(&exe, &longer).unwrap();
    let o = run(&exe, &["--version"]);
    assert!(text(&o.stdout).starts_with("apsi "), "{}", text(&o.stdout));
}
