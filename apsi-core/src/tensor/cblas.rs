//! The system OpenBLAS through its C interface (`cblas_sgemm`/`cblas_dgemm`),
//! one of `matmul`'s two backends when the crate is built with the `blas`
//! feature and `libopenblas.so.0` is installed (Debian: `libopenblas0`);
//! loaded at the first product that [`super::matmul::choose`] might give it
//! (products up to 100^3 multiply-adds on a CPU with AVX-512, or all under
//! `APSI_MATMUL=openblas`), the `gemm` crate running when it is not there.
//! The products matmul chooses it for run on one thread each (their bits do
//! not depend on the thread count); under `APSI_MATMUL=openblas` its thread
//! count is the product's (matmul's `run`: bounded by `set_threads`/`--threads`).
//!
//! Only matrices whose rows or columns are unit-strided can be handed to
//! BLAS as they are; [`operand`] says how, and the `gemm` crate multiplies the others.

use std::os::raw::c_int;

const ROW_MAJOR: c_int = 101;
const NO_TRANS: c_int = 111;
const TRANS: c_int = 112;

/// `cblas_sgemm` (`T = f32`) or `cblas_dgemm` (`T = f64`).
pub type GemmFn<T> = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    T,
    *const T,
    c_int,
    *const T,
    c_int,
    T,
    *mut T,
    c_int,
);
type SetThreadsFn = unsafe extern "C" fn(c_int);
type ThreadShutdownFn = unsafe extern "C" fn() -> c_int;
type TextFn = unsafe extern "C" fn() -> *const std::os::raw::c_char;

/// OpenBLAS's entry points, loaded at the first matmul. Linking it would
/// cost every process its start-up (its constructor starts a thread pool:
/// about 1.5 ms here, half the hello-world budget).
pub struct Blas {
    sgemm: GemmFn<f32>,
    dgemm: GemmFn<f64>,
    set_threads: Option<SetThreadsFn>,
    /// Whether its small-matrix kernels for AVX-512 run here ([`small_kernels`]).
    small_kernels: bool,
    _lib: libloading::Library,
}

/// `APSI_BLAS_LIB` names another library with the same C interface.
fn blas() -> Option<&'static Blas> {
    static BLAS: std::sync::OnceLock<Option<Blas>> = std::sync::OnceLock::new();
    BLAS.get_or_init(|| {
        let names: Vec<String> = match std::env::var("APSI_BLAS_LIB") {
            Ok(p) if !p.is_empty() => vec![p],
            _ => vec![
                "libopenblas.so.0".into(),
                "libopenblas.so".into(),
                "libopenblas.dylib".into(),
            ],
        };
        names.iter().find_map(|n| {
            // SAFETY: loading a BLAS runs its initialisers, which is what it is for.
            let lib = unsafe { libloading::Library::new(n) }.ok()?;
            // SAFETY: the symbols have the standard CBLAS signatures above.
            unsafe {
                let sgemm = *lib.get::<GemmFn<f32>>(b"cblas_sgemm\0").ok()?;
                let dgemm = *lib.get::<GemmFn<f64>>(b"cblas_dgemm\0").ok()?;
                let set_threads = lib.get::<SetThreadsFn>(b"openblas_set_num_threads\0").ok().map(|f| *f);
                let text = |sym: &[u8]| {
                    let f = *lib.get::<TextFn>(sym).ok()?;
                    let p = f();
                    (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
                };
                // OpenBLAS's constructor started a thread per core, each of which
                // spins (sched_yield) for 2^28 cycles before it sleeps: a tenth of a
                // second of a core right after loading, taken from a two-thread
                // program's kernels (a stack of 16^3 products on 2 threads ran 1.2x
                // its 1-thread speed instead of 2x). Matmul runs OpenBLAS on one
                // thread unless APSI_MATMUL=openblas, so they are stopped now; the
                // library starts them again itself when a call needs them (its
                // fork handler's path).
                // (The count is set first: setting it starts them again.)
                if let (Some(set), Ok(stop)) = (set_threads, lib.get::<ThreadShutdownFn>(b"blas_thread_shutdown_\0")) {
                    set(1);
                    stop();
                    *BLAS_THREADS.write() = 1;
                }
                let small_kernels = runs_small_kernels(
                    text(b"openblas_get_config\0").as_deref().unwrap_or(""),
                    text(b"openblas_get_corename\0").as_deref().unwrap_or(""),
                );
                Some(Blas {
                    sgemm,
                    dgemm,
                    set_threads,
                    small_kernels,
                    _lib: lib,
                })
            }
        })
    })
    .as_ref()
}

/// Whether a BLAS library could be loaded (loads it on first use).
pub fn available() -> bool {
    blas().is_some()
}

