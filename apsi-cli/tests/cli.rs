//! The `apsi` command as a user meets it: exit statuses, usage errors,
//! version and help text.

use std::process::{Command, Output};

fn apsi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("cannot run apsi")
}

fn write_temp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("apsi-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn version_lists_the_core() {
    let o = apsi(&["--version"]);
    assert_eq!(o.status.code(), Some(0));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.starts_with("apsi 2."), "{s}");
    assert!(s.contains("apsi-core 2."), "{s}");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["frobnicate"][..],
        &["run"],
        &["run", "--bogus", "x.apsi"],
        &["check"],
        &["run", "--threads", "zero", "x.apsi"],
    ] {
        let o = apsi(args);
        assert_eq!(o.status.code(), Some(2), "args {args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.starts_with("error: "), "{e}");
    }
}

#[test]
fn help_mentions_every_command() {
    let o = apsi(&["help"]);
    assert_eq!(o.status.code(), Some(0));
    let s = String::from_utf8_lossy(&o.stdout);
    for c in ["run", "check", "repl", "--version"] {
        assert!(s.contains(c), "help lacks {c}: {s}");
    }
    assert_eq!(apsi(&["help", "run"]).status.code(), Some(0));
    assert_eq!(apsi(&["help", "nonsense"]).status.code(), Some(2));
}

