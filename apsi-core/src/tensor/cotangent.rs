//! Cotangents of elementwise rules kept as expressions, evaluated in one
//! blocked pass.
//!
//! A first-order backward pass through a chain of elementwise operations
//! (the loss of a model: `maximum(z, 0) - z * y + log1p(exp(-abs(z)))`)
//! would otherwise allocate and write one tensor per rule: nine passes over
//! memory for that loss, each as long as the batch. Here each such rule
//! builds an expression over the tensors the tape recorded ([`Expr`]), and
//! the expression is evaluated only where a tensor is needed (a matmul's
//! rule, a reduction, a leaf's gradient): block by block, with every
//! intermediate in a block-sized register that stays in L1.
//!
//! Invariants:
//! - The same arithmetic in the same order as the eager rules of
//!   `autodiff.rs`, in the tensors' own format, so the same bits.
//! - Only where the eager rule would not broadcast: every operand whose
//!   cotangent is built has the cotangent's shape, and every tensor in an
//!   expression has its dtype (f64 or f32). Anything else takes the eager
//!   rule, on the evaluated cotangent.
//! - Never while a backward pass is being recorded (`grad(grad(f))`): the
//!   second pass differentiates the rules' own recorded operations.

use super::arith::{extreme, UFn};
use super::autodiff::{bin as bin_eager, detach, Op};
use super::core::{par_split, par_split_cheap, Tensor};
use super::dtype::DType;
use super::kernels::{fill_chunked, with_operand, Operand};
use super::real::Real;
use crate::syntax::ast::BinOp;
use crate::value::VResult;
use rustc_hash::FxHashMap as HashMap;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// Nodes an expression may count before it is evaluated: bounds the
/// registers a block needs (and the work a shared node is counted for).
const MAX_NODES: usize = 48;
/// Elements per block (each register holds one block).
const BLOCK: usize = 256;

/// A cotangent during a backward pass: a tensor, or an expression that
/// stands for one.
#[derive(Clone)]
pub enum Cot {
    Dense(Tensor),
    Lazy(Arc<Expr>),
}

pub struct Expr {
    kind: Kind,
    shape: Arc<[usize]>,
    dtype: DType,
    /// Nodes below and including this one (shared nodes counted per use).
    nodes: usize,
}

enum Kind {
    /// A recorded tensor (of the expression's shape, or broadcasting to it).
    Leaf(Tensor),
    Const(f64),
    Un(Un, Arc<Expr>),
    Bin(Bin, Arc<Expr>, Arc<Expr>),
    /// maximum/minimum's share: `(g, out, this, other)` gives 0 where
    /// `out != this`, `g / 2` at a tie, `g` otherwise.
    Share([Arc<Expr>; 4]),
    /// clip's rule: `g` strictly inside the bounds, 0 elsewhere.
    Inside(Arc<Expr>, Arc<Expr>, Option<f64>, Option<f64>),
}

#[derive(Clone, Copy)]
enum Un {
    Neg,
    Sign,
    Sin,
    Cos,
    /// A forward unary function (deferred.rs), element for element what
    /// `arith::unary` computes: [`vmath`](super::vmath) for the functions it
    /// has, `UFn::apply` for the others.
    Fn(UFn),
}

#[derive(Clone, Copy)]
enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    /// `maximum`/`minimum` as `arith::extremum` computes them (NaN
    /// propagates; at a tie the first operand).
    Max,
    Min,
}

impl Cot {
    /// The tensor this cotangent stands for.
    pub fn into_tensor(self) -> VResult<Tensor> {
        match self {
            Cot::Dense(t) => Ok(t),
            Cot::Lazy(e) => eval(&e),
        }
    }

    /// This cotangent as an expression, where one may be built on it.
    fn expr(&self) -> Option<Arc<Expr>> {
        match self {
            Cot::Lazy(e) => Some(e.clone()),
            Cot::Dense(t) => float(t.dtype).then(|| leaf(t)),
        }
    }
}

