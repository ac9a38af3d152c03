//! The cycle collector: struct instances that only reference cycles keep
//! alive are found and freed.
//!
//! Values are reference counted (`Arc`), which frees whatever a program
//! stops using except cycles: a `Variable` whose `constraints` list holds a
//! `Constraint` whose `output` is that `Variable` keeps both alive after the
//! program has let go of them, and a loop that builds such pairs grows
//! without bound. CPython finds that garbage with its cycle collector; this
//! is Apsi's, after the same idea (trial deletion).
//!
//! **What is tracked.** Struct instances that hold, or once held, in a field
//! a value that can lead back to an instance: another instance, a list,
//! tuple, dict, set, function or bound method ([`may_link`]). An instance of
//! numbers and strings only (`Point(x, y)`) is never tracked and costs
//! nothing. An instance is tracked when it is made with such a field
//! ([`adopt`]) or when such a value is stored into one of its fields
//! ([`note_store`]), and untracked when it is freed (`StructObj`'s `Drop`).
//! A write path that forgets to call them only means a cycle through that
//! instance is not collected (the memory stays, as before this collector);
//! it can never free anything alive.
//!
//! **A collection** runs at a loop back-edge of the dispatch loop, where no
//! container lock is held and every value the VM works with sits in a
//! counted register, and only in solo mode (`solo.rs`: one thread has ever
//! run Apsi code, so nothing runs beside it). Over the tracked instances:
//! 1. each gets its strong count;
//! 2. every reference a tracked instance holds to a tracked instance, in its
//!    fields or through containers that only it holds (a list, tuple, dict,
//!    set, function, cell, bound method or untracked instance whose count
//!    is 1: see [`edges`]), is subtracted from the target's;
//! 3. an instance with references left is held from outside (a register, a
//!    global, a shared container, a generator's frame, anything not
//!    traversed): it, and everything it reaches through the same edges, is
//!    alive;
//! 4. the rest is garbage, referred to only by other garbage: its fields are
//!    set to `none`, which drops the references that made the cycles, and
//!    reference counting frees the rest.
//!
//! **Why it is sound.** A reference is only subtracted where the traversal
//! has seen the field or item that holds it, so a target's count can only
//! go down by references that really come from the instances examined;
//! whatever holds a reference the traversal did not see keeps its target
//! (and all it reaches) alive. Nothing changes while a collection looks:
//! there is one thread, at a safe point, and a collection allocates no
//! Apsi values. The registry is only touched in solo mode, by that thread.
//!
//! **When.** Once the tracked instances are twice as many as a collection
//! left (and at least [`MIN_BATCH`] more): instances freed by their counts
//! leave the registry at once, so only survivors and cyclic garbage bring
//! the next collection nearer; each collection's work (proportional to the
//! tracked instances) is paid for by the growth that led to it, and garbage
//! never outgrows the live data by much.

use super::solo;
use super::{StructObj, Value};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// The fewest newly tracked instances between two collections. Small
/// enough that the garbage of a program whose live data is small stays in
/// the cache and in memory the allocator hands out again: at 10,000,
/// deltablue (a few hundred instances made and dropped in cycles per
/// round) peaked at 29 MB and faulted in fresh pages all along; at 2,500,
/// 12 MB and 4% less time (`bench/README.md`, stop 59). A program with
/// much live data is not collected more often for it: the next collection
/// waits for the tracked instances to double.
pub const MIN_BATCH: usize = 2_500;

/// Where a struct instance is in the registry (`StructObj::gc`), or
/// [`GcLink::UNTRACKED`].
pub struct GcLink(AtomicU32);

impl GcLink {
    const UNTRACKED: u32 = u32::MAX;

    pub const fn new() -> GcLink {
        GcLink(AtomicU32::new(GcLink::UNTRACKED))
    }

    #[inline(always)]
    fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    #[inline(always)]
    fn set(&self, i: u32) {
        self.0.store(i, Ordering::Relaxed)
    }

    #[inline(always)]
    pub(crate) fn is_tracked(&self) -> bool {
        self.get() != GcLink::UNTRACKED
    }
}

impl Default for GcLink {
    fn default() -> Self {
        GcLink::new()
    }
}

/// Can `v` lead (through what it holds) back to a struct instance?
#[inline(always)]
pub fn may_link(v: &Value) -> bool {
    matches!(
        v,
        Value::Struct(_)
            | Value::List(_)
            | Value::Tuple(_)
            | Value::Dict(_)
            | Value::Set(_)
            | Value::Func(_)
            | Value::BoundMethod(_)
    )
}

/// `v` was just stored into a field of `obj`: tracks `obj` if `v` can lead
/// back to it.
#[inline(always)]
pub fn note_store(obj: &Arc<StructObj>, v: &Value) {
    if may_link(v) && !obj.gc.is_tracked() {
        track(obj);
    }
}

