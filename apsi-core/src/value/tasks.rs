//! What a runtime knows about the tasks its program spawned: how many still
//! run (the program ends only after them) and which failed without anyone
//! waiting for them (reported at exit, never lost silently).

use crate::value::Exc;
use parking_lot::{Condvar, Mutex};

#[derive(Default)]
struct State {
    next_id: u64,
    running: usize,
    /// Failures nobody has waited for yet, in the order they happened.
    unobserved: Vec<(u64, Exc)>,
}

/// One per runtime; shared by every thread running its code.
#[derive(Default)]
pub struct TaskRegistry {
    st: Mutex<State>,
    idle: Condvar,
}

impl TaskRegistry {
    pub fn new() -> TaskRegistry {
        TaskRegistry::default()
    }

    /// A task was spawned: its id.
    pub fn started(&self) -> u64 {
        let mut st = self.st.lock();
        st.next_id += 1;
        st.running += 1;
        st.next_id
    }

    /// Task `id` ended, failing with `failure` if any.
    pub fn finished(&self, id: u64, failure: Option<Exc>) {
        let mut st = self.st.lock();
        if let Some(e) = failure {
            st.unobserved.push((id, e));
        }
        st.running = st.running.saturating_sub(1);
        if st.running == 0 {
            self.idle.notify_all();
        }
    }

    /// Someone waited for task `id`: its failure (if any) was seen.
    pub fn observed(&self, id: u64) {
        self.st.lock().unobserved.retain(|(i, _)| *i != id);
    }

    /// Tasks still running.
    pub fn running(&self) -> usize {
        self.st.lock().running
    }

    /// Wait until no task runs, then take the failures nobody waited for.
    /// (A pool thread calls it inside `par::pool::blocking`.)
    pub fn finish(&self) -> Vec<Exc> {
        let mut st = self.st.lock();
        while st.running > 0 {
            self.idle.wait(&mut st);
        }
        std::mem::take(&mut st.unobserved).into_iter().map(|(_, e)| e).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::value::err;

    #[test]
    fn observed_failures_are_not_reported() {
        let r = TaskRegistry::new();
        let a = r.started();
        let b = r.started();
        r.finished(a, Some(err(ErrorKind::ValueError, "a")));
        r.finished(b, Some(err(ErrorKind::ValueError, "b")));
        r.observed(a);
        let left = r.finish();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].message, "b");
        assert_eq!(r.running(), 0);
    }
}
