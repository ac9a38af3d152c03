//! [`StrRef`]: the shared, reference-counted handle of a string, with
//! immortal strings that are never counted.
//!
//! Strings are never weakly referenced, so the count has no weak half:
//! freeing one is a single atomic decrement (`std`'s `Arc` pays a second
//! one for the weak count, ~10 ns per string freed).
//!
//! The one-character strings of U+0000..U+00FF are shared by every string
//! operation that yields a character (`list(s)`, `for c in s`, `s[i]`), so a
//! million-character text turned into a list touched one of a few counts a
//! million times: atomic increments on one cache line, each waiting for the
//! last (about 12 ns a character, 3.5x CPython's whole `list(s)`). Such
//! strings are made *immortal* (as CPython 3.12 makes its small ints and
//! one-character strings): their count holds [`IMMORTAL`], which a clone or
//! a drop reads and leaves alone, and they are never freed.
//!
//! Invariants:
//! - A mortal count is at least 1 while any `StrRef` to it exists and stays
//!   below [`IMMORTAL`] (a clone past [`MAX_COUNT`] aborts, as `Arc` does).
//! - An immortal count is never written: the immortal strings are the
//!   static table behind [`StrRef::latin1`].

use super::StrObj;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicUsize, Ordering};

/// The count of an immortal string (`IMMORTAL`) and the most references a
/// mortal string may have (`MAX_COUNT`): the same bounds solo counting
/// (`solo.rs`) keeps.
use super::solo::{IMMORTAL, MAX_COUNT};

/// `repr(C)`, count first: `Value::count` finds a string's count where it
/// finds an `Arc`'s, at the start of the pointee.
#[repr(C)]
struct Inner {
    count: AtomicUsize,
    obj: StrObj,
}