/// `obj` was just made with a field that may lead back to an instance (the
/// maker checked while writing it): tracks it.
#[inline]
pub(crate) fn linked(obj: &Arc<StructObj>) {
    if !obj.gc.is_tracked() {
        track(obj);
    }
}

/// `obj` was just made: tracks it if a field can lead back to it.
#[inline]
pub fn adopt(obj: &Arc<StructObj>) {
    if !obj.gc.is_tracked() && obj.fields.read().iter().any(may_link) {
        track(obj);
    }
}

/// The tracked instances and when to collect them next. Touched only in
/// solo mode, by the one thread that runs Apsi code.
struct Registry {
    objs: Vec<*const StructObj>,
    /// Collect when this many instances are tracked.
    next_at: usize,
    collections: usize,
    freed: usize,
}

/// What the collector has done in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub collections: usize,
    /// Instances found unreachable and emptied.
    pub freed: usize,
    /// Instances tracked now.
    pub tracked: usize,
}

struct SoloCell(UnsafeCell<Registry>);

// SAFETY: the registry is only reached through `registry`, whose callers
// are in solo mode: one thread runs Apsi code and nothing else touches it.
unsafe impl Sync for SoloCell {}

static REGISTRY: SoloCell = SoloCell(UnsafeCell::new(Registry {
    objs: Vec::new(),
    next_at: MIN_BATCH,
    collections: 0,
    freed: 0,
}));

/// # Safety
/// Solo mode holds (`solo::on()`), and no other reference to the registry
/// is alive (no caller keeps one across code that may track or free an
/// instance).
#[allow(clippy::mut_from_ref)]
unsafe fn registry() -> &'static mut Registry {
    // SAFETY: the caller's.
    unsafe { &mut *REGISTRY.0.get() }
}

/// Takes an `Arc` so that every registry pointer is an `Arc`'s
/// (`Arc::as_ptr`), which a collection counts and holds through.
#[cold]
#[inline(never)]
fn track(obj: &Arc<StructObj>) {
    if !solo::on() {
        // Collections only run in solo mode, which never comes back once
        // it ends: tracking now would be for nothing.
        return;
    }
    // SAFETY: solo mode; the registry is not borrowed elsewhere (tracking
    // happens while a value is stored, never inside a collection's look).
    let r = unsafe { registry() };
    let Ok(i) = u32::try_from(r.objs.len()) else {
        return;
    };
    if i == GcLink::UNTRACKED {
        return;
    }
    r.objs.push(Arc::as_ptr(obj));
    obj.gc.set(i);
    // Asked once: the request waits for the next loop back-edge.
    if r.objs.len() == r.next_at {
        crate::interrupt::request_collection();
    }
}

/// `obj` is being freed: takes it out of the registry.
#[cold]
#[inline(never)]
pub(crate) fn untrack(obj: &StructObj) {
    if !solo::on() {
        // The registry is left as it is once solo mode has ended (nothing
        // reads it again).
        return;
    }
    // SAFETY: solo mode; a collection holds no borrow while values drop.
    let r = unsafe { registry() };
    let i = obj.gc.get() as usize;
    let me = obj as *const StructObj;
    if r.objs.get(i) != Some(&me) {
        return;
    }
    r.objs.swap_remove(i);
    if let Some(&moved) = r.objs.get(i) {
        // SAFETY: every pointer in the registry is a live instance's (an
        // instance leaves it before it is freed).
        unsafe { (*moved).gc.set(i as u32) };
    }
    obj.gc.set(GcLink::UNTRACKED);
}

/// What the collector has done so far in this process.
pub fn stats() -> Stats {
    if !solo::on() {
        return Stats::default();
    }
    // SAFETY: solo mode; only read here.
    let r = unsafe { registry() };
    Stats {
        collections: r.collections,
        freed: r.freed,
        tracked: r.objs.len(),
    }
}

/// The registry index of `a` when it is a tracked instance.
#[inline]
fn tracked_index(a: &Arc<StructObj>, objs: &[*const StructObj]) -> Option<usize> {
    let i = a.gc.get() as usize;
    (objs.get(i) == Some(&Arc::as_ptr(a))).then_some(i)
}

/// Is `a` the only reference to what it points to?
#[inline]
fn unique<T>(a: &Arc<T>) -> bool {
    Arc::strong_count(a) == 1
}

