//! The signed compile cache, end to end through the real binary: hits give
//! the same output and diagnostics as cold runs, and a tampered entry
//! (flipped, truncated, swapped, foreign key, other version, symlink) or two
//! writers at once never make a program load wrongly, crash, or fail to run.
//! Also `apsi compile`, `apsi bench`, `@timed` and `apsi run FILE --time`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn cache_dir(&self) -> PathBuf {
        self.path().join("home/cache/compile")
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path().join(name);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(&p, text).unwrap();
        p
    }
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_apsi"));
        c.args(args)
            .current_dir(self.path())
            .env("APSI_HOME", self.path().join("home"))
            .env("NO_COLOR", "1")
            .env_remove("APSI_NO_CACHE");
        c
    }
    fn apsi(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("cannot run apsi")
    }
    /// The cache's entries, sorted.
    fn entries(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = match std::fs::read_dir(self.cache_dir()) {
            Ok(rd) => rd.flatten().map(|e| e.path()).collect(),
            Err(_) => Vec::new(),
        };
        v.sort();
        v
    }
    fn only_entry(&self) -> PathBuf {
        let e = self.entries();
        assert_eq!(e.len(), 1, "{e:?}");
        e[0].clone()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const PROG: &str = "\
struct V:
    x: int
    y: int
    def sum(self) -> int:
        return self.x + self.y

def fib(n: int) -> int:
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)