/// The one-character strings of U+0000..U+00FF, immortal, in static memory
/// (no lazy initialisation to test on every use).
#[rustfmt::skip]
static LATIN1: [Inner; 256] = [
    latin1(0x00), latin1(0x01), latin1(0x02), latin1(0x03), latin1(0x04), latin1(0x05), latin1(0x06), latin1(0x07), latin1(0x08), latin1(0x09), latin1(0x0a), latin1(0x0b), latin1(0x0c), latin1(0x0d), latin1(0x0e), latin1(0x0f),
    latin1(0x10), latin1(0x11), latin1(0x12), latin1(0x13), latin1(0x14), latin1(0x15), latin1(0x16), latin1(0x17), latin1(0x18), latin1(0x19), latin1(0x1a), latin1(0x1b), latin1(0x1c), latin1(0x1d), latin1(0x1e), latin1(0x1f),
    latin1(0x20), latin1(0x21), latin1(0x22), latin1(0x23), latin1(0x24), latin1(0x25), latin1(0x26), latin1(0x27), latin1(0x28), latin1(0x29), latin1(0x2a), latin1(0x2b), latin1(0x2c), latin1(0x2d), latin1(0x2e), latin1(0x2f),
    latin1(0x30), latin1(0x31), latin1(0x32), latin1(0x33), latin1(0x34), latin1(0x35), latin1(0x36), latin1(0x37), latin1(0x38), latin1(0x39), latin1(0x3a), latin1(0x3b), latin1(0x3c), latin1(0x3d), latin1(0x3e), latin1(0x3f),
    latin1(0x40), latin1(0x41), latin1(0x42), latin1(0x43), latin1(0x44), latin1(0x45), latin1(0x46), latin1(0x47), latin1(0x48), latin1(0x49), latin1(0x4a), latin1(0x4b), latin1(0x4c), latin1(0x4d), latin1(0x4e), latin1(0x4f),
    latin1(0x50), latin1(0x51), latin1(0x52), latin1(0x53), latin1(0x54), latin1(0x55), latin1(0x56), latin1(0x57), latin1(0x58), latin1(0x59), latin1(0x5a), latin1(0x5b), latin1(0x5c), latin1(0x5d), latin1(0x5e), latin1(0x5f),
    latin1(0x60), latin1(0x61), latin1(0x62), latin1(0x63), latin1(0x64), latin1(0x65), latin1(0x66), latin1(0x67), latin1(0x68), latin1(0x69), latin1(0x6a), latin1(0x6b), latin1(0x6c), latin1(0x6d), latin1(0x6e), latin1(0x6f),
    latin1(0x70), latin1(0x71), latin1(0x72), latin1(0x73), latin1(0x74), latin1(0x75), latin1(0x76), latin1(0x77), latin1(0x78), latin1(0x79), latin1(0x7a), latin1(0x7b), latin1(0x7c), latin1(0x7d), latin1(0x7e), latin1(0x7f),
    latin1(0x80), latin1(0x81), latin1(0x82), latin1(0x83), latin1(0x84), latin1(0x85), latin1(0x86), latin1(0x87), latin1(0x88), latin1(0x89), latin1(0x8a), latin1(0x8b), latin1(0x8c), latin1(0x8d), latin1(0x8e), latin1(0x8f),
    latin1(0x90), latin1(0x91), latin1(0x92), latin1(0x93), latin1(0x94), latin1(0x95), latin1(0x96), latin1(0x97), latin1(0x98), latin1(0x99), latin1(0x9a), latin1(0x9b), latin1(0x9c), latin1(0x9d), latin1(0x9e), latin1(0x9f),
    latin1(0xa0), latin1(0xa1), latin1(0xa2), latin1(0xa3), latin1(0xa4), latin1(0xa5), latin1(0xa6), latin1(0xa7), latin1(0xa8), latin1(0xa9), latin1(0xaa), latin1(0xab), latin1(0xac), latin1(0xad), latin1(0xae), latin1(0xaf),
    latin1(0xb0), latin1(0xb1), latin1(0xb2), latin1(0xb3), latin1(0xb4), latin1(0xb5), latin1(0xb6), latin1(0xb7), latin1(0xb8), latin1(0xb9), latin1(0xba), latin1(0xbb), latin1(0xbc), latin1(0xbd), latin1(0xbe), latin1(0xbf),
    latin1(0xc0), latin1(0xc1), latin1(0xc2), latin1(0xc3), latin1(0xc4), latin1(0xc5), latin1(0xc6), latin1(0xc7), latin1(0xc8), latin1(0xc9), latin1(0xca), latin1(0xcb), latin1(0xcc), latin1(0xcd), latin1(0xce), latin1(0xcf),
    latin1(0xd0), latin1(0xd1), latin1(0xd2), latin1(0xd3), latin1(0xd4), latin1(0xd5), latin1(0xd6), latin1(0xd7), latin1(0xd8), latin1(0xd9), latin1(0xda), latin1(0xdb), latin1(0xdc), latin1(0xdd), latin1(0xde), latin1(0xdf),
    latin1(0xe0), latin1(0xe1), latin1(0xe2), latin1(0xe3), latin1(0xe4), latin1(0xe5), latin1(0xe6), latin1(0xe7), latin1(0xe8), latin1(0xe9), latin1(0xea), latin1(0xeb), latin1(0xec), latin1(0xed), latin1(0xee), latin1(0xef),
    latin1(0xf0), latin1(0xf1), latin1(0xf2), latin1(0xf3), latin1(0xf4), latin1(0xf5), latin1(0xf6), latin1(0xf7), latin1(0xf8), latin1(0xf9), latin1(0xfa), latin1(0xfb), latin1(0xfc), latin1(0xfd), latin1(0xfe), latin1(0xff),
];

/// The immortal string of the one character `c` (U+0000..U+00FF), built at
/// compile time: its UTF-8 bytes inline.
const fn latin1(c: u8) -> Inner {
    let mut buf = [0u8; StrObj::INLINE];
    let len = if c < 0x80 {
        buf[0] = c;
        1
    } else {
        buf[0] = 0xc0 | (c >> 6);
        buf[1] = 0x80 | (c & 0x3f);
        2
    };
    Inner {
        count: AtomicUsize::new(IMMORTAL),
        obj: StrObj {
            data: super::StrData::Inline(len, buf),
            nchars: 1,
            hash: std::sync::atomic::AtomicU32::new(0),
        },
    }
}

/// A shared reference to an immutable string.
pub struct StrRef {
    ptr: NonNull<Inner>,
}

// SAFETY: the string is immutable apart from its atomic count and atomic
// cached hash (and `get_mut`, which needs the only handle), so sharing and sending handles between threads is sharing
// `&StrObj` (which is Sync) and moving counted ownership.
unsafe impl Send for StrRef {}
// SAFETY: as above.
unsafe impl Sync for StrRef {}

impl StrRef {
    pub fn new(obj: StrObj) -> StrRef {
        let b = Box::new(Inner {
            count: AtomicUsize::new(1),
            obj,
        });
        StrRef {
            ptr: NonNull::from(Box::leak(b)),
        }
    }

