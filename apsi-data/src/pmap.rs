//! `map(f, workers=n)`: an ordered map on the core's worker pool with a
//! bounded in-flight window.
//!
//! The consumer (the thread iterating the dataset) pulls inputs from the
//! parent stream, numbers them, and queues at most `window` of them; up to
//! `workers` pool jobs, each with its own executor sharing the program's
//! runtime, take inputs from the queue and post results by number; the
//! consumer hands results out strictly in input order. When the result it
//! needs is still queued, the consumer takes that input and runs `f` itself,
//! so progress never depends on a free pool thread (`--threads 1`, a busy
//! pool, or a pipeline iterated inside a worker). An error of `f` is handed
//! out at its item's position, with the stack of the worker that raised it.
//! Workers end when the pass is dropped or after a second without work.
//! `workers` is capped at the program's thread count; one worker means `f`
//! runs on the consumer's thread.

use crate::stream::{call_item, BoxStream, Stream};
use apsi_core::api::par as pool;
use apsi_core::api::{Caller, Exc, VResult, Value};
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

const IDLE: Duration = Duration::from_secs(1);

pub fn open(parent: BoxStream, f: Value, workers: usize) -> BoxStream {
    // Never more workers than the program's thread count (`--threads`,
    // `set_threads`): waiting workers do not hold a pool slot, running ones
    // would all run at once.
    let workers = workers.min(apsi_core::api::par::threads());
    if workers <= 1 {
        return Box::new(SeqMap { parent, f });
    }
    Box::new(ParMap {
        parent: Some(parent),
        sh: Arc::new(Shared {
            f,
            st: Mutex::new(State::default()),
            work: Condvar::new(),
            done: Condvar::new(),
        }),
        workers,
        window: workers.saturating_mul(4),
        next_in: 0,
        next_out: 0,
        parent_err: None,
    })
}

/// `workers=1`: `f` on the consumer's thread.
struct SeqMap {
    parent: BoxStream,
    f: Value,
}

impl Stream for SeqMap {
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        match self.parent.next(c)? {
            Some(x) => call_item(c, &self.f, &x).map(Some),
            None => Ok(None),
        }
    }
}

struct Shared {
    f: Value,
    st: Mutex<State>,
    /// Workers wait here for queued inputs.
    work: Condvar,
    /// The consumer waits here for results.
    done: Condvar,
}

#[derive(Default)]
struct State {
    queue: VecDeque<(u64, Value)>,
    results: HashMap<u64, VResult<Value>>,
    alive: usize,
    closed: bool,
}

struct ParMap {
    parent: Option<BoxStream>,
    sh: Arc<Shared>,
    workers: usize,
    window: usize,
    next_in: u64,
    next_out: u64,
    /// The parent's error, handed out once the items before it are.
    parent_err: Option<(u64, Exc)>,
}

impl ParMap {
    fn refill(&mut self, c: &mut dyn Caller) {
        while (self.next_in - self.next_out) < self.window as u64 {
            let Some(p) = self.parent.as_mut() else { return };
            match p.next(c) {
                Ok(Some(x)) => {
                    let mut st = self.sh.st.lock();
                    st.queue.push_back((self.next_in, x));
                    self.next_in += 1;
                    let (queued, alive) = (st.queue.len(), st.alive);
                    if alive < self.workers && queued > alive {
                        if let Some(exec) = c.new_thread_caller() {
                            st.alive += 1;
                            drop(st);
                            spawn_worker(self.sh.clone(), exec);
                            continue;
                        }
                    }
                    drop(st);
                    self.sh.work.notify_one();
                }
                Ok(None) => self.parent = None,
                Err(e) => {
                    self.parent_err = Some((self.next_in, e));
                    self.parent = None;
                }
            }
        }
    }
}

fn spawn_worker(sh: Arc<Shared>, mut exec: Box<dyn Caller + Send>) {
    pool::submit(Box::new(move || {
        loop {
            let job = {
                let mut st = sh.st.lock();
                // Leaving is decided and counted under the lock, so the
                // consumer never counts on a worker that is on its way out.
                loop {
                    if st.closed {
                        st.alive = st.alive.saturating_sub(1);
                        break None;
                    }
                    if let Some(j) = st.queue.pop_front() {
                        break Some(j);
                    }
                    let timed_out = pool::blocking(|| sh.work.wait_for(&mut st, IDLE).timed_out());
                    if timed_out && st.queue.is_empty() {
                        st.alive = st.alive.saturating_sub(1);
                        break None;
                    }
                }
            };
            let Some((k, x)) = job else { break };
            let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call_item(&mut *exec, &sh.f, &x))) {
                Ok(r) => r,
                Err(_) => Err(apsi_core::api::err(
                    apsi_core::api::ErrorKind::Error,
                    "internal error: a map worker panicked",
                )),
            };
            sh.st.lock().results.insert(k, r);
            sh.done.notify_all();
        }
    }));
}

impl Stream for ParMap {
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        self.refill(c);
        let k = self.next_out;
        if k == self.next_in {
            return match self.parent_err.take() {
                Some((_, e)) => Err(e),
                None => Ok(None),
            };
        }
        let mut st = self.sh.st.lock();
        loop {
            if let Some(r) = st.results.remove(&k) {
                drop(st);
                self.next_out += 1;
                return r.map(Some);
            }
            if st.queue.front().map(|j| j.0) == Some(k) {
                // Nobody has taken it yet: run it here.
                let x = st.queue.pop_front().map(|j| j.1).unwrap_or(Value::None);
                drop(st);
                self.next_out += 1;
                return call_item(c, &self.sh.f, &x).map(Some);
            }
            pool::blocking(|| self.sh.done.wait_for(&mut st, IDLE));
        }
    }
}

impl Drop for ParMap {
    fn drop(&mut self) {
        let mut st = self.sh.st.lock();
        st.closed = true;
        st.queue.clear();
        drop(st);
        self.sh.work.notify_all();
    }
}
