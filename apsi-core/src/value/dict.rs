//! The table behind Apsi's `dict`: insertion-ordered, open addressing.
//!
//! The layout is CPython's compact dict: `entries` holds `(hash, key, value)`
//! in insertion order, and `slots` is a power-of-two table of 4-byte indices
//! into `entries`, probed as CPython probes (see `hash_key`). A lookup touches
//! one slot (random) and one entry; 4-byte slots keep the random part small
//! (1M keys: an 8 MiB table that stays in the last-level cache), which is what
//! large dicts are bound by. Removal leaves a hole in `entries` and a
//! tombstone in `slots`; both are swept when the table is rebuilt.
//!
//! Invariants:
//! - `slots.len()` is a power of two (or 0 before the first insert), and
//!   `used` (live + tombstone slots) stays at most 5/8 of it, so every probe
//!   sequence reaches an empty slot.
//! - Every live entry has exactly one slot pointing at it; holes (removed
//!   entries, `key == None`) have none.
//! - `len` counts live entries.

use super::{HashKey, Value};
use std::hash::{Hash, Hasher};

/// A slot holds an entry index plus one; 0 is an empty slot, so a new table
/// is zeroed memory (fresh pages from the OS, no fill pass).
const EMPTY: u32 = 0;
const DELETED: u32 = u32::MAX;

#[derive(Clone)]
pub struct Entry {
    hash: u64,
    /// `None` for a removed entry (a hole kept until the next rebuild).
    key: Option<HashKey>,
    value: Value,
}

/// An insertion-ordered map from hashable values to values.
#[derive(Clone, Default)]
pub struct DictMap {
    entries: Vec<Entry>,
    slots: Vec<u32>,
    len: usize,
    used: usize,
}

