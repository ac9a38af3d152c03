//! Stress: many tasks, channels, locks and atomics, 10,000 rounds each, in
//! Apsi and directly on the cores. Fails on a wrong count; a deadlock hangs
//! the test past its watchdog, which then fails it.

use apsi_core::driver::RunError;
use apsi_parallel::atomic::{AtomicNum, Num};
use apsi_parallel::chan::Chan;
use apsi_testkit::{Failure, Outcome, Program};
use std::sync::Arc;
use std::time::Duration;

/// Runs `src` with the `parallel` module installed (at the current thread count).
fn run(name: &str, src: &str) -> Outcome {
    Program::new(name, src).modules(vec![apsi_parallel::module()]).run()
}

/// Run `f` on a thread; fail if it does not finish within `secs`.
fn watchdog(secs: u64, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => h.join().expect("stress body panicked"),
        Err(_) => {
            if h.is_finished() {
                h.join().expect("stress body panicked");
            } else {
                panic!("deadlock: the stress test did not finish within {secs} s");
            }
        }
    }
}

const PROGRAM: &str = r#"
use parallel

N = 10000
W = 4
counter = atomic(0)
fsum = atomic(0.0)
cas_count = atomic(0)
l = lock()
box = [0]
ch = channel(16)
results = channel(W)

def cas_inc():
    while true:
        old = cas_count.load()
        if cas_count.compare_exchange(old, old + 1):
            return

def worker(k):
    mine = 0
    for i in range(k, N, W):
        counter.add(1)
        fsum.add(0.5)
        cas_inc()
        with l:
            box[0] += 1
        ch.send(i)
        mine += 1
    results.send(mine)

def consumer():
    s = 0
    for c in range(N):
        s += ch.recv()
    return s

cons = spawn(consumer)
ws = [spawn(worker, k) for k in range(W)]
wait_all(ws)
results.close()
per = 0
for m in results:
    per += m
print(cons.wait(), counter.load(), fsum.load(), cas_count.load(), box[0], per)

ts = [spawn(lambda x: x * 2, i) for i in range(N)]
print(sum(wait_all(ts)))

first = wait_any([spawn(lambda: 7)])
print(first.wait(), first.done())

s = 0
parallel for i in range(N):
    s += i
    with l:
        box[0] -= 1
print(s, box[0])
print(len(pmap(lambda x: x + 1, range(N))), parallel_reduce(range(N), lambda x: 1, lambda a, b: a + b, 0))
"#;

#[test]
fn apsi_program_10000_rounds() {
    watchdog(300, || {
        for threads in [1usize, 2, 3] {
            apsi_core::api::par::set_threads(threads);
            let o = run("stress", PROGRAM);
            assert!(o.result.is_ok(), "threads={threads}: {:?}", o.result);
            let want = "49995000 10000 5000.0 10000 10000 10000\n99990000\n7 true\n49995000 0\n10000 10000\n";
            assert_eq!(o.out, want, "threads={threads}");
        }
    });
}

#[test]
fn channel_and_atomic_cores_10000_rounds() {
    watchdog(120, || {
        let ch = Arc::new(Chan::new(8));
        let count = Arc::new(AtomicNum::new(Num::Int(0)));
        let producers: Vec<_> = (0..4)
            .map(|p| {
                let (ch, count) = (ch.clone(), count.clone());
                std::thread::spawn(move || {
                    for i in 0..2500i64 {
                        ch.send(p * 2500 + i).expect("open");
                        count.fetch_add(Num::Int(1)).expect("no overflow");
                    }
                })
            })
            .collect();
        let consumers: Vec<_> = (0..3)
            .map(|_| {
                let ch = ch.clone();
                std::thread::spawn(move || {
                    let mut sum = 0i64;
                    let mut n = 0;
                    while let Some(v) = ch.recv() {
                        sum += v;
                        n += 1;
                    }
                    (sum, n)
                })
            })
            .collect();
        for p in producers {
            p.join().expect("producer");
        }
        ch.close();
        let (mut sum, mut n) = (0, 0);
        for c in consumers {
            let (s, k) = c.join().expect("consumer");
            sum += s;
            n += k;
        }
        assert_eq!(n, 10_000);
        assert_eq!(sum, 9999 * 10_000 / 2);
        assert_eq!(count.load(), Num::Int(10_000));
    });
}

#[test]
fn unwaited_failures_are_reported_and_waited_ones_are_not() {
    let o = run("fail", "use parallel\ndef f(x):\n    raise ValueError(\"task \" + str(x))\nt = spawn(f, 1)\ntry:\n    t.wait()\nexcept ValueError as e:\n    print(e.message)\nspawn(f, 2)\nprint(\"end\")\n");
    assert_eq!(o.out, "task 1\nend\n");
    match o.result {
        Err(Failure::Run(RunError::Error(d))) => {
            assert_eq!(d.message, "task 2");
            assert!(d.notes.iter().any(|n| n.contains("never waited for")), "{:?}", d.notes);
            assert!(
                d.trace.iter().any(|t| t.function == "f"),
                "the task's own stack is kept"
            );
        }
        other => panic!("the failed task was lost: {other:?}"),
    }
}

#[test]
fn wait_reraises_with_the_task_stack() {
    let o = run(
        "reraise",
        "use parallel\ndef inner():\n    return [1][3]\ndef task():\n    return inner()\nt = spawn(task)\nt.wait()\n",
    );
    match o.result {
        Err(Failure::Run(RunError::Error(d))) => {
            assert_eq!(d.kind.name(), "IndexError");
            let names: Vec<&str> = d.trace.iter().map(|t| t.function.as_str()).collect();
            assert!(
                names.contains(&"inner") && names.contains(&"task") && names.contains(&"<module>"),
                "{names:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}