/// Calls `f` with the registry index of every tracked instance that
/// `start` refers to, once per reference: through its fields, and through
/// containers (and untracked instances) that only the field holding them
/// refers to, to any depth. `stack` is scratch room.
///
/// # Safety
/// Nothing mutates the instances or the containers reached while this
/// runs (a collection: solo mode at a safe point).
unsafe fn edges(start: &StructObj, objs: &[*const StructObj], stack: &mut Vec<*const Value>, mut f: impl FnMut(usize)) {
    // SAFETY (all `peek`s): the caller's; the pointers pushed point into
    // containers kept alive by `start`, which the caller keeps alive.
    unsafe {
        stack.clear();
        stack.extend(start.fields.peek().iter().map(|v| v as *const Value));
        while let Some(v) = stack.pop() {
            match &*v {
                Value::Struct(a) => match tracked_index(a, objs) {
                    Some(i) => f(i),
                    None if unique(a) => stack.extend(a.fields.peek().iter().map(|v| v as *const Value)),
                    None => {}
                },
                Value::List(l) if unique(l) => stack.extend(l.items.peek().iter().map(|v| v as *const Value)),
                Value::Tuple(t) if unique(t) => stack.extend(t.0.iter().map(|v| v as *const Value)),
                Value::Dict(d) if unique(d) => {
                    for (k, x) in d.map.peek().iter() {
                        stack.push(k.value());
                        stack.push(x);
                    }
                }
                Value::Set(s) if unique(s) => stack.extend(s.map.peek().keys().map(|k| k.value() as *const Value)),
                Value::Func(c) if unique(c) => {
                    stack.extend(c.defaults.iter().map(|v| v as *const Value));
                    stack.extend(c.kwdefaults.iter().flatten().map(|v| v as *const Value));
                    for cell in c.free.iter() {
                        if unique(cell) {
                            stack.push(cell.peek());
                        }
                    }
                }
                Value::BoundMethod(m) if unique(m) => {
                    stack.push(&m.receiver);
                    stack.push(&m.func);
                }
                _ => {}
            }
        }
    }
}

/// The strong count of the instance `p` points to.
///
/// # Safety
/// `p` is a live instance's (`Arc::as_ptr`).
unsafe fn count_of(p: *const StructObj) -> usize {
    // SAFETY: the caller's; the `Arc` made here is never dropped.
    let a = std::mem::ManuallyDrop::new(unsafe { Arc::from_raw(p) });
    Arc::strong_count(&a)
}

/// The tracked instances no reference from outside reaches (steps 1–3 of
/// the module docs), each with one more strong reference for the caller.
///
/// # Safety
/// Solo mode at a safe point (see [`collect`]).
unsafe fn find_garbage() -> Vec<*const StructObj> {
    // SAFETY: the caller's; this borrow ends before anything is freed.
    let objs: &[*const StructObj] = unsafe { &registry().objs };
    let n = objs.len();
    let mut stack = Vec::new();
    // SAFETY (below): every registry pointer is a live instance's, and
    // nothing changes during the look (the caller's).
    let mut refs: Vec<isize> = objs.iter().map(|&p| unsafe { count_of(p) } as isize).collect();
    for &p in objs {
        unsafe { edges(&*p, objs, &mut stack, |j| refs[j] -= 1) };
    }
    let mut alive = vec![false; n];
    let mut work: Vec<usize> = Vec::new();
    for (i, r) in refs.iter().enumerate() {
        if *r > 0 {
            alive[i] = true;
            work.push(i);
        }
    }
    while let Some(i) = work.pop() {
        unsafe {
            edges(&*objs[i], objs, &mut stack, |j| {
                if !alive[j] {
                    alive[j] = true;
                    work.push(j);
                }
            })
        };
    }
    let garbage: Vec<*const StructObj> = (0..n).filter(|&i| !alive[i]).map(|i| objs[i]).collect();
    for &p in &garbage {
        // SAFETY: a live instance's pointer; the caller gives this back.
        unsafe { Arc::increment_strong_count(p) };
    }
    garbage
}

/// Runs a collection if this process may (solo mode); called at a safe
/// point of the dispatch loop: no container lock held, every value in use
/// in a counted place.
pub(crate) fn collect() {
    if !solo::on() {
        return;
    }
    // SAFETY: solo mode at a safe point (the caller's).
    let garbage = unsafe { find_garbage() };
    // Empty every garbage instance before anything is dropped, so each is
    // still whole while the others are emptied; then let the counts work.
    let mut dropped: Vec<Value> = Vec::new();
    for &p in &garbage {
        // SAFETY: held alive by the reference `find_garbage` added.
        let obj = unsafe { &*p };
        for slot in obj.fields.write().iter_mut() {
            dropped.push(std::mem::replace(slot, Value::None));
        }
    }
    drop(dropped);
    for &p in &garbage {
        // SAFETY: gives back the reference `find_garbage` added.
        unsafe { Arc::decrement_strong_count(p) };
    }
    // SAFETY: solo mode; nothing else borrows the registry now.
    let r = unsafe { registry() };
    r.next_at = r.objs.len() + r.objs.len().max(MIN_BATCH);
    r.collections += 1;
    r.freed += garbage.len();
}
