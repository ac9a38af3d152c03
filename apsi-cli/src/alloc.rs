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
    fn mi_process_init();
    fn mi_reserve_os_memory_ex(
        size: usize,
        commit: bool,
        allow_large: bool,
        exclusive: bool,
        arena_id: *mut *mut c_void,
    ) -> std::ffi::c_int;
    fn mi_arena_area(arena_id: *mut c_void, size: *mut usize) -> *mut c_void;
    /// mimalloc's own reading of `/proc/sys/vm/overcommit_memory` (made
    /// by `mi_process_init`): true unless overcommit is strict (mode 2).
    /// Internal to mimalloc but linked statically with it, so its absence
    /// would be a link error, never a wrong answer.
    fn _mi_os_has_overcommit() -> bool;
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

/// `mi_option_destroy_on_exit` in the same enum. At 2, mimalloc does
/// nothing when the process exits; otherwise it collects the main thread's
/// heap and hands its free pages back to the system one `madvise` at a
/// time (about 45 calls after a cached start of a 5,000-line program),
/// work the exit itself does at once.
const MI_OPTION_DESTROY_ON_EXIT: std::ffi::c_int = 22;

/// Sets the allocator's options; called first thing in `main`.
pub fn tune() {
    // SAFETY (both): plain setters of process-wide options.
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
    // Statistics asked for are printed at exit: then the exit work stays.
    let exit_report = ["MIMALLOC_SHOW_STATS", "MIMALLOC_VERBOSE"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| x != "0"));
    if std::env::var_os("MIMALLOC_DESTROY_ON_EXIT").is_none() && !exit_report {
        unsafe { mi_option_set(MI_OPTION_DESTROY_ON_EXIT, 2) };
    }
    // glibc's own malloc serves only the C library's internals here (a
    // thread's first `pthread_getattr_np`, which the standard library
    // calls for every thread it starts). By default it gives each thread
    // an arena of its own: a 64 MiB mapping, trimmed and made accessible
    // piece by piece, for a few hundred bytes. One arena is plenty.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: a documented setter, called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Huge pages, and where the heap asks for them.
///
/// With transparent huge pages, the first touch of each 2 MiB of the heap
/// clears all of it. A start touches a few hundred KiB spread over as many
/// 2 MiB regions as it has threads (mimalloc gives each thread its own
/// part of the arena): 3 huge pages, 0.5–0.9 ms, for `hello.apsi`, 7 for a
/// cache hit of a 5,000-line program. Compiling is the opposite: it fills
/// ten-odd MiB at once, and 4 KiB pages cost it 2,700 faults instead of
/// 250 (16 ms instead of 10 ms for those 5,000 lines). So mimalloc is built
/// without asking for huge pages itself (`no_thp`), the first arena is
/// reserved here before anything is allocated, and [`huge_pages_ahead`]
/// asks for them over that arena when compiling starts, or else when the
/// program starts to run: its own allocations (tensors among them: 8–10%
/// of `bench/sci`'s `mlp` and `lsq` without) get them as before. The
/// tensor kernels also ask for them over their own large buffers
/// (`apsi-core`'s `tensor/kernels.rs`).
static FIRST_ARENA: std::sync::OnceLock<(usize, usize)> = std::sync::OnceLock::new();

/// The first arena's size: mimalloc's own default (address space, not
/// memory: it is reserved, and committed as it is used).
const FIRST_ARENA_BYTES: usize = 1 << 30;

#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static RESERVE_FIRST_ARENA: extern "C" fn() = reserve_first_arena;

/// Runs before `main` and before the standard library's first
/// allocation (a constructor), so mimalloc allocates from this arena first.
///
/// Where the system overcommits (Linux's default), the arena is mapped
/// readable and writable at once ("committed" in mimalloc's words: the
/// kernel still backs a page only when it is first touched). Reserved
/// without access, mimalloc made each 64 KiB it used accessible with its
/// own `mprotect` call: about 60 calls in a cached start, each splitting
/// the mapping and holding the address-space lock that the other
/// thread's page faults wait for. With strict overcommit the commit would
/// be charged in full, so there it stays reserved.
#[cfg(target_os = "linux")]
extern "C" fn reserve_first_arena() {
    let mut id: *mut c_void = std::ptr::null_mut();
    // SAFETY: mimalloc's documented entry points; `mi_process_init` may be
    // called more than once (and has read the overcommit mode when it
    // returns), the arena is an ordinary non-exclusive one, and `id`/`size`
    // are valid out-pointers.
    unsafe {
        mi_process_init();
        let commit = _mi_os_has_overcommit();
        if mi_reserve_os_memory_ex(FIRST_ARENA_BYTES, commit, false, false, &mut id) != 0 {
            return;
        }
        let mut size = 0usize;
        let start = mi_arena_area(id, &mut size);
        if !start.is_null() && size > 0 {
            let _ = FIRST_ARENA.set((start as usize, size));
        }
    }
}