fn float(d: DType) -> bool {
    matches!(d, DType::F64 | DType::F32)
}

fn node(kind: Kind, shape: Arc<[usize]>, dtype: DType) -> Arc<Expr> {
    let nodes = 1 + match &kind {
        Kind::Leaf(_) | Kind::Const(_) => 0,
        Kind::Un(_, a) => a.nodes,
        Kind::Bin(_, a, b) | Kind::Inside(a, b, _, _) => a.nodes + b.nodes,
        Kind::Share(xs) => xs.iter().map(|x| x.nodes).sum(),
    };
    Arc::new(Expr {
        kind,
        shape,
        dtype,
        nodes,
    })
}

/// `t` read in an expression: a deferred tensor not yet computed is its
/// own expression (deferred.rs), so a rule reading a forward intermediate
/// computes it inside the block loop instead of making the forward pass
/// write it.
fn leaf(t: &Tensor) -> Arc<Expr> {
    super::deferred::pending_expr(t).unwrap_or_else(|| tensor_leaf(t))
}

/// `t` read as it is (computed first, if it is deferred).
pub(super) fn tensor_leaf(t: &Tensor) -> Arc<Expr> {
    node(Kind::Leaf(detach(t)), t.shape().into(), t.dtype)
}

impl Expr {
    /// Nodes below and including this one.
    pub(super) fn nodes(&self) -> usize {
        self.nodes
    }
    pub(super) fn shape(&self) -> &[usize] {
        &self.shape
    }
    pub(super) fn dtype(&self) -> DType {
        self.dtype
    }
}

// Forward expressions (deferred.rs): the operations of `arith` on operands
// of the result's shape or of one element.

/// `f(a)`.
pub(super) fn forward_unary(f: UFn, a: &Arc<Expr>) -> Arc<Expr> {
    un(Un::Fn(f), a)
}

/// `a op b` for `+ - * /`, of shape `shape` (`None` for another operator).
pub(super) fn forward_binary(op: BinOp, a: &Arc<Expr>, b: &Arc<Expr>, shape: Arc<[usize]>) -> Option<Arc<Expr>> {
    let op = match op {
        BinOp::Add => Bin::Add,
        BinOp::Sub => Bin::Sub,
        BinOp::Mul => Bin::Mul,
        BinOp::Div => Bin::Div,
        _ => return None,
    };
    Some(node(Kind::Bin(op, a.clone(), b.clone()), shape, a.dtype))
}

/// `maximum(a, b)` (`greater`) or `minimum(a, b)`, of shape `shape`.
pub(super) fn forward_extremum(greater: bool, a: &Arc<Expr>, b: &Arc<Expr>, shape: Arc<[usize]>) -> Arc<Expr> {
    let op = if greater { Bin::Max } else { Bin::Min };
    node(Kind::Bin(op, a.clone(), b.clone()), shape, a.dtype)
}

fn un(op: Un, a: &Arc<Expr>) -> Arc<Expr> {
    node(Kind::Un(op, a.clone()), a.shape.clone(), a.dtype)
}

fn bin(op: Bin, a: &Arc<Expr>, b: &Arc<Expr>) -> Arc<Expr> {
    node(Kind::Bin(op, a.clone(), b.clone()), a.shape.clone(), a.dtype)
}

fn konst(like: &Arc<Expr>, x: f64) -> Arc<Expr> {
    node(Kind::Const(x), like.shape.clone(), like.dtype)
}

/// An expression over `g` kept as one, or evaluated when it grew past
/// [`MAX_NODES`].
fn settle(e: Arc<Expr>) -> VResult<Cot> {
    if e.nodes > MAX_NODES {
        Ok(Cot::Dense(eval(&e)?))
    } else {
        Ok(Cot::Lazy(e))
    }
}