/// Whether the loaded library is an OpenBLAS that multiplies small matrices
/// with its AVX-512 small-matrix kernels (loads it on first use). OpenBLAS
/// 0.3.17 and later run them on its SkylakeX-class cores (SkylakeX,
/// Cooperlake, SapphireRapids) for every product of at most 100^3
/// multiply-adds (`*gemm_small_kernel_permit_skylakex.c`), without packing
/// the operands: faster than the `gemm` crate's AVX-512 kernels at every such
/// size here (docs/ARCHITECTURE.md, "Matmul"). A user's
/// `OPENBLAS_CORETYPE=Haswell` turns them off, and so this.
pub fn small_kernels() -> bool {
    blas().is_some_and(|b| b.small_kernels)
}

/// [`small_kernels`] from the library's `openblas_get_config()` (which starts
/// "OpenBLAS 0.3.21 ...") and `openblas_get_corename()` (`apsi doctor` asks
/// it too, with what it read from the library).
pub fn runs_small_kernels(config: &str, core: &str) -> bool {
    let version: Vec<u32> = config
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .split('.')
        .map_while(|p| p.parse().ok())
        .collect();
    let recent =
        config.starts_with("OpenBLAS ") && version.len() >= 3 && (version[0], version[1], version[2]) >= (0, 3, 17);
    let core = core.to_ascii_lowercase();
    recent && ["skylakex", "cooperlake", "sapphirerapids"].contains(&core.as_str())
}

/// How one operand (a `rows x cols` matrix with strides `rs`, `cs`) is
/// passed: transposed or not, and its leading dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    pub trans: bool,
    pub ld: c_int,
}

/// The BLAS form of a strided matrix, or `None` when neither its rows nor its
/// columns are unit-strided (or a size does not fit BLAS's 32-bit integers).
pub fn operand(rows: usize, cols: usize, rs: isize, cs: isize) -> Option<Operand> {
    let fits = |v: usize| c_int::try_from(v).ok();
    fits(rows)?;
    fits(cols)?;
    // A single row (column) may have any stride between rows (columns).
    let (rs, cs) = match (rows, cols) {
        (0 | 1, 0 | 1) => (1, 1),
        (0 | 1, _) if cs == 1 => (cols.max(1) as isize, 1),
        (0 | 1, _) => (1, cs),
        (_, 0 | 1) if rs == 1 => (1, rows.max(1) as isize),
        (_, 0 | 1) => (rs, 1),
        _ => (rs, cs),
    };
    if cs == 1 && rs >= cols.max(1) as isize {
        return Some(Operand {
            trans: false,
            ld: fits(rs as usize)?,
        });
    }
    if rs == 1 && cs >= rows.max(1) as isize {
        return Some(Operand {
            trans: true,
            ld: fits(cs as usize)?,
        });
    }
    None
}

/// The element types BLAS multiplies.
pub trait Gemm: Copy + 'static {
    const ONE: Self;
    const ZERO: Self;

    /// The library's entry point for this type.
    fn entry(blas: &Blas) -> GemmFn<Self>;
}

impl Gemm for f32 {
    const ONE: f32 = 1.0;
    const ZERO: f32 = 0.0;
    fn entry(blas: &Blas) -> GemmFn<f32> {
        blas.sgemm
    }
}

impl Gemm for f64 {
    const ONE: f64 = 1.0;
    const ZERO: f64 = 0.0;
    fn entry(blas: &Blas) -> GemmFn<f64> {
        blas.dgemm
    }
}

fn tr(t: bool) -> c_int {
    if t {
        TRANS
    } else {
        NO_TRANS
    }
}

/// `m x k @ k x n` products of one shape and one pair of operand forms, made
/// ready once for OpenBLAS: the entry point, the forms, and the read lock at
/// the thread count, held until this is dropped. One product runs through
/// one of these, and a stack of products all through one (from several
/// threads at once, too), paying for the lock and the checks once, not per
/// product (a stack of 256 8x8 products spent 4% of its time taking the lock
/// and 11% on the checks around each call).
pub struct Prepared<T> {
    call: GemmFn<T>,
    /// 1 and 0 (alpha and beta) in T.
    one_zero: (T, T),
    trans: (c_int, c_int),
    mnk: (c_int, c_int, c_int),
    ld: (c_int, c_int, c_int),
    _held: parking_lot::RwLockReadGuard<'static, usize>,
}

