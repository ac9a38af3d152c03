//! Pipelines run by the real interpreter (worker threads with their own
//! executors, Apsi closures, `for` and `list`), output captured.

use apsi_testkit::{Failure, Program};

fn run(name: &str, src: &str) -> (String, Result<(), Failure>) {
    let o = Program::new(name, src).modules(vec![apsi_data::module()]).run();
    (o.out, o.result)
}

#[test]
fn parallel_map_keeps_order_with_uneven_work() {
    // Early items take longest, so workers finish out of order.
    let src = "use data\n\
def f(v):\n    s = 0\n    for i in range((300 - v) * 20):\n        s = s + 1\n    return v * 10\n\
print(list(from_range(300) |> map(f, workers=4)) == [v * 10 for v in range(300)])\n\
print(list(from_range(300) |> map(f, workers=4) |> prefetch(3) |> take(5)))\n";
    let (out, r) = run("order", src);
    assert!(r.is_ok(), "{out}");
    assert_eq!(out, "true\n[0, 10, 20, 30, 40]\n");
}

#[test]
fn a_loop_may_stop_early_and_errors_keep_their_place() {
    let src = "use data\n\
for x in from_range(100000) |> map(lambda v: v + 1, workers=3):\n    if x == 5:\n        break\n\
print(x)\n\
def g(v):\n    if v == 3:\n        raise ValueError(\"three\")\n    return v\n\
seen = []\n\
try:\n    for y in from_range(10) |> map(g, workers=3):\n        seen.append(y)\n\
except ValueError as e:\n    print(seen, e)\n";
    let (out, r) = run("early", src);
    assert!(r.is_ok(), "{out}");
    assert_eq!(out, "5\n[0, 1, 2] ValueError: three\n");
}

#[test]
fn sources_from_files_csv_and_generators() {
    let dir = std::env::temp_dir().join(format!("apsi-data-rt-src-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("t.csv"), "x,y,name\n1,2.5,a\n3,,\"b, c\"\n").expect("csv");
    let d = dir.to_string_lossy();
    let src = format!(
        "use data\n\
rows = list(from_csv(\"{d}/t.csv\"))\n\
print(rows[0])\n\
print(list(from_csv(\"{d}/t.csv\", columns=[\"name\", \"x\"])))\n\
print([p.split(\"/\")[-1] for p in list(from_files(\"{d}/*.csv\"))])\n\
print(list(from_generator(lambda: range(3)) |> repeat(2)))\n\
s = 0\n\
for a, b in from_list([(1, 2), (3, 4)]):\n    s = s + a * b\n\
print(s)\n"
    );
    let (out, r) = run("sources", &src);
    assert!(r.is_ok(), "{out} {r:?}");
    assert_eq!(
        out,
        "{'x': 1.0, 'y': 2.5, 'name': 'a'}\n[('a', 1.0), ('b, c', 3.0)]\n['t.csv']\n[0, 1, 2, 0, 1, 2]\n14\n"
    );
}

/// `@disk_cache` keys a call by the function's code too: a changed body in
/// a later program recomputes instead of returning the old result (issue
/// 17). The only test of this binary that uses the cache key (APSI_HOME).
#[test]
fn disk_cache_recomputes_when_the_body_changes() {
    let root = tempfile::tempdir().unwrap();
    std::env::set_var("APSI_HOME", root.path().join("home"));
    let dir = root.path().join("dc").display().to_string();
    let prog = |body: &str| {
        format!(
            "use data\ncalls = [0]\n@disk_cache(\"{dir}\")\ndef f(x):\n    calls[0] += 1\n    return {body}\nprint(f(1), f(1), calls[0])\n"
        )
    };
    let (out, r) = run("dc1", &prog("x + 1"));
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(out, "2 2 1\n");
    // The same program again: both calls come from the cache.
    let (out, _) = run("dc2", &prog("x + 1"));
    assert_eq!(out, "2 2 0\n");
    // A changed body: computed again.
    let (out, _) = run("dc3", &prog("x + 2"));
    assert_eq!(out, "3 3 1\n");

    // A pipeline over files is keyed by each file's size and mtime: an
    // edited file is read again, not replayed from the cache.
    let files = root.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("a.txt"), "one").unwrap();
    let pipeline = format!(
        "use data\nds = from_files(\"{}/*.txt\") |> map(lambda p: read_text(p)) |> cache(dir=\"{}\")\nprint(list(ds))\n",
        files.display(),
        root.path().join("pc").display()
    );
    let (out, r) = run("pc1", &pipeline);
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(out, "['one']\n");
    std::fs::write(files.join("a.txt"), "changed").unwrap();
    let (out, _) = run("pc2", &pipeline);
    assert_eq!(out, "['changed']\n");
}