vs = [V(i, i * 2) for i in range(5)]
print(fib(15), sum(v.sum() for v in vs), \"done\", len(argv))
";
const OUT: &str = "610 30 done 0\n";

/// Runs `main.apsi` and asserts it ran right; returns stderr.
fn run_ok(h: &Home) -> String {
    let o = h.apsi(&["run", "main.apsi"]);
    assert_eq!(text(&o.stdout), OUT, "stderr: {}", text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", text(&o.stderr));
    text(&o.stderr)
}

fn assert_rejected_then_healed(h: &Home, why: &str) {
    let err = run_ok(h);
    assert!(err.contains("warning: compile cache: ignoring"), "{why}: {err}");
    // The entry was rewritten: the next run is a clean hit.
    assert_eq!(run_ok(h), "", "{why}");
}

#[test]
fn a_hit_runs_the_same_program_and_the_second_run_compiles_nothing_new() {
    let h = Home::new();
    h.write("main.apsi", PROG);
    assert_eq!(run_ok(&h), "");
    let e = h.only_entry();
    assert!(e.extension().is_some_and(|x| x == "apsic"), "{e:?}");
    let before = std::fs::read(&e).unwrap();
    assert_eq!(run_ok(&h), "");
    // A hit reads the entry; it does not write a new one.
    assert_eq!(std::fs::read(&e).unwrap(), before);
    // Arguments are the program's, not part of what is cached.
    let o = h.apsi(&["run", "main.apsi", "a", "b"]);
    assert_eq!(text(&o.stdout), "610 30 done 2\n");
    assert_eq!(h.entries().len(), 1);
}

#[test]
fn no_cache_flag_and_env_write_nothing() {
    let h = Home::new();
    h.write("main.apsi", PROG);
    let o = h.apsi(&["run", "--no-cache", "main.apsi"]);
    assert_eq!(text(&o.stdout), OUT);
    let o = h.apsi(&["run", "main.apsi", "--no-cache"]);
    assert_eq!(text(&o.stdout), OUT);
    let o = h.cmd(&["run", "main.apsi"]).env("APSI_NO_CACHE", "1").output().unwrap();
    assert_eq!(text(&o.stdout), OUT);
    assert!(h.entries().is_empty(), "{:?}", h.entries());
}

#[test]
fn errors_from_a_cached_program_show_the_same_places() {
    let h = Home::new();
    h.write("lib/util.apsi", "def half(x: int) -> int:\n    return 10 // x\n");
    h.write("main.apsi", "use lib.util\nprint(\"start\")\nprint(half(0))\n");
    let cold = h.apsi(&["run", "main.apsi"]);
    let hit = h.apsi(&["run", "main.apsi"]);
    assert_eq!(cold.status.code(), Some(1));
    assert_eq!(text(&cold.stdout), "start\n");
    assert_eq!(text(&hit.stdout), text(&cold.stdout));
    let err = text(&cold.stderr);
    assert!(
        err.contains("ZeroDivisionError") && err.contains("util.apsi:2"),
        "{err}"
    );
    assert_eq!(text(&hit.stderr), err);
}

#[test]
fn a_changed_module_is_compiled_again() {
    let h = Home::new();
    h.write("helper.apsi", "def k():\n    return 1\n");
    h.write("main.apsi", "use helper\nprint(k())\n");
    assert_eq!(text(&h.apsi(&["run", "main.apsi"]).stdout), "1\n");
    h.write("helper.apsi", "def k():\n    return 2\n");
    let o = h.apsi(&["run", "main.apsi"]);
    assert_eq!(text(&o.stdout), "2\n");
    assert_eq!(text(&o.stderr), "");
}

#[test]
fn a_module_file_appearing_earlier_on_the_search_path_is_used() {
    let h = Home::new();
    // `use shapes` finds the installed package first...
    h.write(
        "home/packages/shapes/shapes.apsi",
        "def which():\n    return \"package\"\n",
    );
    h.write("main.apsi", "use shapes\nprint(which())\n");
    assert_eq!(text(&h.apsi(&["run", "main.apsi"]).stdout), "package\n");
    assert_eq!(text(&h.apsi(&["run", "main.apsi"]).stdout), "package\n");
    // ...until a file beside the program takes precedence.
    h.write("shapes.apsi", "def which():\n    return \"local\"\n");
    assert_eq!(text(&h.apsi(&["run", "main.apsi"]).stdout), "local\n");
}

#[test]
fn tamper_flipped_bytes_are_never_loaded() {
    let h = Home::new();
    h.write("main.apsi", PROG);
    run_ok(&h);
    let e = h.only_entry();
    let good = std::fs::read(&e).unwrap();
    // The magic, the tag, the header, the file list and the payload's middle and end.
    for at in [0, 10, 40, 60, good.len() / 2, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x20;
        std::fs::write(&e, &bad).unwrap();
        assert_rejected_then_healed(&h, &format!("flip at {at}"));
    }
}

#[test]
fn tamper_truncated_entries_are_never_loaded() {
    let h = Home::new();
    h.write("main.apsi", PROG);
    run_ok(&h);
    let e = h.only_entry();
    let good = std::fs::read(&e).unwrap();
    for n in [0, 7, 39, good.len() / 2, good.len() - 1] {
        std::fs::write(&e, &good[..n]).unwrap();
        assert_rejected_then_healed(&h, &format!("truncated to {n}"));
    }
}

#[test]
fn tamper_swapped_entries_are_never_loaded() {
    let h = Home::new();
    h.write("main.apsi", PROG);
    h.write("other.apsi", "print(\"other\")\n");
    run_ok(&h);
    assert_eq!(text(&h.apsi(&["run", "other.apsi"]).stdout), "other\n");
    let es = h.entries();
    assert_eq!(es.len(), 2);
    let (a, b) = (std::fs::read(&es[0]).unwrap(), std::fs::read(&es[1]).unwrap());
    std::fs::write(&es[0], &b).unwrap();
    std::fs::write(&es[1], &a).unwrap();
    let o = h.apsi(&["run", "other.apsi"]);
    assert_eq!(text(&o.stdout), "other\n");
    assert!(text(&o.stderr).contains("ignoring"), "{}", text(&o.stderr));
    assert_rejected_then_healed(&h, "swapped");
}

#[test]
fn tamper_another_key_is_never_loaded() {
    let h = Home::new();
    h.write("main.apsi", PROG);
    run_ok(&h);
    let key = h.path().join("home/cache.key");
    let mut k = std::fs::read(&key).unwrap();
    k[0] ^= 1;
    std::fs::write(&key, &k).unwrap();
    assert_rejected_then_healed(&h, "new key");
}

#[test]
fn tamper_an_entry_signed_for_another_apsi_version_is_never_loaded() {
    use apsi_cache::compile::{decode_file, encode_file};
    let h = Home::new();
    h.write("main.apsi", PROG);
    run_ok(&h);
    let e = h.only_entry();
    let key: [u8; 32] = std::fs::read(h.path().join("home/cache.key")).unwrap()[..32]
        .try_into()
        .unwrap();
    let name = e.file_stem().unwrap().to_str().unwrap().to_string();
    let entry = decode_file(&key, &name, env!("CARGO_PKG_VERSION"), &std::fs::read(&e).unwrap()).unwrap();
    // Properly signed with this user's key, but by another version of apsi.
    std::fs::write(&e, encode_file(&key, &name, "0.0.1", &entry)).unwrap();
    let err = run_ok(&h);
    assert!(err.contains("written by apsi 0.0.1"), "{err}");
    assert_eq!(run_ok(&h), "");
}

#[test]
fn tamper_a_symlink_in_place_of_an_entry_is_never_followed() {
    let h = Home::new();
    h.write("main.apsi", PROG);
    h.write("other.apsi", "print(\"other\")\n");
    run_ok(&h);
    let mine = h.only_entry();
    assert_eq!(text(&h.apsi(&["run", "other.apsi"]).stdout), "other\n");
    let theirs = h.entries().into_iter().find(|p| *p != mine).unwrap();
    std::fs::remove_file(&mine).unwrap();
    std::os::unix::fs::symlink(&theirs, &mine).unwrap();
    let err = run_ok(&h);
    assert!(err.contains("symbolic link"), "{err}");
    // Replaced by a regular file; the link's target is untouched.
    assert!(!mine.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(run_ok(&h), "");
    assert_eq!(text(&h.apsi(&["run", "other.apsi"]).stdout), "other\n");
}

#[test]
fn two_writers_at_once_both_run_and_leave_one_whole_entry() {
    let h = Home::new();
    h.write("main.apsi", PROG);
    for round in 0..3 {
        let kids: Vec<_> = (0..6)
            .map(|_| {
                h.cmd(&["run", "main.apsi"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for k in kids {
            let o = k.wait_with_output().unwrap();
            assert_eq!(text(&o.stdout), OUT, "round {round}: {}", text(&o.stderr));
            assert_eq!(text(&o.stderr), "", "round {round}");
        }
        // One entry, no temporary files left.
        h.only_entry();
        // Start again from nothing.
        std::fs::remove_dir_all(h.cache_dir()).unwrap();
    }
}

#[test]
fn apsi_compile_fills_the_cache_and_reports_every_error() {
    let h = Home::new();
    h.write("progs/a.apsi", "print(\"a\")\n");
    h.write("progs/sub/b.apsi", "print(\"b\")\n");
    h.write("bad1.apsi", "print(nope1)\n");
    h.write("bad2.apsi", "def f(:\n");
    let o = h.apsi(&["compile", "progs"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("a.apsi: compiled") && out.contains("b.apsi: compiled"),
        "{out}"
    );
    assert_eq!(h.entries().len(), 2);
    // A compiled program then runs from the cache (nothing new is written).
    let o = h.apsi(&["run", "progs/a.apsi"]);
    assert_eq!(text(&o.stdout), "a\n");
    assert_eq!(h.entries().len(), 2);
    let o = h.apsi(&["compile", "bad1.apsi", "progs/a.apsi", "bad2.apsi"]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("nope1") && err.contains("bad2.apsi"), "{err}");
    let o = h.apsi(&["compile", "--runtime"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).contains("nothing to compile"), "{}", text(&o.stdout));
}

#[test]
fn time_after_the_file_is_apsis_and_after_double_dash_the_programs() {
    let h = Home::new();
    h.write("args.apsi", "print(argv)\n");
    let o = h.apsi(&["run", "args.apsi", "--time", "x"]);
    assert_eq!(text(&o.stdout), "['x']\n");
    let err = text(&o.stderr);
    assert!(
        err.starts_with("time: ") && (err.contains(" µs") || err.contains(" ms") || err.contains(" s")),
        "{err}"
    );
    let o = h.apsi(&["run", "args.apsi", "--", "--time"]);
    assert_eq!(text(&o.stdout), "['--time']\n");
    assert_eq!(text(&o.stderr), "");
}

#[test]
fn timed_prints_each_calls_wall_time() {
    let h = Home::new();
    h.write(
        "t.apsi",
        "@timed\ndef work(n):\n    return sum(range(n))\n\nprint(work(10))\nprint(work(n=1000))\n",
    );
    let o = h.apsi(&["run", "t.apsi"]);
    assert_eq!(text(&o.stdout), "45\n499500\n");
    let err = text(&o.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    for l in lines {
        assert!(l.starts_with("timed: work took "), "{l}");
        assert!(l.ends_with(" µs") || l.ends_with(" ms") || l.ends_with(" s"), "{l}");
    }
    h.write("bad.apsi", "timed(3)\n");
    let o = h.apsi(&["run", "bad.apsi"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("@timed expects a function, found int"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn bench_prints_best_median_mean_worst_and_json() {
    let h = Home::new();
    h.write("b.apsi", "print(sum(range(1000)))\n");
    let o = h.apsi(&["bench", "b.apsi", "-n", "3"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "bench: b.apsi (1 warm-up, then 3 timed runs, each a new process)"
    );
    assert!(lines[1].starts_with("3 runs: best "), "{out}");
    for w in [", median ", ", mean ", ", worst "] {
        assert!(lines[1].contains(w), "{out}");
    }
    let o = h.apsi(&["bench", "b.apsi", "-n", "2", "--warmup", "0", "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["runs"], 2);
    assert_eq!(j["warmup"], 0);
    assert_eq!(j["file"], "b.apsi");
    assert_eq!(j["times_s"].as_array().unwrap().len(), 2);
    let (best, worst) = (j["best_s"].as_f64().unwrap(), j["worst_s"].as_f64().unwrap());
    assert!(best > 0.0 && best <= worst, "{j}");
    // A failing program stops the benchmark with its error.
    h.write("fail.apsi", "print(1 // 0)\n");
    let o = h.apsi(&["bench", "fail.apsi", "-n", "2"]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("warm-up run 1 of fail.apsi failed") && err.contains("ZeroDivisionError"),
        "{err}"
    );
}

#[test]
fn a_program_read_from_a_pipe_runs_once_and_is_not_cached() {
    use std::io::Write;
    let h = Home::new();
    for _ in 0..2 {
        let mut c = h.cmd(&["run", "/dev/stdin"]);
        c.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().expect("cannot run apsi");
        child.stdin.take().unwrap().write_all(b"print(6 * 7)\n").unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "42\n", "{}", text(&out.stderr));
    }
    assert!(h.entries().is_empty(), "{:?}", h.entries());
}
