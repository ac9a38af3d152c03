//! Generator values (LANGUAGE.md §10.5): what calling a generator
//! function (a `def` whose body holds `yield`) or evaluating a generator
//! expression returns.
//!
//! A generator is a `Value::Object` holding a [`GenObj`]: the closure, and
//! behind a lock the state of its one frame while it is not running — the
//! register file, the pc to resume at, the frame's own cells and its
//! exception handlers. `Executor::resume_generator` (`vm/exec/resume.rs`)
//! moves that state onto the executor's stacks, runs the dispatch loop
//! until the frame yields (`Instr::Yield`) or ends, and moves it back.
//!
//! Invariants:
//! - The lock (a `VLock`: free while one thread runs Apsi code) is held
//!   only to change state, never while Apsi code runs, so
//!   a generator may be passed between threads; resuming one that is
//!   running (on another thread, or from inside itself) raises
//!   `ValueError: generator already executing`.
//! - A generator that returned or raised is `Done` for good: every later
//!   step ends at once (no value).
//! - While suspended, `SavedFrame::regs` has exactly `nregs` entries; while
//!   running it is empty (the values are in the executor's stack window).

use super::function::{Cell, Closure};
use super::vlock::VLock;
use super::{ApsiObject, Exc, Value};
use crate::error::ErrorKind;
use std::sync::Arc;

/// One step of an iterator.
pub enum Step {
    /// The next item (a generator yielded it).
    Item(Value),
    /// Exhausted; a generator's return value (none otherwise).
    Done(Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GenStatus {
    /// Made, not started: the registers hold the bound arguments.
    Created,
    Suspended,
    Running,
    Done,
}

/// The frame of a generator that is not running.
#[derive(Default)]
pub(crate) struct SavedFrame {
    pub regs: Vec<Value>,
    pub pc: u32,
    pub cells: Vec<Arc<Cell>>,
    /// (target, error register) of each open `try`, outermost first.
    pub handlers: Vec<(u32, u16)>,
}

pub(crate) struct GenState {
    pub status: GenStatus,
    pub frame: SavedFrame,
    /// Delegation (`yield from`, see `vm/exec/resume.rs`): while this
    /// generator is suspended in a `yield from` over another generator,
    /// which waits in one over another…, the generators below it, outermost
    /// first, as far as a step of this one last followed them. A step runs
    /// the last one's frame directly. A cache: each generator's own saved
    /// frame says what it waits on, and the chain is checked against that
    /// where it could have changed. Empty while this generator runs.
    pub chain: Vec<Value>,
}

/// A generator: see the module documentation.
pub struct GenObj {
    pub(crate) func: Arc<Closure>,
    /// Its code has a `yield from` loop (`Code::has_yield_from`).
    pub(crate) may_delegate: bool,
    pub(crate) state: VLock<GenState>,
}

impl GenObj {
    /// A generator for `func` (a generator function) whose parameter
    /// registers hold the bound arguments `slots`.
    pub(crate) fn new_value(func: Arc<Closure>, slots: impl IntoIterator<Item = Value>) -> Value {
        let nregs = func.proto.code.nregs as usize;
        let mut regs: Vec<Value> = Vec::with_capacity(nregs);
        regs.extend(slots);
        while regs.len() < nregs {
            regs.push(Value::Unbound);
        }
        let g = GenObj {
            may_delegate: func.proto.code.has_yield_from,
            func,
            state: VLock::new(GenState {
                status: GenStatus::Created,
                frame: SavedFrame {
                    regs,
                    ..SavedFrame::default()
                },
                chain: Vec::new(),
            }),
        };
        Value::Object(Arc::new(super::ObjBox(Box::new(g))))
    }

    /// A call of the generator function `func` with exactly its positional
    /// parameters, when it has no others (no `*args`, keyword-only
    /// parameters, `**kwargs` nor checked annotations): the generator,
    /// with nothing to bind beyond copying the arguments in. `None` for
    /// any other function or call, which `bind_args` handles.
    #[inline]
    pub(crate) fn call_plain(func: &Arc<Closure>, args: &[Value]) -> Option<Value> {
        let p = &func.proto;
        let plain = p.generator
            && !p.has_vararg
            && p.nkwonly == 0
            && !p.has_kwarg
            && p.checks.is_empty()
            && args.len() == p.nparams as usize;
        plain.then(|| GenObj::new_value(func.clone(), args.iter().cloned()))
    }

    /// The generator function's name.
    pub fn name(&self) -> &str {
        &self.func.name
    }

    /// The generator inside `v`, if it is one.
    #[inline]
    pub fn of(v: &Value) -> Option<&GenObj> {
        match v {
            Value::Object(o) => o.0.as_generator(),
            _ => None,
        }
    }
}

/// `ValueError: generator already executing`.
pub(crate) fn already_executing() -> Exc {
    super::err(ErrorKind::ValueError, "generator already executing")
}

impl ApsiObject for GenObj {
    fn type_name(&self) -> &str {
        "generator"
    }
    fn to_str(&self) -> String {
        format!("<generator {}>", self.func.name)
    }
    fn hashable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_generator(&self) -> Option<&GenObj> {
        Some(self)
    }
}