/// [`Prepared`] products on `threads` threads for operands with the (row,
/// column) strides `sa` and `sb`, or `None` when no BLAS can be loaded or an
/// operand cannot be given to BLAS as it is ([`operand`]).
pub fn prepare<T: Gemm>(
    m: usize,
    n: usize,
    k: usize,
    sa: (isize, isize),
    sb: (isize, isize),
    threads: usize,
) -> Option<Prepared<T>> {
    let fa = operand(m, k, sa.0, sa.1)?;
    let fb = operand(k, n, sb.0, sb.1)?;
    let blas = blas()?;
    Some(Prepared {
        call: T::entry(blas),
        one_zero: (T::ONE, T::ZERO),
        trans: (tr(fa.trans), tr(fb.trans)),
        // operand() checked that m, k and n fit a c_int.
        mnk: (m as c_int, n as c_int, k as c_int),
        ld: (fa.ld, fb.ld, n.max(1) as c_int),
        _held: use_threads(blas, threads),
    })
}

impl<T: Copy> Prepared<T> {
    /// `c = a @ b` for one pair of operands.
    ///
    /// # Safety
    /// `a` and `b` must address every element of operands of the prepared
    /// sizes and strides, and `c` must hold `m * n` elements.
    pub unsafe fn run(&self, a: *const T, b: *const T, c: *mut T) {
        let (m, n, k) = self.mnk;
        let (lda, ldb, ldc) = self.ld;
        (self.call)(
            ROW_MAJOR,
            self.trans.0,
            self.trans.1,
            m,
            n,
            k,
            self.one_zero.0,
            a,
            lda,
            b,
            ldb,
            self.one_zero.1,
            c,
            ldc,
        );
    }
}

/// The thread count last given to OpenBLAS (0: never), read-locked for the
/// length of each product (or of a [`Prepared`] stack) and write-locked to
/// change it.
static BLAS_THREADS: parking_lot::RwLock<usize> = parking_lot::RwLock::new(0);

