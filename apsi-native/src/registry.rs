//! Which function values are `@native` wrappers (so that native code can
//! call them directly), keyed by the identity of their `NativeFn`.

use crate::func::NativeFunc;
use apsi_core::api::NativeFn;
use parking_lot::Mutex;
use std::sync::{Arc, Weak};

type Entry = (Weak<NativeFn>, Arc<NativeFunc>);

static WRAPPERS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

pub fn add(f: &Arc<NativeFn>, nf: Arc<NativeFunc>) {
    let mut w = WRAPPERS.lock();
    w.retain(|(weak, _)| weak.strong_count() > 0);
    w.push((Arc::downgrade(f), nf));
}

pub fn lookup(f: &Arc<NativeFn>) -> Option<Arc<NativeFunc>> {
    let w = WRAPPERS.lock();
    w.iter()
        .find(|(weak, _)| weak.upgrade().is_some_and(|g| Arc::ptr_eq(&g, f)))
        .map(|(_, nf)| nf.clone())
}