/// `prev + g` for two cotangents of one tensor (in that order, as the
/// eager pass adds them): an expression when both can be one (`lazy`),
/// else the sum of the tensors.
pub fn add(prev: Cot, g: Cot, lazy: bool) -> VResult<Cot> {
    if lazy {
        if let (Some(a), Some(b)) = (prev.expr(), g.expr()) {
            if a.shape == b.shape && a.dtype == b.dtype {
                return settle(bin(Bin::Add, &a, &b));
            }
        }
    }
    Ok(Cot::Dense(bin_eager(
        BinOp::Add,
        &prev.into_tensor()?,
        &g.into_tensor()?,
    )?))
}

/// The cotangents of an elementwise node's inputs as expressions over `g`,
/// or `None` where the rule must run eagerly (another rule, an input of
/// another shape that needs its cotangent summed, a tensor of another
/// dtype).
pub fn vjp(op: &Op, g: &Cot, need: &[bool]) -> Option<VResult<Vec<Option<Cot>>>> {
    let g = g.expr()?;
    let fits = |t: &Tensor| t.dtype == g.dtype;
    let same = |t: &Tensor| fits(t) && *t.shape() == *g.shape;
    let needs = |i: usize| need.get(i).copied().unwrap_or(false);
    // Every input that needs a cotangent has g's shape.
    let ok = |ts: &[&Tensor]| ts.iter().enumerate().all(|(i, t)| !needs(i) || same(t));
    let pick = |i: usize, f: &dyn Fn() -> Arc<Expr>| if needs(i) { Some(f()) } else { None };
    let outs: Vec<Option<Arc<Expr>>> = match op {
        Op::Add(a, b) if ok(&[a, b]) => vec![pick(0, &|| g.clone()), pick(1, &|| g.clone())],
        Op::Sub(a, b) if ok(&[a, b]) => vec![pick(0, &|| g.clone()), pick(1, &|| un(Un::Neg, &g))],
        Op::Mul(a, b) if ok(&[a, b]) && fits(a) && fits(b) => vec![
            pick(0, &|| bin(Bin::Mul, &g, &leaf(b))),
            pick(1, &|| bin(Bin::Mul, &g, &leaf(a))),
        ],
        Op::Div(a, b) if ok(&[a, b]) && fits(a) && fits(b) => vec![
            pick(0, &|| bin(Bin::Div, &g, &leaf(b))),
            pick(1, &|| {
                let (a, b) = (leaf(a), leaf(b));
                un(Un::Neg, &bin(Bin::Div, &bin(Bin::Mul, &g, &a), &bin(Bin::Mul, &b, &b)))
            }),
        ],
        // erf's and gelu's rules need exp and erf, which the expressions do not have: eager.
        Op::Unary(f, x, out) if same(x) && same(out) && !matches!(f, UFn::Erf | UFn::Gelu) => {
            vec![pick(0, &|| unary(*f, &g, x, out))]
        }
        Op::Select(a, b, out) if ok(&[a, b]) && fits(a) && fits(b) && same(out) => {
            let (la, lb, lo) = (leaf(a), leaf(b), leaf(out));
            let share = |this: &Arc<Expr>, other: &Arc<Expr>| {
                let parts = [g.clone(), lo.clone(), this.clone(), other.clone()];
                node(Kind::Share(parts), g.shape.clone(), g.dtype)
            };
            vec![pick(0, &|| share(&la, &lb)), pick(1, &|| share(&lb, &la))]
        }
        Op::Clip(x, lo, hi) if same(x) => {
            vec![Some(node(
                Kind::Inside(g.clone(), leaf(x), *lo, *hi),
                g.shape.clone(),
                g.dtype,
            ))]
        }
        _ => return None,
    };
    Some(outs.into_iter().map(|o| o.map(settle).transpose()).collect())
}

