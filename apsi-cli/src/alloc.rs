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