/// The hash of a key. Numbers hash to their integer value, as in CPython
/// (`1`, `1.0` and `true` are one key), so keys inserted and looked up in a
/// regular order touch the table in a regular order too; everything else is
/// Fx over the key's `Hash`, mixed so the low bits (which pick the first
/// slot) depend on every input bit. Probing brings in the high bits
/// (`perturb`), so keys that differ only there do not pile up.
#[inline]
fn hash_key(k: &HashKey) -> u64 {
    match k.value() {
        Value::Int(i) => hash_int(*i),
        Value::Bool(b) => *b as u64,
        Value::Float(f) if f.fract() == 0.0 && *f >= -9.2e18 && *f <= 9.2e18 => hash_int(*f as i64),
        // The string's cached hash (computed once per string object).
        Value::Str(s) => hash_str(s),
        _ => {
            let mut h = rustc_hash::FxHasher::default();
            k.hash(&mut h);
            let m = (h.finish() ^ (h.finish() >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            m ^ (m >> 32)
        }
    }
}

/// A string key's hash, from the string's cached hash.
#[inline(always)]
fn hash_str(s: &super::StrObj) -> u64 {
    let m = (s.hash32() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    m ^ (m >> 32)
}

#[inline(always)]
fn hash_int(i: i64) -> u64 {
    i as u64
}

/// The probe sequence of CPython's dict: every slot is reached in the end.
#[inline(always)]
fn next_slot(pos: usize, perturb: &mut u64) -> usize {
    *perturb >>= 5;
    pos.wrapping_mul(5).wrapping_add(*perturb as usize).wrapping_add(1)
}

impl DictMap {
    pub fn new() -> DictMap {
        DictMap::default()
    }

    pub fn with_capacity(n: usize) -> DictMap {
        let mut d = DictMap {
            entries: Vec::with_capacity(n),
            ..DictMap::default()
        };
        if n > 0 {
            d.rebuild(slots_for(n));
        }
        d
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entry index holding a key equal to `key` whose hash is `h`.
    #[inline(always)]
    fn find(&self, h: u64, mut eq: impl FnMut(&HashKey) -> bool) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut pos = h as usize & mask;
        let mut perturb = h;
        loop {
            // Plain indexing: `pos & mask` is always in range.
            let s = self.slots[pos & mask];
            if s == EMPTY {
                return None;
            }
            if s != DELETED {
                let i = s as usize - 1;
                if let Some(e) = self.entries.get(i) {
                    if e.hash == h {
                        if let Some(k) = &e.key {
                            if eq(k) {
                                return Some(i);
                            }
                        }
                    }
                }
            }
            pos = next_slot(pos & mask, &mut perturb);
        }
    }

    #[inline]
    pub fn get(&self, key: &HashKey) -> Option<&Value> {
        if let Value::Int(i) = key.value() {
            return self.get_int(*i);
        }
        let h = hash_key(key);
        self.find(h, |k| k == key)
            .and_then(|i| self.entries.get(i))
            .map(|e| &e.value)
    }

    /// `get` for an int key, without building a `HashKey`.
    #[inline]
    pub fn get_int(&self, i: i64) -> Option<&Value> {
        let h = hash_int(i);
        self.find(h, |k| match k.value() {
            Value::Int(j) => *j == i,
            other => super::key_eq(other, &Value::Int(i)),
        })
        .and_then(|ix| self.entries.get(ix))
        .map(|e| &e.value)
    }

    /// `get` for a string key, without building a `HashKey`: the string's
    /// cached hash, then identity or equal bytes (only a string equals a
    /// string).
    #[inline]
    pub fn get_str(&self, s: &super::StrRef) -> Option<&Value> {
        self.find_str(s).and_then(|ix| self.entries.get(ix)).map(|e| &e.value)
    }

    /// `get_mut` for a string key already in the dict (see `get_str`).
    #[inline]
    pub fn get_mut_str(&mut self, s: &super::StrRef) -> Option<&mut Value> {
        let ix = self.find_str(s)?;
        self.entries.get_mut(ix).map(|e| &mut e.value)
    }

    #[inline(always)]
    fn find_str(&self, s: &super::StrRef) -> Option<usize> {
        self.find(hash_str(s), |k| match k.value() {
            Value::Str(t) => super::StrRef::ptr_eq(t, s) || t.text_eq(s),
            _ => false,
        })
    }

    /// `get` for a string or int key given as a plain value, by the
    /// string's cached hash or the int itself (no `HashKey`): `None` for any
    /// other key, which needs the general path (a struct's `__hash__`).
    #[inline]
    pub fn get_plain(&self, key: &Value) -> Option<Option<&Value>> {
        match key {
            Value::Str(k) => Some(self.get_str(k)),
            Value::Int(k) => Some(self.get_int(*k)),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, key: &HashKey) -> Option<&mut Value> {
        let h = hash_key(key);
        let i = self.find(h, |k| k == key)?;
        self.entries.get_mut(i).map(|e| &mut e.value)
    }

    pub fn contains_key(&self, key: &HashKey) -> bool {
        self.get(key).is_some()
    }

    /// Insert or replace; returns the value that was there. A replaced key
    /// keeps its place in the order (and its original key object, as Python).
    pub fn insert(&mut self, key: HashKey, value: Value) -> Option<Value> {
        let h = hash_key(&key);
        self.insert_hashed(h, key, value)
    }

    #[inline]
    pub fn insert_int(&mut self, i: i64, value: Value) -> Option<Value> {
        self.insert_with(hash_int(i), HashKey::int(i), value, |k, _| match k.value() {
            Value::Int(j) => *j == i,
            other => super::key_eq(other, &Value::Int(i)),
        })
    }

    #[inline]
    fn insert_hashed(&mut self, h: u64, key: HashKey, value: Value) -> Option<Value> {
        self.insert_with(h, key, value, |k, key| k == key)
    }

    /// Insert or replace with one walk of the probe sequence: it either
    /// finds the key or ends at an empty slot, remembering the first
    /// tombstone on the way, which is where a new entry goes.
    #[inline(always)]
    fn insert_with(
        &mut self,
        h: u64,
        key: HashKey,
        value: Value,
        eq: impl Fn(&HashKey, &HashKey) -> bool,
    ) -> Option<Value> {
        // Grow first, so the walk below can end in the slot to fill. (A
        // replacement may grow the table a little early; that is all.)
        if (self.used + 1) * 8 > self.slots.len() * 5 {
            self.rebuild(slots_for(self.len + 1));
        }
        let mask = self.slots.len() - 1;
        let mut pos = h as usize & mask;
        let mut perturb = h;
        let mut tombstone = None;
        loop {
            let s = self.slots[pos & mask];
            if s == EMPTY {
                break;
            }
            if s == DELETED {
                tombstone.get_or_insert(pos & mask);
            } else if let Some(e) = self.entries.get_mut(s as usize - 1) {
                if e.hash == h && e.key.as_ref().is_some_and(|k| eq(k, &key)) {
                    return Some(std::mem::replace(&mut e.value, value));
                }
            }
            pos = next_slot(pos & mask, &mut perturb);
        }
        let idx = self.push_entry(h, key, value);
        match tombstone {
            Some(t) => self.slots[t] = idx as u32 + 1,
            None => {
                self.slots[pos & mask] = idx as u32 + 1;
                self.used += 1;
            }
        }
        None
    }

    /// Append a live entry (no slot points at it yet); returns its index.
    #[inline(always)]
    fn push_entry(&mut self, h: u64, key: HashKey, value: Value) -> usize {
        let idx = self.entries.len();
        self.entries.push(Entry {
            hash: h,
            key: Some(key),
            value,
        });
        self.len += 1;
        idx
    }

    /// Point the first free slot of `h`'s probe sequence at entry `idx`.
    /// Returns whether it took an empty slot (rather than a tombstone).
    #[inline(always)]
    fn place(&mut self, h: u64, idx: u32) -> bool {
        let mask = self.slots.len() - 1;
        let mut pos = h as usize & mask;
        let mut perturb = h;
        loop {
            let s = &mut self.slots[pos & mask];
            if *s == EMPTY || *s == DELETED {
                let was_empty = *s == EMPTY;
                *s = idx + 1;
                return was_empty;
            }
            pos = next_slot(pos & mask, &mut perturb);
        }
    }

    /// Rebuild `slots` with `nslots` slots, dropping holes from `entries`.
    fn rebuild(&mut self, nslots: usize) {
        if self.entries.len() != self.len {
            self.entries.retain(|e| e.key.is_some());
        }
        self.slots = vec![EMPTY; nslots];
        for i in 0..self.entries.len() {
            let h = self.entries[i].hash;
            self.place(h, i as u32);
        }
        self.used = self.entries.len();
    }

    /// Remove a key, keeping the order of the rest (Python's `del d[k]`).
    pub fn remove(&mut self, key: &HashKey) -> Option<Value> {
        let h = hash_key(key);
        let i = self.find(h, |k| k == key)?;
        // The slot that points at `i` becomes a tombstone.
        let mask = self.slots.len() - 1;
        let mut pos = h as usize & mask;
        let mut perturb = h;
        loop {
            let s = &mut self.slots[pos & mask];
            if *s as usize == i + 1 {
                *s = DELETED;
                break;
            }
            pos = next_slot(pos & mask, &mut perturb);
        }
        let e = self.entries.get_mut(i)?;
        e.key = None;
        let v = std::mem::replace(&mut e.value, Value::None);
        self.len -= 1;
        if self.len == 0 {
            self.clear();
        } else if self.entries.len() > 16 && self.len < self.entries.len() / 2 {
            self.rebuild(slots_for(self.len));
        }
        Some(v)
    }

    /// `d.setdefault(k, default)`: the value at `key`, inserting `default` first if absent.
    pub fn get_or_insert(&mut self, key: HashKey, default: Value) -> &Value {
        let h = hash_key(&key);
        let i = match self.find(h, |k| *k == key) {
            Some(i) => i,
            None => {
                self.insert_hashed(h, key, default);
                self.entries.len() - 1
            }
        };
        &self.entries[i].value
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.slots.clear();
        self.len = 0;
        self.used = 0;
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&HashKey, &Value)> + '_ {
        self.entries
            .iter()
            .filter_map(|e| e.key.as_ref().map(|k| (k, &e.value)))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &HashKey> + '_ {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Value> + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// The live entries with their stored hashes, in order: set operations
    /// look members of one table up in another without hashing them again.
    pub fn iter_hashed(&self) -> impl Iterator<Item = (u64, &HashKey)> + '_ {
        self.entries.iter().filter_map(|e| e.key.as_ref().map(|k| (e.hash, k)))
    }

    /// Is `key`, whose hash is `h` (from `iter_hashed`), in the table?
    #[inline]
    pub fn contains_hashed(&self, h: u64, key: &HashKey) -> bool {
        match key.value() {
            Value::Int(i) => self.get_int(*i).is_some(),
            _ => self.find(h, |k| k == key).is_some(),
        }
    }

    /// Add `key` (hash `h`, from `iter_hashed`), which the caller knows is
    /// not in the table: no equality tests, only the walk to a free slot.
    #[inline]
    pub fn push_absent(&mut self, h: u64, key: HashKey, value: Value) {
        if (self.used + 1) * 8 > self.slots.len() * 5 {
            self.rebuild(slots_for(self.len + 1));
        }
        let idx = self.push_entry(h, key, value);
        if self.place(h, idx as u32) {
            self.used += 1;
        }
    }

    /// The last entry in insertion order (`popitem`).
    pub fn pop_last(&mut self) -> Option<(HashKey, Value)> {
        let k = self.keys().next_back()?.clone();
        let v = self.remove(&k)?;
        Some((k, v))
    }
}

/// The slot count for `n` live keys: a power of two with `n` at most half full
/// (so it can grow to 5/8 before the next rebuild).
fn slots_for(n: usize) -> usize {
    n.saturating_mul(2).max(8).next_power_of_two()
}

impl Extend<(HashKey, Value)> for DictMap {
    fn extend<I: IntoIterator<Item = (HashKey, Value)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl IntoIterator for DictMap {
    type Item = (HashKey, Value);
    type IntoIter = std::iter::FilterMap<std::vec::IntoIter<Entry>, fn(Entry) -> Option<(HashKey, Value)>>;
    fn into_iter(self) -> Self::IntoIter {
        fn live(e: Entry) -> Option<(HashKey, Value)> {
            e.key.map(|k| (k, e.value))
        }
        self.entries
            .into_iter()
            .filter_map(live as fn(Entry) -> Option<(HashKey, Value)>)
    }
}

impl FromIterator<(HashKey, Value)> for DictMap {
    fn from_iter<I: IntoIterator<Item = (HashKey, Value)>>(iter: I) -> DictMap {
        let iter = iter.into_iter();
        let mut d = DictMap::with_capacity(iter.size_hint().0);
        d.extend(iter);
        d
    }
}

impl std::fmt::Debug for DictMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (k.value().type_name(), v.type_name())))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(i: i64) -> HashKey {
        HashKey::int(i)
    }

    fn ints(d: &DictMap) -> Vec<i64> {
        d.keys()
            .map(|k| if let Value::Int(i) = k.value() { *i } else { -999 })
            .collect()
    }

    #[test]
    fn insert_get_replace_keeps_order() {
        let mut d = DictMap::new();
        for i in [5, 3, 9, 1] {
            assert!(d.insert(k(i), Value::Int(i * 10)).is_none());
        }
        assert!(matches!(d.insert(k(3), Value::Int(0)), Some(Value::Int(30))));
        assert_eq!(ints(&d), vec![5, 3, 9, 1]);
        assert!(matches!(d.get(&k(3)), Some(Value::Int(0))));
        assert!(d.get(&k(4)).is_none());
        assert_eq!(d.len(), 4);
    }

    #[test]
    fn equal_keys_of_different_types_are_one_key() {
        let mut d = DictMap::new();
        d.insert(k(1), Value::str("int"));
        d.insert(HashKey::new(Value::Float(1.0)).unwrap(), Value::str("float"));
        d.insert(HashKey::new(Value::Bool(true)).unwrap(), Value::str("bool"));
        assert_eq!(d.len(), 1);
        assert!(d.get_int(1).is_some());
        assert!(d.get(&HashKey::new(Value::Float(1.0)).unwrap()).is_some());
        d.insert(HashKey::new(Value::str("a")).unwrap(), Value::None);
        assert!(d.contains_key(&HashKey::new(Value::str("a")).unwrap()));
        assert!(!d.contains_key(&HashKey::new(Value::str("b")).unwrap()));
    }

    #[test]
    fn remove_keeps_order_and_reuses_tombstones() {
        let mut d = DictMap::new();
        for i in 0..100 {
            d.insert(k(i), Value::Int(i));
        }
        for i in (0..100).step_by(3) {
            assert!(d.remove(&k(i)).is_some());
        }
        assert!(d.remove(&k(0)).is_none());
        let want: Vec<i64> = (0..100).filter(|i| i % 3 != 0).collect();
        assert_eq!(ints(&d), want);
        for i in (0..100).step_by(3) {
            d.insert(k(i), Value::Int(i));
        }
        assert_eq!(d.len(), 100);
        // Re-inserted keys go to the end, as in Python.
        assert_eq!(ints(&d).last(), Some(&99));
        for i in 0..100 {
            assert!(matches!(d.get(&k(i)), Some(Value::Int(j)) if *j == i));
        }
    }

    #[test]
    fn churn_never_fills_the_table() {
        // Insert and remove many distinct keys: tombstones must be swept.
        let mut d = DictMap::new();
        for i in 0..100_000i64 {
            d.insert(k(i), Value::None);
            if i >= 4 {
                assert!(d.remove(&k(i - 4)).is_some());
            }
        }
        assert_eq!(d.len(), 4);
        assert_eq!(ints(&d), vec![99_996, 99_997, 99_998, 99_999]);
    }

    #[test]
    fn keys_with_equal_low_bits_spread() {
        let mut d = DictMap::new();
        for i in 0..10_000i64 {
            d.insert(k(i << 32), Value::Int(i));
        }
        for i in 0..10_000i64 {
            assert!(matches!(d.get_int(i << 32), Some(Value::Int(j)) if *j == i));
        }
    }

    #[test]
    fn pop_last_and_setdefault() {
        let mut d: DictMap = (0..5).map(|i| (k(i), Value::Int(i))).collect();
        assert!(matches!(d.pop_last(), Some((_, Value::Int(4)))));
        assert!(matches!(d.get_or_insert(k(7), Value::Int(70)), Value::Int(70)));
        assert!(matches!(d.get_or_insert(k(7), Value::Int(0)), Value::Int(70)));
        assert_eq!(ints(&d), vec![0, 1, 2, 3, 7]);
        let mut e = d.clone();
        e.clear();
        assert!(e.is_empty() && e.get_int(1).is_none());
        assert_eq!(d.len(), 5);
    }
}