    /// The shared, immortal string of the character `c` (U+0000..U+00FF).
    #[inline(always)]
    pub fn latin1(c: u8) -> StrRef {
        StrRef {
            ptr: NonNull::from(&LATIN1[c as usize]),
        }
    }

    #[inline]
    fn inner(&self) -> &Inner {
        // SAFETY: the pointee lives while any handle to it exists (the
        // count invariant), and this handle exists.
        unsafe { self.ptr.as_ref() }
    }

    /// The reference count (solo counting finds it through `Value::count`,
    /// at the start of the block; a test checks the two agree).
    #[cfg(test)]
    pub(crate) fn count(&self) -> &AtomicUsize {
        &self.inner().count
    }

    /// The string itself, to change, when this handle is its only one (a
    /// mortal count of 1: no other handle exists anywhere, and none can be
    /// made without this one). Immortal strings are never handed out.
    #[inline]
    pub fn get_mut(&mut self) -> Option<&mut StrObj> {
        if self.inner().count.load(Ordering::Acquire) == 1 {
            // SAFETY: the count says this handle is the only one, and it is
            // borrowed mutably, so no other reference to the object exists.
            Some(unsafe { &mut self.ptr.as_mut().obj })
        } else {
            None
        }
    }

    /// Whether this is one of the immortal strings (never counted, never freed).
    #[inline(always)]
    pub fn is_immortal(&self) -> bool {
        self.inner().count.load(Ordering::Relaxed) >= IMMORTAL
    }

    /// Whether two handles name one string object.
    #[inline]
    pub fn ptr_eq(a: &StrRef, b: &StrRef) -> bool {
        a.ptr == b.ptr
    }
}

impl Clone for StrRef {
    #[inline]
    fn clone(&self) -> StrRef {
        let count = &self.inner().count;
        if count.load(Ordering::Relaxed) < IMMORTAL {
            // A new reference comes from an existing one, so no ordering
            // is needed (as `Arc::clone`).
            let old = count.fetch_add(1, Ordering::Relaxed);
            if old >= MAX_COUNT {
                std::process::abort();
            }
        }
        StrRef { ptr: self.ptr }
    }
}

impl Drop for StrRef {
    #[inline]
    fn drop(&mut self) {
        let count = &self.inner().count;
        if count.load(Ordering::Relaxed) >= IMMORTAL {
            return;
        }
        if count.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Every other handle's last use happens before the free (as
        // `Arc::drop`).
        fence(Ordering::Acquire);
        // SAFETY: this was the last handle of a mortal string, which was
        // allocated as a Box by `new`.
        drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
    }
}

impl Deref for StrRef {
    type Target = StrObj;
    #[inline]
    fn deref(&self) -> &StrObj {
        &self.inner().obj
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mortal_strings_are_freed_and_immortal_ones_are_not_counted() {
        let a = StrRef::new(StrObj::from_text("abc"));
        let b = a.clone();
        assert!(StrRef::ptr_eq(&a, &b));
        assert_eq!(a.inner().count.load(Ordering::Relaxed), 2);
        drop(b);
        assert_eq!(a.inner().count.load(Ordering::Relaxed), 1);
        assert_eq!(a.as_str(), "abc");

        let i = StrRef::latin1(b'x');
        let copies: Vec<StrRef> = (0..1000).map(|_| i.clone()).collect();
        assert_eq!(i.inner().count.load(Ordering::Relaxed), IMMORTAL);
        drop(copies);
        assert_eq!(i.inner().count.load(Ordering::Relaxed), IMMORTAL);
        assert_eq!(i.as_str(), "x");
    }

    #[test]
    fn the_static_one_character_strings_are_their_characters() {
        for c in 0u8..=255 {
            let s = StrRef::latin1(c);
            let want = (c as char).to_string();
            assert_eq!(s.as_str(), want);
            assert_eq!(s.char_len(), 1);
            assert!(StrRef::ptr_eq(&s, &s.clone()));
            assert_eq!(s.inner().count.load(Ordering::Relaxed), IMMORTAL);
        }
    }

    #[test]
    fn handles_cross_threads() {
        let s = StrRef::new(StrObj::from_text("shared between threads"));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let v: Vec<StrRef> = (0..10_000).map(|_| s.clone()).collect();
                    v.len()
                })
            })
            .collect();
        for h in hs {
            assert_eq!(h.join().ok(), Some(10_000));
        }
        assert_eq!(s.inner().count.load(Ordering::Relaxed), 1);
    }
}
