//! The channel core: a bounded multi-producer multi-consumer FIFO queue.
//!
//! Invariants (under the one mutex): `buf.len() <= cap`; once `closed`,
//! nothing is ever pushed again, and receivers drain what is left, then get
//! `None`. A sender waits on `not_full`, a receiver on `not_empty`; each
//! side is woken only when someone waits (the counters), so the fast path
//! is one uncontended lock.

use crate::sync::{lock, wait, Condvar, Mutex};
use std::collections::VecDeque;

struct State<T> {
    buf: VecDeque<T>,
    closed: bool,
    senders_waiting: usize,
    receivers_waiting: usize,
}

pub struct Chan<T> {
    st: Mutex<State<T>>,
    not_empty: Condvar,
    not_full: Condvar,
    cap: usize,
    /// `buf.len()` readable without the lock, for a receiver spinning
    /// before it sleeps (not modelled under loom: a hint only).
    #[cfg(not(loom))]
    hint_len: std::sync::atomic::AtomicUsize,
}

#[cfg(not(loom))]
const SPIN: u32 = 256;

/// `send` on a closed channel.
#[derive(Debug, PartialEq, Eq)]
pub struct Closed;

impl<T> Chan<T> {
    /// A channel holding at most `cap` (at least 1) items.
    pub fn new(cap: usize) -> Chan<T> {
        let cap = cap.max(1);
        Chan {
            st: Mutex::new(State {
                buf: VecDeque::with_capacity(cap.min(1024)),
                closed: false,
                senders_waiting: 0,
                receivers_waiting: 0,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            cap,
            #[cfg(not(loom))]
            hint_len: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Add `v`, waiting while the channel is full.
    pub fn send(&self, v: T) -> Result<(), Closed> {
        let mut g = lock(&self.st);
        loop {
            if g.closed {
                return Err(Closed);
            }
            if g.buf.len() < self.cap {
                g.buf.push_back(v);
                #[cfg(not(loom))]
                self.hint_len.store(g.buf.len(), crate::sync::Ordering::Release);
                if g.receivers_waiting > 0 {
                    self.not_empty.notify_one();
                }
                return Ok(());
            }
            g.senders_waiting += 1;
            g = wait(&self.not_full, g);
            g.senders_waiting -= 1;
        }
    }

    /// Take the oldest item, waiting while the channel is empty and open;
    /// `None` once it is closed and empty.
    pub fn recv(&self) -> Option<T> {
        let mut g = lock(&self.st);
        loop {
            if let Some(v) = g.buf.pop_front() {
                #[cfg(not(loom))]
                self.hint_len.store(g.buf.len(), crate::sync::Ordering::Release);
                if g.senders_waiting > 0 {
                    self.not_full.notify_one();
                }
                return Some(v);
            }
            if g.closed {
                return None;
            }
            // Empty: give a sender a moment before sleeping (a sleep and a
            // wake-up cost system calls on both sides).
            #[cfg(not(loom))]
            {
                drop(g);
                for i in 0..SPIN {
                    if i % 32 == 31 {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                    if self.hint_len.load(crate::sync::Ordering::Acquire) > 0 {
                        break;
                    }
                }
                g = lock(&self.st);
                if let Some(v) = g.buf.pop_front() {
                    self.hint_len.store(g.buf.len(), crate::sync::Ordering::Release);
                    if g.senders_waiting > 0 {
                        self.not_full.notify_one();
                    }
                    return Some(v);
                }
                if g.closed {
                    return None;
                }
            }
            g.receivers_waiting += 1;
            g = wait(&self.not_empty, g);
            g.receivers_waiting -= 1;
        }
    }

    /// Close: later sends fail; receivers drain what is left. Closing twice is fine.
    pub fn close(&self) {
        let mut g = lock(&self.st);
        g.closed = true;
        drop(g);
        self.not_empty.notify_all();
        self.not_full.notify_all();
    }

    pub fn len(&self) -> usize {
        lock(&self.st).buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_closed(&self) -> bool {
        lock(&self.st).closed
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_bounded_and_closed() {
        let c = Chan::new(2);
        c.send(1).unwrap();
        c.send(2).unwrap();
        assert_eq!(c.len(), 2);
        c.close();
        assert_eq!(c.send(3), Err(Closed));
        assert_eq!(c.recv(), Some(1));
        assert_eq!(c.recv(), Some(2));
        assert_eq!(c.recv(), None);
    }

    #[test]
    fn blocked_sender_resumes_when_space_frees() {
        let c = Arc::new(Chan::new(1));
        let c2 = c.clone();
        let h = std::thread::spawn(move || {
            for i in 0..1000 {
                c2.send(i).unwrap();
            }
            c2.close();
        });
        let mut sum = 0;
        while let Some(v) = c.recv() {
            sum += v;
        }
        h.join().unwrap();
        assert_eq!(sum, 999 * 1000 / 2);
    }
}
