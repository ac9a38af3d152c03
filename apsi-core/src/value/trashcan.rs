//! Freeing deep structures without deep recursion.
//!
//! Freeing a value frees what it alone held, and so on down: the last
//! reference to the head of a 6,000,000-node linked list (`head = none`)
//! used to free the whole chain recursively, one Rust frame per node, and
//! overflowed the interpreter thread's stack (an abort, not an error).
//! CPython has the same problem and solves it with its "trashcan": past a
//! certain depth, containers being freed are put aside and freed later, at
//! the top, in a loop. This is that, for struct instances, lists, tuples,
//! dicts, sets, closure cells and bound methods (what deep structures are
//! made of: linked nodes, nested lists and dicts, `(head, rest)` cons cells,
//! closures capturing closures).
//!
//! A container being freed hands its items to [`release`]. Below
//! [`MAX_DEPTH`] nested releases on this thread they are dropped at once
//! (the recursion that was always there, bounded now); at that depth they
//! are put on this thread's list instead, and the outermost release frees
//! that list, batch by batch, each batch again at most [`MAX_DEPTH`] deep.
//! Only the order in which memory is freed changes: nothing observable runs
//! when a value is freed (there is no `__del__`).

use super::Value;
use std::cell::{Cell, RefCell};

/// How many releases may nest before items are put aside: about 150 bytes
/// of stack each, far below any thread's stack.
pub const MAX_DEPTH: u32 = 1_000;

struct State {
    depth: Cell<u32>,
    later: RefCell<Vec<Value>>,
}

thread_local! {
    static STATE: State = const {
        State {
            depth: Cell::new(0),
            later: RefCell::new(Vec::new()),
        }
    };
}

/// What the items of a container being freed own.
pub(crate) enum Holds {
    /// Nothing: numbers, `none`, shared one-character strings.
    Nothing,
    /// Strings, and containers that others hold too (dropping them only
    /// lowers their counts), but nothing that dropping frees in turn.
    Leaves,
    /// A container that only this one holds ([`frees_nested`]): dropping
    /// it frees it, and what it holds in turn.
    Containers,
}

/// One pass over a container's items.
#[inline]
pub(crate) fn holdings(items: &[Value]) -> Holds {
    let mut owns = false;
    for v in items {
        match v {
            Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Unbound | Value::Kind(_) => {}
            Value::Str(s) if s.is_immortal() => {}
            v if frees_nested(v) => return Holds::Containers,
            _ => owns = true,
        }
    }
    if owns {
        Holds::Leaves
    } else {
        Holds::Nothing
    }
}

/// Would dropping `v` now free a container, and so whatever it holds in
/// turn (a container this reference alone holds)?
#[inline(always)]
pub(crate) fn frees_nested(v: &Value) -> bool {
    use std::sync::Arc;
    match v {
        Value::Struct(a) => Arc::strong_count(a) == 1,
        Value::List(a) => Arc::strong_count(a) == 1,
        Value::Tuple(a) => Arc::strong_count(a) == 1,
        Value::Dict(a) => Arc::strong_count(a) == 1,
        Value::Set(a) => Arc::strong_count(a) == 1,
        Value::Func(a) => Arc::strong_count(a) == 1,
        Value::BoundMethod(a) => Arc::strong_count(a) == 1,
        Value::Error(a) => Arc::strong_count(a) == 1,
        Value::Object(a) => Arc::strong_count(a) == 1,
        _ => false,
    }
}

/// Drops the items of a container that is being freed, never more than
/// [`MAX_DEPTH`] releases deep on this thread (module docs).
pub(crate) fn release<I: IntoIterator<Item = Value>>(items: I) {
    match enter() {
        Enter::Here(depth) => {
            drop(items);
            leave(depth);
        }
        Enter::Aside => put_aside(items),
    }
}

/// Drops a small container's items in place, one pass: each as it comes,
/// until one is a container that only this one holds (dropping it would
/// free it, and what it holds in turn); that one and the rest go through
/// [`MAX_DEPTH`]-bounded release. Leaves `items` empty.
#[inline]
pub(crate) fn drop_items<A: smallvec::Array<Item = Value>>(items: &mut smallvec::SmallVec<A>) {
    let n = items.len();
    let p = items.as_mut_ptr();
    // SAFETY: the length is cleared first, so each item is dropped here
    // once (in place, or read out by `release_raw`) and never again.
    unsafe {
        items.set_len(0);
        for i in 0..n {
            let v = p.add(i);
            if frees_nested(&*v) {
                release_raw(v, n - i);
                return;
            }
            std::ptr::drop_in_place(v);
        }
    }
}