/// Gives OpenBLAS's pool the product's thread count (1 for every product
/// matmul chooses OpenBLAS for; `min(--threads, rayon's pool)` from
/// [`super::matmul::PAR_WORK`] multiply-adds under `APSI_MATMUL=openblas`),
/// telling the library only when it changes, and returns the read lock the
/// caller holds while the product runs: products with the same count run at
/// once (the products of a stack, tasks' products), a product with another
/// count waits until none runs. A reader never waits for a waiting writer
/// (`read_recursive`): a [`Prepared`] stack holds its read lock while rayon
/// runs its products, and a rayon thread waiting there may take up another
/// job that reads, which must not queue behind a writer that waits for the
/// stack. BLAS runs on its own threads while the caller waits (rayon's
/// workers are idle then), so the two pools do not compete.
fn use_threads(blas: &Blas, threads: usize) -> parking_lot::RwLockReadGuard<'static, usize> {
    let want = threads.clamp(1, 1024);
    loop {
        let current = BLAS_THREADS.read_recursive();
        if *current == want {
            return current;
        }
        drop(current);
        let mut current = BLAS_THREADS.write();
        if *current != want {
            if let Some(set) = blas.set_threads {
                // SAFETY: a plain setter of the library's thread count.
                unsafe { set(want as c_int) };
            }
            *current = want;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operand_forms() {
        // Row-major dense, a transposed view, a row of a matrix, a strided column.
        assert_eq!(operand(3, 4, 4, 1), Some(Operand { trans: false, ld: 4 }));
        assert_eq!(operand(3, 4, 1, 3), Some(Operand { trans: true, ld: 3 }));
        assert_eq!(operand(1, 4, 0, 1), Some(Operand { trans: false, ld: 4 }));
        assert_eq!(operand(1, 4, 0, 3), Some(Operand { trans: true, ld: 3 }));
        assert_eq!(operand(4, 1, 7, 0), Some(Operand { trans: false, ld: 7 }));
        assert_eq!(operand(4, 1, 1, 0), Some(Operand { trans: true, ld: 4 }));
        assert_eq!(operand(1, 1, 0, 0), Some(Operand { trans: false, ld: 1 }));
        // Reversed rows (a negative stride) go to the gemm crate.
        assert_eq!(operand(3, 4, -4, 1), None);
        // Every other column: neither axis is unit-strided.
        assert_eq!(operand(3, 4, 8, 2), None);
        // Overlapping rows (a broadcast view) cannot be described.
        assert_eq!(operand(3, 4, 0, 1), None);
    }

    #[test]
    fn small_kernels_need_a_recent_openblas_on_an_avx512_core() {
        let cfg = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64";
        assert!(runs_small_kernels(cfg, "Cooperlake"));
        assert!(runs_small_kernels("OpenBLAS 0.3.31.dev DYNAMIC_ARCH", "SkylakeX"));
        assert!(runs_small_kernels("OpenBLAS 0.4.0", "SapphireRapids"));
        // OPENBLAS_CORETYPE=Haswell, an AMD core, an old release, another library.
        assert!(!runs_small_kernels(cfg, "Haswell"));
        assert!(!runs_small_kernels(cfg, "Zen"));
        assert!(!runs_small_kernels("OpenBLAS 0.3.13 DYNAMIC_ARCH", "SkylakeX"));
        assert!(!runs_small_kernels("OpenBLAS 0.3.9", "SkylakeX"));
        assert!(!runs_small_kernels("", "SkylakeX"));
        assert!(!runs_small_kernels("BLIS 0.9.0", "SkylakeX"));
    }

    #[test]
    fn multiplies_both_forms() {
        // a = [[1, 2], [3, 4]], b = [[5, 6], [7, 8]]; also a @ b.T with b given transposed.
        if !available() {
            eprintln!("skipped: no OpenBLAS library to load (matmul uses the gemm crate)");
            return;
        }
        let a = [1.0f64, 2.0, 3.0, 4.0];
        let b = [5.0f64, 6.0, 7.0, 8.0];
        let mut c = [0.0f64; 4];
        let row_major = (2, 1);
        let ready = prepare::<f64>(2, 2, 2, row_major, row_major, 1).expect("a BLAS");
        // SAFETY: a and b are 2 x 2 row-major; c has 4 elements.
        unsafe { ready.run(a.as_ptr(), b.as_ptr(), c.as_mut_ptr()) };
        drop(ready);
        assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
        let mut d = [0.0f32; 4];
        let (af, bf) = (a.map(|x| x as f32), b.map(|x| x as f32));
        // b's numbers read column by column: b.T.
        let ready = prepare::<f32>(2, 2, 2, row_major, (1, 2), 2).expect("a BLAS");
        // SAFETY: as above.
        unsafe { ready.run(af.as_ptr(), bf.as_ptr(), d.as_mut_ptr()) };
        assert_eq!(d, [17.0, 23.0, 39.0, 53.0]);
    }

    /// One-thread products run side by side (they share the read lock) and
    /// give the bits they give one at a time.
    #[test]
    fn products_at_once_from_several_threads() {
        if !available() {
            eprintln!("skipped: no OpenBLAS library to load");
            return;
        }
        let sizes = [(64usize, 64usize, 64usize), (100, 100, 100), (33, 70, 90), (8, 8, 8)];
        let one = |(m, k, n): (usize, usize, usize), seed: usize| -> Vec<u64> {
            let a: Vec<f64> = (0..m * k).map(|i| ((i * 7 + seed) % 13) as f64 / 13.0 - 0.5).collect();
            let b: Vec<f64> = (0..k * n).map(|i| ((i * 5 + seed) % 11) as f64 / 11.0 - 0.5).collect();
            let mut c = vec![0.0f64; m * n];
            let ready = prepare::<f64>(m, n, k, (k as isize, 1), (1, k as isize), 1).expect("a BLAS");
            // SAFETY: a is m x k row-major, b k x n given as its n x k transpose; c has m * n elements.
            unsafe { ready.run(a.as_ptr(), b.as_ptr(), c.as_mut_ptr()) };
            drop(ready);
            c.into_iter().map(f64::to_bits).collect()
        };
        let serial: Vec<Vec<u64>> = (0..16).map(|i| one(sizes[i % 4], i)).collect();
        let together: Vec<Vec<u64>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    s.spawn(move || {
                        (0..16)
                            .filter(|i| i % 4 == t)
                            .map(|i| (i, one(sizes[i % 4], i)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let mut all: Vec<(usize, Vec<u64>)> =
                handles.into_iter().flat_map(|h| h.join().expect("a thread")).collect();
            all.sort_by_key(|p| p.0);
            all.into_iter().map(|p| p.1).collect()
        });
        assert!(serial == together);
    }

    /// A product that reads the thread count while a stack holds it and a
    /// product with another count waits goes ahead (a rayon thread inside the
    /// stack may be the reader; queueing it behind the writer would hang all three).
    #[test]
    fn a_reader_never_queues_behind_a_waiting_writer() {
        let Some(blas) = blas() else {
            eprintln!("skipped: no OpenBLAS library to load");
            return;
        };
        let held = use_threads(blas, 1);
        let writer = std::thread::spawn(move || drop(use_threads(blas, 2)));
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let g = use_threads(blas, 1);
            tx.send(()).ok();
            drop(g);
        });
        let went_ahead = rx.recv_timeout(std::time::Duration::from_secs(10)).is_ok();
        drop(held);
        writer.join().expect("the writer");
        reader.join().expect("the reader");
        assert!(went_ahead, "a reader waited behind a waiting writer");
    }
}