/// A unary function's rule (`autodiff::direct_unary_vjp` and
/// `unary_vjp`, term for term).
fn unary(f: UFn, g: &Arc<Expr>, x: &Tensor, out: &Tensor) -> Arc<Expr> {
    let (lx, lo) = (|| leaf(x), || leaf(out));
    let one = || konst(g, 1.0);
    match f {
        UFn::Neg => un(Un::Neg, g),
        UFn::Abs => bin(Bin::Mul, g, &un(Un::Sign, &lx())),
        UFn::Sqrt => bin(Bin::Div, g, &bin(Bin::Mul, &lo(), &konst(g, 2.0))),
        UFn::Exp => bin(Bin::Mul, g, &lo()),
        UFn::Log => bin(Bin::Div, g, &lx()),
        UFn::Log1p => bin(Bin::Div, g, &bin(Bin::Add, &lx(), &one())),
        UFn::Sin => bin(Bin::Mul, g, &un(Un::Cos, &lx())),
        UFn::Cos => un(Un::Neg, &bin(Bin::Mul, g, &un(Un::Sin, &lx()))),
        UFn::Tan => {
            let o = lo();
            bin(Bin::Mul, g, &bin(Bin::Add, &bin(Bin::Mul, &o, &o), &one()))
        }
        UFn::Tanh => {
            let o = lo();
            let t = bin(Bin::Sub, &bin(Bin::Mul, &o, &o), &one());
            bin(Bin::Mul, g, &un(Un::Neg, &t))
        }
        UFn::Sigmoid => {
            let o = lo();
            let t = un(Un::Neg, &bin(Bin::Sub, &o, &one()));
            bin(Bin::Mul, g, &bin(Bin::Mul, &o, &t))
        }
        UFn::Floor | UFn::Ceil | UFn::Round | UFn::Sign => konst(g, 0.0),
        // Never reached: `vjp` sends erf to the eager rule (above).
        UFn::Erf | UFn::Gelu => konst(g, f64::NAN),
    }
}

// ---------------------------------------------------------------------------
// Evaluation: the expression compiled to a short program over block-sized
// registers, run block by block.

/// Where an instruction reads an operand: a register, or input `i` (a
/// tensor or a constant).
#[derive(Clone, Copy)]
enum Src {
    Reg(usize),
    In(usize),
}

#[derive(Clone, Copy)]
enum Ins {
    Un(Un, Src, usize),
    Bin(Bin, Src, Src, usize),
    Share([Src; 4], usize),
    Inside(Src, Src, Option<f64>, Option<f64>, usize),
}

enum Input {
    Tensor(Tensor),
    Const(f64),
}

struct Program {
    ins: Vec<Ins>,
    inputs: Vec<Input>,
    regs: usize,
    result: Src,
}

/// Evaluates `e` into a tensor of its shape and dtype.
pub fn eval(e: &Arc<Expr>) -> VResult<Tensor> {
    if let Kind::Leaf(t) = &e.kind {
        if *t.shape() == *e.shape {
            return Ok(t.clone());
        }
    }
    let p = compile(e);
    let shape = e.shape.to_vec();
    let n = super::layout::checked_size(&shape)?;
    match e.dtype {
        DType::F64 => Ok(Tensor::from_vec(run::<f64>(&p, n, &shape), shape)),
        DType::F32 => Ok(Tensor::from_vec(run::<f32>(&p, n, &shape), shape)),
        // Expressions are only built over f64 and f32 tensors.
        d => Err(crate::value::err(
            crate::error::ErrorKind::TypeError,
            format!("internal: a gradient expression over {}", d.name()),
        )),
    }
}

