//! Elementwise results of a traced computation, computed when read.
//!
//! Inside `grad`, the forward pass of a loss runs operation by operation,
//! and much of what it computes is never read: `grad(loss)` returns the
//! gradient, not the loss, and the rules of the backward pass read only
//! some of the intermediates (`log1p`'s rule reads its input, not its
//! result). Computed eagerly, the forward pass of
//! `(maximum(z, 0) - z * y + log1p(exp(-abs(z)))).mean()` writes nine
//! tensors as long as the batch, the `log1p` alone costing as much as the
//! hand-derived gradient's whole elementwise part.
//!
//! So an elementwise operation (arithmetic, `maximum`/`minimum`, the unary
//! functions) of float64/float32 tensors, one of them traced, gives a tensor
//! whose storage is [`Deferred`]: an expression over the tensors it reads
//! (cotangent.rs's [`Expr`], evaluated block by block), and a whole-tensor
//! sum of such a tensor defers too. A later elementwise operation on a
//! deferred tensor takes its expression in (fusion), and so does a rule of
//! the backward pass that reads it ([`pending_expr`]), so the backward pass
//! computes `exp(-abs(z))` inside its own block loop without the forward
//! pass ever writing it. Anything else that reads a deferred tensor
//! (printing, indexing, a matmul, `float()`, a kernel) computes it first,
//! once, through [`Storage::read`](super::storage::Storage::read).
//!
//! Invariants:
//! - A deferred tensor's elements are bit for bit what the eager kernels
//!   would have written: the evaluator runs the same element functions in
//!   each tensor's own format (`vmath` where the eager kernel uses it,
//!   `UFn::apply` otherwise, `arith::extremum`'s NaN rule).
//! - Values are those of the moment the operation ran: every write into
//!   any storage ([`Storage::write`](super::storage::Storage::write)) first
//!   computes every pending deferred tensor, so a tensor an expression reads
//!   cannot change under it.
//! - Bounded: an expression holds at most [`MAX_NODES`] nodes, and a chain
//!   of deferred tensors reading deferred tensors is at most [`MAX_DEPTH`]
//!   long (past either an operand is computed first), so computing one
//!   never recurses deeply.
//! - Only traced operations defer, and only from [`MIN_ELEMENTS`] elements
//!   (or when they read a deferred tensor); untraced code runs exactly as
//!   before.

use super::arith::UFn;
use super::core::Tensor;
use super::cotangent::{self, Expr};
use super::dtype::DType;
use super::layout::Layout;
use super::storage::{Buffer, Scalar, Storage};
use crate::syntax::ast::BinOp;
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

/// Nodes an expression may hold (fused operations and their operands).
pub const MAX_NODES: usize = 48;
/// Longest chain of deferred tensors whose expressions read deferred tensors.
pub const MAX_DEPTH: u32 = 4;
/// Elements from which an operation on computed tensors defers. Below it,
/// recording and later compiling the expression costs more than the
/// operation (a 16-element `grad` loop took 5-12% longer deferred); an
/// operation reading a deferred tensor defers at any size (the `/ n` of a
/// deferred `mean`).
pub const MIN_ELEMENTS: usize = 1024;

/// The storage of a tensor computed when first read.
pub struct Deferred {
    value: OnceLock<RwLock<Buffer>>,
    /// What computes it; taken when it is computed.
    recipe: Mutex<Option<Recipe>>,
    /// 1 + the longest chain of deferred tensors its recipe reads.
    depth: u32,
    /// Elements and format of the result.
    len: usize,
    dtype: DType,
}

enum Recipe {
    /// An elementwise expression (of the tensor's shape and dtype).
    Elementwise(Arc<Expr>),
    /// The sum of `src` over `axes`, of shape `shape` (`reduce::reduce`).
    Sum {
        src: Tensor,
        axes: Vec<usize>,
        shape: Vec<usize>,
    },
}

/// Deferred tensors not yet computed (for [`Storage::write`] to compute
/// them first), and a list to find them by.
static PENDING: AtomicUsize = AtomicUsize::new(0);
static LIVE: Mutex<Vec<Weak<Storage>>> = Mutex::new(Vec::new());

