//! The executor's side of `ops::reentry`: how Apsi code reached from an
//! operation (a struct's `__eq__` called by a dict lookup) runs.
//!
//! Each thread that runs Apsi code records its runtime here when an
//! executor starts running (`Executor::call_value`). A call takes a spare
//! executor of that runtime from a per-thread pool (making one when the
//! pool is empty), runs the function to completion on it, and puts it back.
//!
//! Invariants:
//! - The executor that is running never lends itself: a spare is always
//!   another executor with its own stack, so no register of the running
//!   frame can be touched by the nested call.
//! - Spares are made with `Executor::nested`, which registers no new
//!   `Participant`: they run on the thread that already is one, so the
//!   single-thread lock-free mode of `VLock` is kept.
//! - Nesting is bounded ([`MAX_DEPTH`]): `__eq__` calling `==` on itself
//!   raises `RecursionError` instead of exhausting the Rust stack.

use super::exec::Executor;
use super::shared::Shared;
use crate::error::ErrorKind;
use crate::value::{err, Caller, Kwargs, VResult, Value};
use std::cell::RefCell;
use std::sync::Arc;

/// How deeply operator methods may nest through Rust code.
pub const MAX_DEPTH: usize = 200;

thread_local! {
    static RUNTIME: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
    static NEST: RefCell<Nest> = const { RefCell::new(Nest { depth: 0, spares: Vec::new() }) };
}

/// This thread's nested calls: how deep they go now, and the executors
/// not in use. One thread-local for both: a call reaches it twice (taking
/// a spare, putting it back), each time once.
struct Nest {
    depth: usize,
    // Boxed: a call takes a spare out and puts it back, and an executor is
    // a few hundred bytes that would be copied both ways.
    #[allow(clippy::vec_box)]
    spares: Vec<Box<Executor>>,
}

/// Record that this thread runs code of `shared` (cheap when unchanged).
#[inline]
pub(crate) fn install(shared: &Arc<Shared>) {
    RUNTIME.with(|r| {
        let same = matches!(&*r.borrow(), Some(cur) if Arc::ptr_eq(cur, shared));
        if !same {
            crate::ops::reentry::set_hook(crate::ops::reentry::ReentryHook { call, write_out });
            *r.borrow_mut() = Some(shared.clone());
            NEST.with(|n| n.borrow_mut().spares.clear());
        }
    });
}

/// Call `f(*args, **kwargs)` on a spare executor of this thread's runtime.
pub fn call(f: &Value, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
    let spare = NEST.with(|n| {
        let mut n = n.borrow_mut();
        if n.depth >= MAX_DEPTH {
            return Err(err(
                ErrorKind::RecursionError,
                "maximum recursion depth exceeded (through operator methods)",
            ));
        }
        n.depth += 1;
        Ok(n.spares.pop())
    })?;
    let leave = |ex: Option<Box<Executor>>| {
        NEST.with(|n| {
            let mut n = n.borrow_mut();
            n.depth -= 1;
            n.spares.extend(ex);
        })
    };
    let mut ex = match spare {
        Some(e) => e,
        None => {
            let shared = RUNTIME.with(|r| r.borrow().clone());
            match shared {
                Some(sh) => Box::new(Executor::nested(sh)),
                None => {
                    leave(None);
                    // No interpreter on this thread: natives only.
                    return crate::ops::NoCaller.call(f, args, kwargs);
                }
            }
        }
    };
    // The runtime is this thread's already (a spare is only ever made for it).
    let r = ex.call_installed(f, args, kwargs);
    leave(Some(ex));
    r
}

/// Print through this thread's runtime (for [`crate::ops::reentry::Reentrant`]).
fn write_out(text: &str) -> VResult<()> {
    let shared = RUNTIME.with(|r| r.borrow().clone());
    match shared {
        Some(sh) => sh.write_out(text),
        None => Err(err(ErrorKind::IOError, "this operation cannot print")),
    }
}
