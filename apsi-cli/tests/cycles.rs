//! The cycle collector end to end (`apsi-core/src/value/cycles.rs`): the
//! real `apsi` runs programs that make cyclic garbage, and what it frees,
//! what it keeps and how much memory the process needed are checked.
//! (Collections run in `apsi run`'s solo mode only, so an in-process test
//! could not see one.)

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

struct Run {
    stdout: String,
    stderr: String,
    /// Peak resident memory of the process, in KiB.
    max_rss_kib: i64,
}

/// Runs `apsi run FILE` with `APSI_GC_STATS=1`, waiting with `wait4` for
/// the peak memory of that one process.
fn run(file: &Path) -> Run {
    let home = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out_path = out_dir.path().join("out");
    let err_path = out_dir.path().join("err");
    // Reaped by `wait4` below, which `Child` has no call for.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .arg("run")
        .arg(file)
        .env("APSI_HOME", home.path())
        .env("APSI_GC_STATS", "1")
        .stdout(Stdio::from(std::fs::File::create(&out_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()))
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed `rusage` is valid, and the pointers are to locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "apsi run {} failed: {}",
        file.display(),
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    Run {
        stdout: std::fs::read_to_string(&out_path).unwrap(),
        stderr: std::fs::read_to_string(&err_path).unwrap(),
        max_rss_kib: usage.ru_maxrss,
    }
}

/// [`run`] of a program given as text.
fn run_source(name: &str, source: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(name);
    std::fs::write(&file, source).unwrap();
    run(&file)
}

/// (collections, instances freed) from the `gc:` line `APSI_GC_STATS` prints.
fn gc_stats(stderr: &str) -> (usize, usize) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("gc: "))
        .unwrap_or_else(|| panic!("no gc line in {stderr:?}"));
    let nums: Vec<usize> = line.split(' ').filter_map(|w| w.parse().ok()).collect();
    (nums[0], nums[1])
}

#[test]
fn cyclic_garbage_is_freed_and_everything_reachable_kept() {
    let r = run(&repo().join("tests/spec/cycles_collected.apsi"));
    assert_eq!(r.stdout, "0 true 15\n1 true 15\n2 true 15\ntrue 11\n");
    let (collections, freed) = gc_stats(&r.stderr);
    // Three rounds of 80,000 cycles of 100,000 instances; what the last
    // round left after the last collection is still there at exit.
    assert!(collections >= 10, "{}", r.stderr);
    assert!(freed >= 250_000, "{}", r.stderr);
}

#[test]
fn a_loop_of_cycles_runs_in_bounded_memory() {
    // 800,000 instances in cycles of two, each with its own list: about
    // 200 MB if none were freed.
    let r = run_source(
        "pairs.apsi",
        "struct Node:\n    name: int\n    peers: list\n    def __init__(self, name):\n        self.name = name\n        \
         self.peers = []\n\ndef pair(i):\n    a = Node(i)\n    b = Node(i + 1)\n    a.peers.append(b)\n    \
         b.peers.append(a)\n    return a.name + b.name\n\ntotal = 0\nfor i in range(400000):\n    total += pair(i)\n\
         print(total)\n",
    );
    assert_eq!(r.stdout, "160000000000\n");
    let (_, freed) = gc_stats(&r.stderr);
    assert!(freed >= 780_000, "{}", r.stderr);
    assert!(r.max_rss_kib < 80_000, "peak RSS {} KiB", r.max_rss_kib);
}

#[test]
fn copies_built_ins_make_in_solo_mode_are_counted_and_freed() {
    // `list(t)`, `tuple(xs)`, `reversed`, `dict(zip(…))`, `set(…)` copy
    // their items with `Value::clone`, which solo mode counts with plain
    // loads and stores: one count too many would keep each step's 160-byte
    // string and its containers (about 50 MB for the run), one too few
    // would free a string still in use.
    let r = run_source(
        "clones.apsi",
        "def work(i):\n    s = \"item-\" + str(i) * 20\n    xs = [s, [i], (s, i)]\n    t = tuple(xs)\n    \
         l = list(t)\n    r = list(reversed(l))\n    d = dict(zip([\"a\", \"b\", \"c\"], r))\n    \
         st = set([s, s + \"x\"])\n    return len(d) + len(st) + len(r[0][0]) + len(d[\"c\"])\n\n\
         total = 0\nfor i in range(200000):\n    total += work(i)\nprint(total)\n",
    );
    assert_eq!(r.stdout, "46555600\n");
    assert!(r.max_rss_kib < 40_000, "peak RSS {} KiB", r.max_rss_kib);
}

#[test]
fn cycles_made_by_a_one_step_setter_are_freed() {
    // `a.link(b)` is done without a frame (`Code::leaf`): the store must
    // still tell the collector, or these 600,000 instances would stay.
    let r = run_source(
        "setter.apsi",
        "struct Node:\n    name: int\n    other: any\n    def link(self, o):\n        self.other = o\n\n\
         def pair(i):\n    a = Node(i, none)\n    b = Node(i + 1, none)\n    a.link(b)\n    b.link(a)\n    \
         return a.name + b.name\n\ntotal = 0\nfor i in range(300000):\n    total += pair(i)\nprint(total)\n",
    );
    assert_eq!(r.stdout, "90000000000\n");
    let (_, freed) = gc_stats(&r.stderr);
    assert!(freed >= 580_000, "{}", r.stderr);
}

#[test]
fn no_collection_once_threads_have_run_apsi_code() {
    // After a `parallel for`, counts are shared between threads for good
    // and the collector stands down: the program runs on, as before.
    let r = run_source(
        "par.apsi",
        "use parallel\nstruct Node:\n    peers: list\n\ndef pair():\n    a = Node([])\n    b = Node([a])\n    \
         a.peers.append(b)\n    return len(a.peers)\n\nt = 0\nfor i in range(30000):\n    t += pair()\n\
         out = [0] * 64\nparallel for k in range(64):\n    out[k] = pair()\nfor i in range(30000):\n    \
         t += pair()\nprint(t, sum(out))\n",
    );
    assert_eq!(r.stdout, "60000 64\n");
    assert_eq!(gc_stats(&r.stderr), (0, 0));
}