/// Drops `n` values from `p` on (which nothing else will drop), at most
/// [`MAX_DEPTH`] releases deep.
///
/// # Safety
/// The `n` values at `p` are valid and owned by the caller, who treats them
/// as gone after this.
#[cold]
unsafe fn release_raw(p: *mut Value, n: usize) {
    match enter() {
        Enter::Here(depth) => {
            // SAFETY: the caller's.
            unsafe { std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(p, n)) };
            leave(depth);
        }
        // SAFETY: the caller's; each value is read out once.
        Enter::Aside => put_aside((0..n).map(|i| unsafe { std::ptr::read(p.add(i)) })),
    }
}

/// Drops a list's items in place (the list is being freed), at most
/// [`MAX_DEPTH`] releases deep; leaves it empty.
pub(crate) fn release_list(items: &mut Vec<Value>) {
    let n = items.len();
    // SAFETY: the length is cleared first, so the items are dropped (or
    // read out) once, by `release_raw`; the buffer stays the vector's.
    unsafe {
        items.set_len(0);
        release_raw(items.as_mut_ptr(), n);
    }
}

enum Enter {
    /// Drop here, one release deeper than `depth`; then [`leave`].
    Here(u32),
    /// Too deep: put the items aside.
    Aside,
}

#[inline]
fn enter() -> Enter {
    STATE
        .try_with(|s| {
            let depth = s.depth.get();
            if depth >= MAX_DEPTH {
                return Enter::Aside;
            }
            s.depth.set(depth + 1);
            Enter::Here(depth)
        })
        // This thread's state is gone (it is exiting): drop as before.
        .unwrap_or(Enter::Here(u32::MAX))
}

#[inline]
fn leave(depth: u32) {
    if depth == u32::MAX {
        return;
    }
    let _ = STATE.try_with(|s| {
        s.depth.set(depth);
        if depth == 0 && s.later.try_borrow().is_ok_and(|l| !l.is_empty()) {
            free_later(s);
        }
    });
}

/// Moves items onto this thread's list, to be freed at the top.
#[cold]
fn put_aside<I: IntoIterator<Item = Value>>(items: I) {
    let mut items = Some(items);
    let _ = STATE.try_with(|s| {
        if let Ok(mut later) = s.later.try_borrow_mut() {
            // Moving values drops nothing.
            later.extend(items.take().into_iter().flatten());
        }
    });
    drop(items);
}

/// Releases the keys and values of a dict or set that is being freed.
pub(crate) fn release_map(map: &mut super::dict::DictMap) {
    if map.iter().any(|(k, v)| frees_nested(k.value()) || frees_nested(v)) {
        release(std::mem::take(map).into_iter().flat_map(|(k, v)| [k.into_value(), v]));
    }
}

/// Frees what deep releases put aside, at the top of the outermost one.
#[cold]
fn free_later(s: &State) {
    loop {
        let batch = match s.later.try_borrow_mut() {
            Ok(mut later) if !later.is_empty() => std::mem::take(&mut *later),
            _ => return,
        };
        s.depth.set(1);
        drop(batch);
        s.depth.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::dict::DictMap;
    use crate::value::{BoundMethod, HashKey, StructObj, StructType};
    use std::sync::Arc;

    /// Makes a container around a value.
    type Wrap = Box<dyn Fn(Value) -> Value + Send>;

    /// `n` values, each holding the one made before it through `wrap`.
    fn chain(n: usize, wrap: &dyn Fn(Value) -> Value) -> Value {
        let mut v = Value::None;
        for _ in 0..n {
            v = wrap(v);
        }
        v
    }

    /// A chain a million deep of each container, freed on a thread with a
    /// 4 MiB stack: freed recursively, each would need hundreds of MiB.
    #[test]
    fn deep_chains_are_freed_without_deep_recursion() {
        let ty = Arc::new(StructType::plain(
            "Node",
            vec![crate::value::StructField {
                name: "next".into(),
                default: None,
                annotation: None,
            }],
            Default::default(),
        ));
        let wraps: Vec<(&str, Wrap)> = vec![
            ("list", Box::new(|v| Value::list(vec![v, Value::Int(1)]))),
            ("tuple", Box::new(|v| Value::tuple(vec![Value::Int(1), v]))),
            (
                "dict",
                Box::new(|v| {
                    let mut m = DictMap::new();
                    m.insert(HashKey::int(0), v);
                    Value::dict(m)
                }),
            ),
            (
                "struct",
                Box::new(move |v| Value::Struct(StructObj::new(ty.clone(), vec![v].into()))),
            ),
            (
                "bound method",
                Box::new(|v| {
                    Value::BoundMethod(Arc::new(BoundMethod {
                        receiver: v,
                        func: Value::None,
                    }))
                }),
            ),
        ];
        std::thread::Builder::new()
            .stack_size(4 << 20)
            .spawn(move || {
                for (name, wrap) in &wraps {
                    drop(chain(1_000_000, &**wrap));
                    STATE.with(|s| {
                        assert_eq!(s.depth.get(), 0, "{name}");
                        assert!(s.later.borrow().is_empty(), "{name}");
                    });
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