/// Asks for huge pages over the first arena, for the parts of it not yet
/// touched: called when a program is about to be compiled or run, once
/// per process.
pub fn huge_pages_ahead() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        #[cfg(target_os = "linux")]
        if let Some(&(start, size)) = FIRST_ARENA.get() {
            // SAFETY: the range is the arena mimalloc reserved for us; the
            // advice changes how its pages are backed, never their contents.
            unsafe { libc::madvise(start as *mut c_void, size, libc::MADV_HUGEPAGE) };
        }
    });
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

/// The memory this thread's next small allocations will most likely come
/// from, made ready while the thread has nothing else to do.
///
/// mimalloc carves a thread's small objects out of 64 KiB pages, taken
/// from its arena one after another: a new page is usually the slice after
/// the last one. Each 4 KiB of a new page costs a page fault when first
/// touched (1.5 us here; the interpreter's thread took 200 of them in a
/// cached start of 5,000 lines). `touch_next` asks the kernel to back the
/// next 16 KiB from the page of a probe object on with memory
/// (`MADV_POPULATE_WRITE`, which changes no byte, so memory another thread
/// was given meanwhile is unharmed): 40 fewer faults there. Where the
/// guess is wrong, that memory simply waits for later use.
pub struct WarmHeap {
    next: usize,
    end: usize,
}

impl WarmHeap {
    /// mimalloc 3's small page (`MI_SMALL_PAGE_SIZE`).
    const SLICE: usize = 64 << 10;
    /// How much one step backs: short, so a step delays what the thread
    /// waits for by a few microseconds at most.
    const STEP: usize = 16 << 10;
    /// At most this much ahead of the probe.
    const AHEAD: usize = 1 << 20;

    pub fn new() -> WarmHeap {
        let probe = Box::new([0u64; 4]);
        let page = (&*probe as *const [u64; 4] as usize) & !(Self::SLICE - 1);
        WarmHeap {
            next: page,
            end: page + Self::AHEAD,
        }
    }

    /// Backs the next 16 KiB; false when all is, or the system cannot
    /// (a kernel before 5.14, memory not accessible yet).
    pub fn touch_next(&mut self) -> bool {
        if self.next >= self.end {
            return false;
        }
        // SAFETY: advice over the allocator's own mapping, which changes
        // no content; an address outside any mapping is an error returned.
        let ok = unsafe { libc::madvise(self.next as *mut libc::c_void, Self::STEP, libc::MADV_POPULATE_WRITE) } == 0;
        self.next = if ok { self.next + Self::STEP } else { self.end };
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_heap_backs_at_most_its_window_and_stops() {
        let mut w = WarmHeap::new();
        let mut steps = 0;
        while w.touch_next() {
            steps += 1;
            assert!(steps <= WarmHeap::AHEAD / WarmHeap::STEP, "it goes on past its window");
        }
        // Done (or refused by the system): it stays done.
        assert!(!w.touch_next());
    }

    #[test]
    fn the_options_tune_sets_are_the_ones_named() {
        // mimalloc 3's defaults: purge delay 1000 ms, destroy-on-exit 0;
        // another option at these indices would have another default (or
        // tune() already ran).
        let delay = unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) };
        let destroy = unsafe { mi_option_get(MI_OPTION_DESTROY_ON_EXIT) };
        assert!(delay == 1000 || delay == PURGE_DELAY_MS, "option 15 is {delay}");
        assert!(destroy == 0 || destroy == 2, "option 22 is {destroy}");
        tune();
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }, PURGE_DELAY_MS);
        }
        let quiet = ["MIMALLOC_DESTROY_ON_EXIT", "MIMALLOC_SHOW_STATS", "MIMALLOC_VERBOSE"]
            .iter()
            .all(|v| std::env::var_os(v).is_none());
        if quiet {
            assert_eq!(unsafe { mi_option_get(MI_OPTION_DESTROY_ON_EXIT) }, 2);
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_first_arena_is_mapped_writable_where_the_system_overcommits() {
        let &(start, _) = FIRST_ARENA.get().expect("reserved by the constructor");
        let strict = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").is_ok_and(|m| m.trim() == "2");
        let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
        // The arena's first bytes are in use by now; its far end is not.
        let far = start + FIRST_ARENA_BYTES - 4096;
        let perms = maps
            .lines()
            .find_map(|l| {
                let (range, rest) = l.split_once(' ')?;
                let (a, b) = range.split_once('-')?;
                let (a, b) = (usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?);
                (a <= far && far < b).then(|| rest[..4].to_string())
            })
            .expect("the arena is mapped");
        if strict {
            assert!(perms.starts_with("---"), "{perms}");
        } else {
            assert!(perms.starts_with("rw"), "{perms}");
        }
    }

    #[test]
    fn the_first_arena_is_reserved_before_main_and_advised_once() {
        #[cfg(target_os = "linux")]
        {
            let &(start, size) = FIRST_ARENA.get().expect("reserved by the constructor");
            assert_eq!(size, FIRST_ARENA_BYTES);
            // Blocks come from it.
            let b = Box::new([7u8; 64]);
            let p = b.as_ptr() as usize;
            assert!(p >= start && p < start + size, "{p:#x} outside {start:#x}+{size:#x}");
            huge_pages_ahead();
            huge_pages_ahead();
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