impl Deferred {
    /// The computed elements (computing them on the first call).
    pub fn value(&self) -> &RwLock<Buffer> {
        self.value.get_or_init(|| {
            let recipe = self.recipe.lock().take();
            PENDING.fetch_sub(1, Ordering::Relaxed);
            // Only `value` takes the recipe, inside this one-time init, and
            // neither evaluation can fail on shapes that already exist: the
            // NaN elements stand for an internal error, not a crash.
            let t = recipe.and_then(|r| compute(r).ok());
            RwLock::new(match t {
                Some(t) => into_buffer(t),
                None => match self.dtype {
                    DType::F32 => f32::buffer(vec![f32::NAN; self.len]),
                    _ => f64::buffer(vec![f64::NAN; self.len]),
                },
            })
        })
    }

    /// Whether the elements have been computed.
    pub fn is_computed(&self) -> bool {
        self.value.get().is_some()
    }

    fn pending_expr(&self) -> Option<Arc<Expr>> {
        if self.value.get().is_some() {
            return None;
        }
        match &*self.recipe.lock() {
            Some(Recipe::Elementwise(e)) => Some(e.clone()),
            _ => None,
        }
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        if self.value.get().is_none() {
            PENDING.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

fn compute(r: Recipe) -> crate::value::VResult<Tensor> {
    match r {
        Recipe::Elementwise(e) => cotangent::eval(&e),
        Recipe::Sum { src, axes, shape } => Ok(match src.dtype {
            DType::F32 => super::reduce::sum_float::<f32>(&src, &axes, shape),
            _ => super::reduce::sum_float::<f64>(&src, &axes, shape),
        }),
    }
}

/// The elements of a computed tensor as a buffer of its own (the tensor's
/// when nothing else holds it).
fn into_buffer(t: Tensor) -> Buffer {
    let dense = matches!(*t.storage, Storage::Cpu(_)) && t.is_dense();
    let Tensor {
        storage, layout, dtype, ..
    } = t;
    let storage = match Arc::try_unwrap(storage) {
        Ok(Storage::Cpu(lock)) if dense => return lock.into_inner(),
        Ok(other) => Arc::new(other),
        Err(shared) => shared,
    };
    let t = Tensor {
        storage,
        layout,
        dtype,
        node: None,
    };
    match dtype {
        DType::F32 => f32::buffer(t.to_vec::<f32>()),
        _ => f64::buffer(t.to_vec::<f64>()),
    }
}

/// Whether any deferred tensor is still to be computed.
#[inline]
pub fn any_pending() -> bool {
    PENDING.load(Ordering::Relaxed) != 0
}

/// Computes every pending deferred tensor (before a write into any storage).
#[cold]
pub fn compute_all() {
    let live = std::mem::take(&mut *LIVE.lock());
    for w in live {
        if let Some(s) = w.upgrade() {
            if let Storage::Deferred(d) = &*s {
                d.value();
            }
        }
    }
}

fn deferred(t: &Tensor) -> Option<&Deferred> {
    match &*t.storage {
        Storage::Deferred(d) => Some(d),
        _ => None,
    }
}

/// The expression of `t` while it is deferred and not yet computed, where
/// `t` is the whole of its storage in order (not a view of part of it).
pub fn pending_expr(t: &Tensor) -> Option<Arc<Expr>> {
    let d = deferred(t)?;
    if t.layout.offset != 0 || !t.layout.is_contiguous() {
        return None;
    }
    let e = d.pending_expr()?;
    (e.shape() == t.shape() && e.dtype() == t.dtype).then_some(e)
}

/// How long a chain of deferred tensors reading `t` would be.
fn depth(t: &Tensor) -> u32 {
    deferred(t).map_or(0, |d| if d.value.get().is_some() { 0 } else { d.depth })
}

/// Whether an operation may defer: a float64/float32 dtype (and, in unit
/// tests, deferral not switched off to compare with the eager pass).
fn float(d: DType) -> bool {
    #[cfg(test)]
    if EAGER.with(|e| e.get()) {
        return false;
    }
    matches!(d, DType::F64 | DType::F32)
}

#[cfg(test)]
thread_local! {
    /// Unit tests: every operation runs eagerly (to compare the two).
    static EAGER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// An operand of a new expression: `t`'s own expression taken in when it
/// is pending and `room` nodes allow, else `t` read as it is. Returns the
/// expression and the chain depth it brings.
fn operand(t: &Tensor, room: usize) -> (Arc<Expr>, u32) {
    if let Some(e) = pending_expr(t) {
        if e.nodes() <= room {
            return (e, depth(t).saturating_sub(1));
        }
    }
    (cotangent::tensor_leaf(t), depth(t))
}

/// A tensor of `shape` and `dtype` computed by `expr` when read, or `None`
/// where the chain would grow past [`MAX_DEPTH`].
fn make(expr: Arc<Expr>, depth: u32) -> Option<Tensor> {
    if depth > MAX_DEPTH {
        return None;
    }
    let shape = expr.shape().to_vec();
    let dtype = expr.dtype();
    let d = Deferred {
        value: OnceLock::new(),
        recipe: Mutex::new(Some(Recipe::Elementwise(expr))),
        depth,
        len: shape.iter().product(),
        dtype,
    };
    Some(register(d, shape, dtype))
}

fn register(d: Deferred, shape: Vec<usize>, dtype: DType) -> Tensor {
    PENDING.fetch_add(1, Ordering::Relaxed);
    let storage = Arc::new(Storage::Deferred(d));
    {
        let mut live = LIVE.lock();
        if live.len() >= 64 && live.len().is_power_of_two() {
            live.retain(|w| w.strong_count() > 0);
        }
        live.push(Arc::downgrade(&storage));
    }
    Tensor {
        storage,
        layout: Layout::contiguous(shape),
        dtype,
        node: None,
    }
}

/// Whether `t` may stand in an expression of `shape`: of that shape, or one
/// element (broadcast).
fn fits(t: &Tensor, shape: &[usize]) -> bool {
    t.shape() == shape || t.size() == 1
}

/// `x op y` deferred (arithmetic of two tensors of one float dtype, at
/// least one traced), or `None` where it runs eagerly.
pub fn binary(op: BinOp, x: &Tensor, y: &Tensor) -> Option<Tensor> {
    if x.node.is_none() && y.node.is_none() {
        return None;
    }
    // `x ** 2` is `x * x`, as the eager kernel computes it.
    if op == BinOp::Pow && y.node.is_none() && super::arith::square_or_same(x, y) == Some(true) {
        return two(x, y, |a, _, shape| cotangent::forward_binary(BinOp::Mul, a, a, shape));
    }
    two(x, y, |a, b, shape| cotangent::forward_binary(op, a, b, shape))
}

/// `maximum`/`minimum` deferred (as [`binary`]).
pub fn extremum(x: &Tensor, y: &Tensor, greater: bool) -> Option<Tensor> {
    two(x, y, |a, b, shape| {
        Some(cotangent::forward_extremum(greater, a, b, shape))
    })
}

fn two(
    x: &Tensor,
    y: &Tensor,
    build: impl FnOnce(&Arc<Expr>, &Arc<Expr>, Arc<[usize]>) -> Option<Arc<Expr>>,
) -> Option<Tensor> {
    if x.dtype != y.dtype || !float(x.dtype) || (x.node.is_none() && y.node.is_none()) {
        return None;
    }
    // Where the operands fit, the result has the larger one's size: the
    // cheap test first, before the broadcast shape is built.
    let size = x.size().max(y.size());
    if size < MIN_ELEMENTS && depth(x) == 0 && depth(y) == 0 {
        return None;
    }
    let shape = super::layout::broadcast_shapes(x.shape(), y.shape()).ok()?;
    if !fits(x, &shape) || !fits(y, &shape) {
        return None;
    }
    let (a, da) = operand(x, MAX_NODES / 2);
    let (b, db) = operand(y, MAX_NODES - 1 - a.nodes());
    make(build(&a, &b, shape.into())?, 1 + da.max(db))
}

/// `f(x)` deferred for a traced float tensor, or `None` where it runs
/// eagerly (the functions without a gradient, and float32's `gelu`, which
/// has its own kernel).
pub fn unary(f: UFn, x: &Tensor) -> Option<Tensor> {
    if x.node.is_none() || !float(x.dtype) {
        return None;
    }
    if matches!(f, UFn::Floor | UFn::Ceil | UFn::Round | UFn::Sign | UFn::Gelu)
        || (x.size() < MIN_ELEMENTS && depth(x) == 0)
    {
        return None;
    }
    let (a, da) = operand(x, MAX_NODES - 1);
    make(cotangent::forward_unary(f, &a), 1 + da)
}

/// The sum of a deferred tensor over `axes` (result shape `shape`),
/// deferred in turn: a loss's `mean()` inside `grad` is never computed
/// unless it is read. `None` where `src` is not pending.
pub fn sum(src: &Tensor, axes: &[usize], shape: Vec<usize>) -> Option<Tensor> {
    if src.node.is_none() || !float(src.dtype) || pending_expr(src).is_none() {
        return None;
    }
    let depth = 1 + depth(src);
    if depth > MAX_DEPTH {
        return None;
    }
    let d = Deferred {
        value: OnceLock::new(),
        recipe: Mutex::new(Some(Recipe::Sum {
            src: super::autodiff::detach(src),
            axes: axes.to_vec(),
            shape: shape.clone(),
        })),
        depth,
        len: shape.iter().product(),
        dtype: src.dtype,
    };
    Some(register(d, shape, src.dtype))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::arith::{binary_same, extremum, unary, Arg};
    use crate::tensor::autodiff::{backward, leaf};
    use crate::tensor::reduce::{reduce, RKind};
    use crate::tensor::test_support::{ok, randv};

    fn is_deferred(t: &Tensor) -> bool {
        matches!(&*t.storage, Storage::Deferred(d) if !d.is_computed())
    }

    fn eager<R>(f: impl FnOnce() -> R) -> R {
        EAGER.with(|e| e.set(true));
        let r = f();
        EAGER.with(|e| e.set(false));
        r
    }

    /// The bits of `t`'s elements in its own format.
    fn bits(t: &Tensor) -> Vec<u64> {
        match t.dtype {
            DType::F32 => t.to_vec::<f32>().iter().map(|x| x.to_bits() as u64).collect(),
            _ => t.to_vec::<f64>().iter().map(|x| x.to_bits()).collect(),
        }
    }

    fn inputs(dtype: DType) -> Tensor {
        let mut v = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            1e-310,
            -1e-310,
            700.0,
            710.0,
            -745.0,
            -760.0,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            2.0,
            2.0,
        ];
        v.extend(randv(1000, 7, -30.0, 30.0));
        v.extend(randv(1000, 8, -1.5, 1.5));
        let n = v.len();
        ok(Tensor::from_vec(v, vec![n]).astype(dtype))
    }

    const UNARY: [UFn; 12] = [
        UFn::Neg,
        UFn::Abs,
        UFn::Sqrt,
        UFn::Exp,
        UFn::Log,
        UFn::Log1p,
        UFn::Sin,
        UFn::Cos,
        UFn::Tan,
        UFn::Tanh,
        UFn::Sigmoid,
        UFn::Erf,
    ];

    #[test]
    fn deferred_elements_are_the_eager_kernels_bits() {
        for dtype in [DType::F64, DType::F32] {
            let x = inputs(dtype);
            let y = ok(ok(unary(UFn::Cos, &x)).astype(dtype));
            let lx = leaf(&x);
            for f in UNARY {
                let d = ok(unary(f, &lx));
                assert!(is_deferred(&d), "{f:?} on {dtype:?} did not defer");
                assert_eq!(bits(&d), bits(&ok(unary(f, &x))), "{f:?} on {dtype:?}");
            }
            for op in [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div] {
                for (a, b, la, lb) in [(&x, &y, &lx, &y), (&y, &x, &y, &lx)] {
                    let d = ok(binary_same(op, la, lb));
                    assert!(is_deferred(&d));
                    assert_eq!(bits(&d), bits(&ok(binary_same(op, a, b))), "{op:?} on {dtype:?}");
                }
                // One element broadcast (a Python float), on either side.
                let s = ok(Tensor::scalar(0.75).astype(dtype));
                let d = ok(binary_same(op, &s, &lx));
                assert_eq!(bits(&d), bits(&ok(binary_same(op, &s, &x))), "s {op:?} x on {dtype:?}");
            }
            // `x ** 2` defers as `x * x`, the eager kernel's own arithmetic;
            // other exponents run eagerly.
            for (e, defers) in [(2.0, true), (1.0, false), (3.0, false), (0.5, false)] {
                let k = ok(Tensor::scalar(e).astype(dtype));
                let d = ok(binary_same(BinOp::Pow, &lx, &k));
                assert_eq!(is_deferred(&d), defers, "** {e}");
                assert_eq!(
                    bits(&d),
                    bits(&ok(binary_same(BinOp::Pow, &x, &k))),
                    "** {e} on {dtype:?}"
                );
            }
            let sq = ok(binary_same(BinOp::Pow, &x, &ok(Tensor::scalar(2.0).astype(dtype))));
            assert_eq!(bits(&sq), bits(&ok(binary_same(BinOp::Mul, &x, &x))), "x ** 2 is x * x");
            for greater in [true, false] {
                let (ax, ay, al) = (Arg::T(x.clone()), Arg::T(y.clone()), Arg::T(lx.clone()));
                let d = ok(extremum(&al, &ay, greater));
                assert!(is_deferred(&d));
                assert_eq!(bits(&d), bits(&ok(extremum(&ax, &ay, greater))));
                let z = Arg::Float(0.0);
                assert_eq!(
                    bits(&ok(extremum(&al, &z, greater))),
                    bits(&ok(extremum(&ax, &z, greater)))
                );
            }
            // A fused chain: the loss of a logistic regression.
            let chain = |z: &Tensor| -> Tensor {
                let m = ok(extremum(&Arg::T(z.clone()), &Arg::Float(0.0), true));
                let p = ok(binary_same(BinOp::Mul, z, &y));
                let e = ok(unary(UFn::Exp, &ok(unary(UFn::Neg, &ok(unary(UFn::Abs, z))))));
                let l = ok(unary(UFn::Log1p, &e));
                ok(binary_same(BinOp::Add, &ok(binary_same(BinOp::Sub, &m, &p)), &l))
            };
            let d = chain(&lx);
            assert!(is_deferred(&d));
            let s = ok(reduce(&d, &[0], false, RKind::Sum));
            assert!(is_deferred(&s), "a traced sum of a deferred tensor defers");
            assert_eq!(bits(&s), bits(&ok(reduce(&chain(&x), &[0], false, RKind::Sum))));
            assert_eq!(bits(&d), bits(&chain(&x)));
        }
    }

    #[test]
    fn untraced_operations_run_eagerly() {
        let x = inputs(DType::F64);
        assert!(!is_deferred(&ok(unary(UFn::Exp, &x))));
        assert!(!is_deferred(&ok(binary_same(BinOp::Mul, &x, &x))));
        // Integer and narrow formats are never deferred.
        let l = leaf(&ok(x.astype(DType::F16)));
        assert!(!is_deferred(&ok(unary(UFn::Exp, &l))));
        // Small tensors run eagerly; an operation reading a deferred one
        // defers at any size.
        let small = leaf(&Tensor::from_vec(vec![1.0f64, 2.0, 3.0], vec![3]));
        assert!(!is_deferred(&ok(unary(UFn::Exp, &small))));
        let s = ok(reduce(&ok(unary(UFn::Exp, &leaf(&x))), &[0], false, RKind::Sum));
        assert!(is_deferred(&s));
        assert!(is_deferred(&ok(binary_same(BinOp::Div, &s, &Tensor::scalar(2.0)))));
    }

    #[test]
    fn a_write_after_the_operation_does_not_change_its_value() {
        let n = MIN_ELEMENTS;
        let a = Tensor::from_vec((0..n).map(|i| (i % 3 + 1) as f64).collect::<Vec<_>>(), vec![n]);
        let b = Tensor::from_vec((0..n).map(|i| (10 * (i % 3 + 1)) as f64).collect::<Vec<_>>(), vec![n]);
        let r = ok(binary_same(BinOp::Mul, &leaf(&a), &b));
        assert!(is_deferred(&r));
        b.storage.write(|buf| {
            if let Some(s) = f64::slice_mut(buf) {
                s.fill(-1.0);
            }
        });
        assert!(!is_deferred(&r), "the write computed the pending tensor first");
        assert_eq!(r.to_vec::<f64>()[..3], [10.0, 40.0, 90.0]);
        assert_eq!(b.to_vec::<f64>()[..3], [-1.0, -1.0, -1.0]);
    }

    #[test]
    fn long_chains_compute_without_deep_recursion() {
        // Fusion stops at MAX_NODES and chains at MAX_DEPTH: 20,000
        // operations, read at the end on a small stack.
        let k = Tensor::scalar(1.000_001f64);
        let r = {
            let k = k.clone();
            std::thread::Builder::new()
                .stack_size(128 << 10)
                .spawn(move || {
                    let mut r = leaf(&Tensor::from_vec(vec![1.0f64; MIN_ELEMENTS], vec![MIN_ELEMENTS]));
                    for _ in 0..20_000 {
                        r = ok(binary_same(BinOp::Mul, &r, &k));
                    }
                    let b = bits(&r);
                    (r, b)
                })
                .expect("thread")
                .join()
        };
        let Ok((r, got)) = r else {
            panic!("reading the chain overflowed a small stack")
        };
        let want = eager(|| {
            let mut e = Tensor::from_vec(vec![1.0f64; MIN_ELEMENTS], vec![MIN_ELEMENTS]);
            for _ in 0..20_000 {
                e = ok(binary_same(BinOp::Mul, &e, &k));
            }
            bits(&e)
        });
        assert_eq!(got, want);
        // The tape itself is dropped on a large stack (its links are 20,000 deep).
        let dropped = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(move || drop(r))
            .expect("thread")
            .join();
        assert!(dropped.is_ok());
    }

    #[test]
    fn grad_computes_the_gradient_without_computing_the_loss() {
        let z0 = Tensor::from_vec(randv(5000, 3, -4.0, 4.0), vec![5000]);
        let y = Tensor::from_vec(randv(5000, 4, 0.0, 1.0), vec![5000]);
        let run = |z0: &Tensor| {
            let z = leaf(z0);
            let m = ok(extremum(&Arg::T(z.clone()), &Arg::Float(0.0), true));
            let p = ok(binary_same(BinOp::Mul, &z, &y));
            let e = ok(unary(UFn::Exp, &ok(unary(UFn::Neg, &ok(unary(UFn::Abs, &z))))));
            let l = ok(unary(UFn::Log1p, &e));
            let s = ok(binary_same(BinOp::Add, &ok(binary_same(BinOp::Sub, &m, &p)), &l));
            // tanh's rule reads its result twice (`o * o`) in one instruction.
            let s = ok(binary_same(BinOp::Add, &s, &ok(unary(UFn::Tanh, &z))));
            let loss = ok(reduce(&s, &[0], false, RKind::Sum));
            let g = ok(backward(&loss, std::slice::from_ref(&z), false)).pop().flatten();
            (loss, e, g.map(|g| bits(&g)).unwrap_or_default())
        };
        let (loss, e, g) = run(&z0);
        assert!(is_deferred(&loss), "the loss was never read");
        assert!(is_deferred(&e), "the backward pass computed exp(-|z|) in its own loop");
        let (eloss, _, eg) = eager(|| run(&z0));
        assert!(!is_deferred(&eloss));
        assert_eq!(g, eg, "the same gradient bits as the eager pass");
        assert_eq!(bits(&loss), bits(&eloss));
    }
}