fn compile(e: &Arc<Expr>) -> Program {
    let mut b = Builder {
        ins: Vec::new(),
        inputs: Vec::new(),
        memo: HashMap::default(),
        values: 0,
    };
    let result = b.value(e);
    // Registers: a value's register is free again after its last reader;
    // an instruction's destination is taken before its operands are freed,
    // so it never aliases one of them.
    let mut last = vec![0usize; b.values];
    for (k, ins) in b.ins.iter().enumerate() {
        for s in srcs(ins) {
            if let Src::Reg(v) = s {
                last[v] = k;
            }
        }
    }
    if let Src::Reg(v) = result {
        last[v] = usize::MAX;
    }
    let mut phys = vec![0usize; b.values];
    let mut free: Vec<usize> = Vec::new();
    let mut regs = 0;
    let mut ins = Vec::with_capacity(b.ins.len());
    for (k, i) in b.ins.iter().enumerate() {
        let v = dst(i);
        phys[v] = free.pop().unwrap_or_else(|| {
            regs += 1;
            regs - 1
        });
        let map = |s: Src| match s {
            Src::Reg(r) => Src::Reg(phys[r]),
            s => s,
        };
        let mapped = match *i {
            Ins::Un(op, a, _) => Ins::Un(op, map(a), phys[v]),
            Ins::Bin(op, a, c, _) => Ins::Bin(op, map(a), map(c), phys[v]),
            Ins::Share(s, _) => Ins::Share(s.map(map), phys[v]),
            Ins::Inside(a, c, lo, hi, _) => Ins::Inside(map(a), map(c), lo, hi, phys[v]),
        };
        // An operand read twice (`o * o`) is freed once.
        let read = srcs(i);
        for (n, s) in read.iter().enumerate() {
            if let Src::Reg(r) = *s {
                let again = read[..n].iter().any(|p| matches!(*p, Src::Reg(q) if q == r));
                if last[r] == k && !again {
                    free.push(phys[r]);
                }
            }
        }
        ins.push(mapped);
    }
    let result = match result {
        Src::Reg(v) => Src::Reg(phys[v]),
        s => s,
    };
    Program {
        ins,
        inputs: b.inputs,
        regs,
        result,
    }
}

fn srcs(i: &Ins) -> Vec<Src> {
    match *i {
        Ins::Un(_, a, _) => vec![a],
        Ins::Bin(_, a, b, _) | Ins::Inside(a, b, _, _, _) => vec![a, b],
        Ins::Share(s, _) => s.to_vec(),
    }
}

fn dst(i: &Ins) -> usize {
    match *i {
        Ins::Un(_, _, d) | Ins::Bin(_, _, _, d) | Ins::Share(_, d) | Ins::Inside(_, _, _, _, d) => d,
    }
}

struct Builder {
    ins: Vec<Ins>,
    inputs: Vec<Input>,
    /// Each shared node is computed once per block.
    memo: HashMap<*const Expr, Src>,
    values: usize,
}

impl Builder {
    fn value(&mut self, e: &Arc<Expr>) -> Src {
        let key = Arc::as_ptr(e);
        if let Some(&s) = self.memo.get(&key) {
            return s;
        }
        let s = match &e.kind {
            Kind::Leaf(t) => self.input(Input::Tensor(t.clone())),
            Kind::Const(x) => self.input(Input::Const(*x)),
            Kind::Un(op, a) => {
                let a = self.value(a);
                self.emit(|d| Ins::Un(*op, a, d))
            }
            Kind::Bin(op, a, b) => {
                let (a, b) = (self.value(a), self.value(b));
                self.emit(|d| Ins::Bin(*op, a, b, d))
            }
            Kind::Share(xs) => {
                let s = [
                    self.value(&xs[0]),
                    self.value(&xs[1]),
                    self.value(&xs[2]),
                    self.value(&xs[3]),
                ];
                self.emit(|d| Ins::Share(s, d))
            }
            Kind::Inside(g, x, lo, hi) => {
                let (g, x) = (self.value(g), self.value(x));
                let (lo, hi) = (*lo, *hi);
                self.emit(|d| Ins::Inside(g, x, lo, hi, d))
            }
        };
        self.memo.insert(key, s);
        s
    }

    fn input(&mut self, i: Input) -> Src {
        self.inputs.push(i);
        Src::In(self.inputs.len() - 1)
    }

