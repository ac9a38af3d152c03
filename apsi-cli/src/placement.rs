//! Where the interpreter's thread starts: on another processor than the
//! process's first thread, which meanwhile reads and verifies the cached
//! program (`cache::look_ahead`).
//!
//! Linux often queues a new thread on the processor of the thread that
//! made it, even with another one idle, and moves it only later: in about
//! half of the cached starts of a 5,000-line program measured on a 2-core
//! VM, the interpreter's thread waited 0.3 ms behind the first thread's
//! look-ahead on one processor while the other stayed idle, so the work
//! meant to overlap ran one part after the other. So the first thread,
//! right after starting the interpreter's, narrows that thread's processors
//! to all it may use but the first thread's own, which moves it at once;
//! the interpreter's thread, as its first act, takes back the whole set,
//! so the threads it starts later (pools, tasks) may use every processor.
//!
//! The set is handed over through a channel the interpreter's thread waits
//! on, so it never takes the set back before it was narrowed. Where the
//! process may use a single processor, or the calls fail, nothing changes.

use std::sync::mpsc;

/// The first thread's side: [`Handoff::place`] once the thread is started.
pub struct Handoff {
    tx: mpsc::Sender<Option<Processors>>,
}

/// The interpreter's thread's side: [`Apart::settle`] first thing.
pub struct Apart {
    rx: mpsc::Receiver<Option<Processors>>,
}

/// The processors a thread may run on.
#[cfg(target_os = "linux")]
type Processors = libc::cpu_set_t;
#[cfg(not(target_os = "linux"))]
type Processors = ();

/// The two sides, made before the thread is started.
pub fn pair() -> (Handoff, Apart) {
    let (tx, rx) = mpsc::channel();
    (Handoff { tx }, Apart { rx })
}

impl Handoff {
    /// Moves `thread` off this thread's processor, and lets it go on.
    #[cfg(target_os = "linux")]
    pub fn place(self, thread: &std::thread::JoinHandle<u8>) {
        use std::os::unix::thread::JoinHandleExt;
        let whole = away_from_here(thread.as_pthread_t());
        let _ = self.tx.send(whole);
    }

    #[cfg(not(target_os = "linux"))]
    pub fn place(self, _thread: &std::thread::JoinHandle<u8>) {
        let _ = self.tx.send(None);
    }
}

impl Apart {
    /// Waits until the first thread has placed this one, then takes back
    /// every processor the process may use.
    pub fn settle(self) {
        #[cfg(target_os = "linux")]
        if let Ok(Some(whole)) = self.rx.recv() {
            // SAFETY: a valid set for this thread (0 is the calling thread).
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &whole) };
        }
        #[cfg(not(target_os = "linux"))]
        let _ = self.rx.recv();
    }
}

/// Narrows `thread` to this thread's processors but the one this thread
/// runs on; the whole set, to give back later, or `None` when nothing was
/// narrowed.
#[cfg(target_os = "linux")]
fn away_from_here(thread: libc::pthread_t) -> Option<libc::cpu_set_t> {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: plain libc calls on local, initialised sets; `thread` is a
    // started thread that has not been joined (its handle is borrowed).
    unsafe {
        let mut whole: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut whole) != 0 {
            return None;
        }
        let here = usize::try_from(libc::sched_getcpu()).ok()?;
        if here >= 8 * size || !libc::CPU_ISSET(here, &whole) || libc::CPU_COUNT(&whole) < 2 {
            return None;
        }
        let mut others = whole;
        libc::CPU_CLR(here, &mut others);
        (libc::pthread_setaffinity_np(thread, size, &others) == 0).then_some(whole)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placed_thread_ends_with_every_processor_it_started_with() {
        #[cfg(target_os = "linux")]
        let before = unsafe {
            let mut s: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut s),
                0
            );
            libc::CPU_COUNT(&s)
        };
        let (handoff, apart) = pair();
        let t = std::thread::spawn(move || {
            apart.settle();
            #[cfg(target_os = "linux")]
            // SAFETY: as above.
            unsafe {
                let mut s: libc::cpu_set_t = std::mem::zeroed();
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut s);
                return u8::try_from(libc::CPU_COUNT(&s)).unwrap_or(u8::MAX);
            }
            #[allow(unreachable_code)]
            0
        });
        handoff.place(&t);
        let after = t.join().unwrap();
        #[cfg(target_os = "linux")]
        assert_eq!(i32::from(after), before.min(255));
        let _ = after;
    }
}