#[test]
fn program_error_exits_1_with_location() {
    let p = write_temp("boom.apsi", "x = 1\nprint(x / 0)\n");
    let o = apsi(&["run", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("ZeroDivisionError"), "{e}");
    assert!(e.contains("boom.apsi:2:"), "{e}");
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn missing_file_is_a_program_error_not_a_crash() {
    let o = apsi(&["run", "/nonexistent/dir/nothing.apsi"]);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("nothing.apsi"), "{e}");
}

#[test]
fn exit_code_from_program() {
    let p = write_temp("exit3.apsi", "print(\"bye\")\nexit(3)\nprint(\"never\")\n");
    let o = apsi(&["run", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "bye\n");
}

#[test]
fn argv_reaches_the_program() {
    let p = write_temp("args.apsi", "print(argv)\n");
    let o = apsi(&["run", p.to_str().unwrap(), "a", "--b"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "['a', '--b']\n");
}

#[test]
fn check_reports_without_running() {
    let p = write_temp("chk.apsi", "print(\"no\")\nprint(nope)\n");
    let o = apsi(&["check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert!(String::from_utf8_lossy(&o.stderr).contains("NameError"));
    let ok = write_temp("fine.apsi", "print(1)\n");
    let o = apsi(&["check", ok.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn time_flag_reports_on_stderr() {
    let p = write_temp("t.apsi", "print(1)\n");
    let o = apsi(&["run", "--time", p.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "1\n");
    assert!(String::from_utf8_lossy(&o.stderr).contains("time:"));
}

#[test]
fn compile_errors_in_two_modules_are_all_reported_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The checker accepts these; the compiler's scope analysis refuses both.
    std::fs::write(d.join("a.apsi"), "def f(x):\n    global x\n    return x\n").unwrap();
    std::fs::write(d.join("b.apsi"), "def g(y):\n    global y\n    return y\n").unwrap();
    std::fs::write(d.join("main.apsi"), "print(\"started\")\nuse a\nuse b\nprint(f(1))\n").unwrap();
    let main = d.join("main.apsi");
    for cmd in ["run", "check"] {
        let o = apsi(&[cmd, main.to_str().unwrap()]);
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {out}{err}");
        assert!(!out.contains("started"), "{cmd}: nothing may run: {out}");
        assert!(
            err.contains("a.apsi:2:12") && err.contains("b.apsi:2:12"),
            "{cmd}: {err}"
        );
        assert!(err.contains("2 errors found"), "{cmd}: {err}");
    }
}

#[test]
fn a_module_of_the_design_not_in_this_release_says_so_truthfully() {
    let p = write_temp("usegpu.apsi", "use gpu\n");
    let o = apsi(&["check", p.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("not of this release"), "{err}");
    assert!(
        !err.contains("cargo feature") && !err.contains("apsi pkg install gpu"),
        "{err}"
    );
}

/// Starts `apsi run` on a program that prints, then loops forever, with
/// stdout going to a file; returns the child and the file once "start" is in it.
#[cfg(unix)]
fn started_loop(dir: &std::path::Path) -> (std::process::Child, std::path::PathBuf) {
    let prog = dir.join("loop.apsi");
    std::fs::write(&prog, "print(\"start\")\nx = 0\nwhile true:\n    x += 1\n").unwrap();
    let out = dir.join("out.txt");
    let child = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(["run", prog.to_str().unwrap()])
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The output is block-buffered into a file: wait until the loop runs.
    std::thread::sleep(std::time::Duration::from_millis(400));
    (child, out)
}

#[cfg(unix)]
#[test]
fn sigint_and_sigterm_stop_the_program_with_its_output_flushed() {
    for (sig, code, said) in [
        (libc::SIGINT, 130, "KeyboardInterrupt"),
        (libc::SIGTERM, 143, "Terminated"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (child, out) = started_loop(dir.path());
        // SAFETY: sending a signal to our own child process.
        unsafe { libc::kill(child.id() as i32, sig) };
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(code), "{said}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "start\n", "{said}: output lost");
        assert!(String::from_utf8_lossy(&o.stderr).contains(said));
    }
}

/// SIGBUS (a mapped file cut short by another program while the program
/// reads it) keeps the output printed so far, says what happened and exits
/// with 135.
#[cfg(all(unix, feature = "data"))]
#[test]
fn sigbus_from_a_truncated_mapped_file_keeps_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = r#"use data
save_tensor("x.npy", ones((1024, 256)))
x = load_tensor("x.npy", mmap=true)
print("start")
write_text("ready", "1")
waiting = true
while waiting:
    try:
        read_text("go")
        waiting = false
    except IOError:
        pass
print(x.sum())
"#;
    std::fs::write(d.join("bus.apsi"), prog).unwrap();
    let out = d.join("out.txt");
    let child = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(["run", "bus.apsi"])
        .current_dir(d)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !d.join("ready").exists() && t0.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Another program cuts the mapped file short.
    std::fs::OpenOptions::new()
        .write(true)
        .open(d.join("x.npy"))
        .unwrap()
        .set_len(0)
        .unwrap();
    std::fs::write(d.join("go"), "1").unwrap();
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(135), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "start\n",
        "output lost; stderr: {stderr}"
    );
    assert!(stderr.contains("BusError") && stderr.contains("SIGBUS"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn a_closed_stdout_is_an_error_not_silence() {
    use std::os::unix::process::CommandExt;
    let p = write_temp("closed.apsi", "print(\"lost?\")\n");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_apsi"));
    cmd.args(["run", p.to_str().unwrap()]);
    // SAFETY: only close(2) runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(1);
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("standard output is closed"));
    // To /dev/null on purpose is fine.
    let o = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(["run", p.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
}

/// When the system refuses new threads (here: a 3 GB address-space limit,
/// and every worker reserves its stack), nested task waits still finish:
/// the waiting thread runs the queued work itself instead of hanging.
#[cfg(all(unix, feature = "parallel"))]
#[test]
fn nested_waits_finish_when_no_thread_can_be_created() {
    let p = write_temp(
        "nest.apsi",
        "use parallel\ndef f(n):\n    if n == 0:\n        return 0\n    return spawn(f, n - 1).wait() + 1\nprint(f(200))\n",
    );
    let script = format!(
        "ulimit -v 3000000 && exec timeout 60 '{}' run --threads 2 '{}'",
        env!("CARGO_BIN_EXE_apsi"),
        p.display()
    );
    let o = Command::new("sh").args(["-c", &script]).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "200\n",
        "status {:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `apsi run` makes the interpreter's thread one of the tensor kernels'
/// threads (`par::kernel_pool`). While it waits for tasks, their kernels
/// (split: a 192x192 product) still find a thread, and every result has
/// the same bits on 1, 2 and 3 threads and without `--threads`.
#[cfg(all(unix, feature = "parallel"))]
#[test]
fn kernels_of_tasks_run_while_the_interpreter_thread_waits_with_the_same_bits() {
    let p = write_temp(
        "kernels_pool.apsi",
        "use parallel\nseed(7)\ndef work(k):\n    a = ones((192, 192), dtype=f32) * float(k)\n    b = a @ a + a\n    return float(b.sum())\n\
         x = randn((300000,), dtype=f32)\nts = [spawn(work, k) for k in range(4)]\nprint([t.wait() for t in ts])\n\
         y = x * 2.0 + x\nprint(float(y.sum()), float(x @ x))\nprint(pmap(work, [5, 6]))\n",
    );
    let mut outs = Vec::new();
    for threads in [&["--threads", "1"][..], &["--threads", "2"], &["--threads", "3"], &[]] {
        let script = format!(
            "exec timeout 60 '{}' run {} '{}'",
            env!("CARGO_BIN_EXE_apsi"),
            threads.join(" "),
            p.display()
        );
        let o = Command::new("sh").args(["-c", &script]).output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{threads:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        outs.push(String::from_utf8_lossy(&o.stdout).into_owned());
    }
    assert!(
        outs[0].starts_with("[0.0, 7114752.0, 28385280.0, 63811584.0]\n"),
        "{}",
        outs[0]
    );
    assert!(outs.iter().all(|o| o == &outs[0]), "{outs:?}");
}