    fn emit(&mut self, f: impl FnOnce(usize) -> Ins) -> Src {
        let v = self.values;
        self.values += 1;
        self.ins.push(f(v));
        Src::Reg(v)
    }
}

/// Runs `f` with every input of `p` as an operand (`kernels::with_operand`:
/// in place under its read lock, a constant, or expanded), all at once.
fn with_operands<T: Real, R>(
    inputs: &[Input],
    shape: &[usize],
    done: &[Operand<'_, T>],
    f: &mut dyn FnMut(&[Operand<'_, T>]) -> R,
) -> R {
    let Some((first, rest)) = inputs.split_first() else {
        return f(done);
    };
    match first {
        Input::Const(x) => {
            let mut all = done.to_vec();
            all.push(Operand::Const(T::from_f64(*x)));
            with_operands(rest, shape, &all, f)
        }
        Input::Tensor(t) => with_operand(t, shape, |op| {
            let mut all = done.to_vec();
            all.push(op);
            with_operands(rest, shape, &all, f)
        }),
    }
}

fn run<T: Real>(p: &Program, n: usize, shape: &[usize]) -> Vec<T> {
    // A program of several instructions costs a math kernel's time an
    // element; one or two, an arithmetic kernel's.
    let split = if p.ins.len() >= 4 {
        par_split(n)
    } else {
        par_split_cheap(n)
    };
    with_operands::<T, Vec<T>>(&p.inputs, shape, &[], &mut |ops| {
        let body = |start: usize, o: &mut [MaybeUninit<T>]| run_chunk_wide(p, ops, start, o);
        // SAFETY: run_chunk writes every slot of the chunk it is given.
        unsafe { fill_chunked(n, BLOCK, split, body) }
    })
}

/// [`run_chunk`] compiled for the widest vector unit the CPU has (a
/// closure handed to `kernels::wide` is too large to be inlined into it,
/// and ran as SSE2 code).
fn run_chunk_wide<T: Real>(p: &Program, ops: &[Operand<'_, T>], start: usize, out: &mut [MaybeUninit<T>]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { run_chunk_avx512(p, ops, start, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { run_chunk_avx2(p, ops, start, out) };
        }
    }
    run_chunk(p, ops, start, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2")]
unsafe fn run_chunk_avx512<T: Real>(p: &Program, ops: &[Operand<'_, T>], start: usize, out: &mut [MaybeUninit<T>]) {
    run_chunk(p, ops, start, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_chunk_avx2<T: Real>(p: &Program, ops: &[Operand<'_, T>], start: usize, out: &mut [MaybeUninit<T>]) {
    run_chunk(p, ops, start, out)
}

#[inline(always)]
fn run_chunk<T: Real>(p: &Program, ops: &[Operand<'_, T>], start: usize, out: &mut [MaybeUninit<T>]) {
    let mut regs: Vec<Vec<T>> = (0..p.regs).map(|_| vec![T::ZERO; BLOCK]).collect();
    let consts: Vec<Vec<T>> = ops
        .iter()
        .map(|o| match o {
            Operand::Const(x) => vec![*x; BLOCK],
            Operand::Dense(_) => Vec::new(),
        })
        .collect();
    for (b, o) in out.chunks_mut(BLOCK).enumerate() {
        let at = start + b * BLOCK;
        let len = o.len();
        let input = |i: usize| -> &[T] {
            match ops[i] {
                Operand::Dense(s) => s.get(at..at + len).unwrap_or(&[]),
                Operand::Const(_) => consts[i].get(..len).unwrap_or(&[]),
            }
        };
        for ins in &p.ins {
            let d = dst(ins);
            let mut dv = std::mem::take(&mut regs[d]);
            {
                let read = |s: Src| -> &[T] {
                    match s {
                        Src::Reg(r) => regs[r].get(..len).unwrap_or(&[]),
                        Src::In(i) => input(i),
                    }
                };
                step(ins, &mut dv[..len], &read);
            }
            regs[d] = dv;
        }
        let r = match p.result {
            Src::Reg(r) => regs[r].get(..len).unwrap_or(&[]),
            Src::In(i) => input(i),
        };
        for (o, &x) in o.iter_mut().zip(r) {
            o.write(x);
        }
    }
}

#[inline(always)]
fn step<'a, T: Real>(ins: &Ins, d: &mut [T], read: &impl Fn(Src) -> &'a [T]) {
    match *ins {
        Ins::Un(op, a, _) => {
            let a = read(a);
            match op {
                Un::Neg => d.iter_mut().zip(a).for_each(|(d, &a)| *d = -a),
                // Real::sign without its early NaN test, so it vectorises:
                // NaN and +-0 give themselves, as there.
                Un::Sign => d.iter_mut().zip(a).for_each(|(d, &a)| {
                    *d = if a > T::ZERO {
                        T::ONE
                    } else if a < T::ZERO {
                        -T::ONE
                    } else {
                        a
                    }
                }),
                Un::Sin => d.iter_mut().zip(a).for_each(|(d, &a)| *d = a.sin()),
                Un::Cos => d.iter_mut().zip(a).for_each(|(d, &a)| *d = a.cos()),
                // One loop per function (a match inside the loop would
                // dispatch per element).
                Un::Fn(f) => match (f, f.vmath()) {
                    (_, Some(vf)) => {
                        // SAFETY: MaybeUninit<T> has T's layout, and `vmath`
                        // writes an initialised value into every slot.
                        let d = unsafe { &mut *(d as *mut [T] as *mut [MaybeUninit<T>]) };
                        T::vmath(vf, a, d)
                    }
                    (UFn::Neg, _) => d.iter_mut().zip(a).for_each(|(d, &a)| *d = -a),
                    (UFn::Abs, _) => d.iter_mut().zip(a).for_each(|(d, &a)| *d = a.abs()),
                    (UFn::Sqrt, _) => d.iter_mut().zip(a).for_each(|(d, &a)| *d = a.sqrt()),
                    _ => d.iter_mut().zip(a).for_each(|(d, &a)| *d = f.apply(a)),
                },
            }
        }
        Ins::Bin(op, a, b, _) => {
            let (a, b) = (read(a), read(b));
            let it = d.iter_mut().zip(a.iter().zip(b));
            match op {
                Bin::Add => it.for_each(|(d, (&a, &b))| *d = a + b),
                Bin::Sub => it.for_each(|(d, (&a, &b))| *d = a - b),
                Bin::Mul => it.for_each(|(d, (&a, &b))| *d = a * b),
                Bin::Div => it.for_each(|(d, (&a, &b))| *d = a / b),
                Bin::Max => it.for_each(|(d, (&a, &b))| *d = extreme(a, b, true)),
                Bin::Min => it.for_each(|(d, (&a, &b))| *d = extreme(a, b, false)),
            }
        }
        Ins::Share([g, o, p, q], _) => {
            let (g, o, p, q) = (read(g), read(o), read(p), read(q));
            let half = T::from_f64(0.5);
            for (d, (((&g, &o), &p), &q)) in d.iter_mut().zip(g.iter().zip(o).zip(p).zip(q)) {
                *d = if o != p {
                    T::ZERO
                } else if o == q {
                    g * half
                } else {
                    g
                };
            }
        }
        Ins::Inside(g, x, lo, hi, _) => {
            let (g, x) = (read(g), read(x));
            // Compared in f64, as the eager rule does (an f32 element and
            // an f64 bound).
            for (d, (&g, &v)) in d.iter_mut().zip(g.iter().zip(x)) {
                let v = v.to_f64();
                let inside = lo.is_none_or(|l| v > l) && hi.is_none_or(|h| v < h);
                *d = if inside { g } else { T::ZERO };
            }
        }
    }
}
