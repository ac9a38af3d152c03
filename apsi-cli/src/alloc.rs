//! The global allocator: mimalloc, called the way Rust's `System` allocator
//! calls malloc.
//!
//! Apsi allocates many small objects (strings, boxed values, closures);
//! mimalloc's small-object path is about a third of the instructions of the
//! system allocator's, and it reuses freed pages instead of refaulting them.
//! The `mimalloc` crate's wrapper sends every request through
//! `mi_malloc_aligned`, whose checks cost ~25 instructions per allocation
//! (5% of building a short string). mimalloc already returns blocks aligned
//! to 16 bytes (8 for 8-byte blocks), so a request whose alignment that
//! covers goes to the plain entry points; larger alignments keep the aligned
//! ones.

use libmimalloc_sys as mi;
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    #[cfg(test)]
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
}

/// `mi_option_purge_delay` in mimalloc 3's `mi_option_e` (mimalloc.h of the
/// libmimalloc-sys version Cargo.lock pins; a test checks its default).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// How long freed memory stays with the process before mimalloc returns it
/// to the system (its default is 1 s). A tensor loop frees and takes back
/// the same large blocks every step; with the default, blocks were handed
/// back and faulted in again (as zeroed 2 MiB pages where the kernels ask
/// for huge pages) about once a second: 1,400 faults in a 2.7 s logistic
/// regression, against 316 with a longer delay. Memory not reused for 10 s
/// is still returned. `MIMALLOC_PURGE_DELAY` in the environment wins.
const PURGE_DELAY_MS: std::ffi::c_long = 10_000;

/// Sets the allocator's options; called first thing in `main`.
pub fn tune() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: a plain setter of a process-wide option.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

/// The alignment every mimalloc block of at least this size has.
const MIN_ALIGN: usize = 16;

pub struct Mimalloc;

#[inline(always)]
fn plain(layout: &Layout) -> bool {
    layout.align() <= MIN_ALIGN && layout.align() <= layout.size()
}

// SAFETY: every entry point forwards to the mimalloc function with the
// contract `GlobalAlloc` asks for; `plain` only picks the unaligned entry
// points when mimalloc's natural alignment already satisfies the layout.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(&layout) {
            mi::mi_malloc(layout.size()) as *mut u8
        } else {
            mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(&layout) {
            mi::mi_zalloc(layout.size()) as *mut u8
        } else {
            mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi::mi_free(ptr as *mut c_void)
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= MIN_ALIGN && layout.align() <= new_size {
            mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
        } else {
            mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purge_delay_is_the_option_tune_sets() {
        // mimalloc 3's default purge delay is 1000 ms; another option at
        // this index would have another default (or tune() already ran).
        let before = unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert!(before == 1000 || before == PURGE_DELAY_MS, "option 15 is {before}");
            tune();
            assert_eq!(unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }, PURGE_DELAY_MS);
        }
    }

    #[test]
    fn blocks_have_the_alignment_asked_for() {
        let a = Mimalloc;
        for size in [1usize, 2, 3, 7, 8, 9, 15, 16, 17, 24, 40, 48, 100, 4096, 1 << 20] {
            for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
                let Ok(l) = Layout::from_size_align(size, align) else {
                    continue;
                };
                unsafe {
                    let p = a.alloc(l);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xAB, size);
                    let q = a.realloc(p, l, size * 3);
                    assert_eq!(q as usize % align, 0, "realloc size {size} align {align}");
                    assert_eq!(*q, 0xAB);
                    a.dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
                    let z = a.alloc_zeroed(l);
                    assert_eq!(z as usize % align, 0);
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                    a.dealloc(z, l);
                }
            }
        }
    }
}
