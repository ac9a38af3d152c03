//! Which int variables are never negative where a tensor is indexed, so the
//! back end can leave out the negative-index wrap (`x[-1]` is the last
//! element) there. Without the wrap, a loop `x[i]` over `i in range(n)` reads
//! consecutive elements, which LLVM vectorises with plain vector loads
//! instead of gathers.
//!
//! A forward must-analysis over the typed IR of each function: a variable is
//! non-negative at a point when it is on every path there. Facts:
//! non-negative int constants, `len`/`shape`/`size`, bool → int, `abs`, sums,
//! products, quotients and `max` of non-negatives, `a % b` and `a & b` with
//! `b` non-negative, `min` of two non-negatives, and a range counter that
//! starts non-negative and steps by a non-negative amount. The int operations
//! are checked (an overflow raises), so a sum of non-negatives cannot wrap
//! to a negative value. A `parallel for` chunk function gets the facts of its
//! loop bounds and captured variables at the `ParFor` that runs it.

use apsi_native_ir::ir::{Const, Func, IntOp, Op, Ty, Var};
use std::collections::HashMap;

/// A set of variables (a bit per variable).
#[derive(Clone, PartialEq, Debug)]
struct Set(Vec<u64>);

impl Set {
    fn empty(n: usize) -> Set {
        Set(vec![0; n.div_ceil(64)])
    }
    fn has(&self, v: Var) -> bool {
        let v = v as usize;
        self.0.get(v / 64).is_some_and(|w| w & (1 << (v % 64)) != 0)
    }
    fn put(&mut self, v: Var, on: bool) {
        let v = v as usize;
        if let Some(w) = self.0.get_mut(v / 64) {
            if on {
                *w |= 1 << (v % 64);
            } else {
                *w &= !(1 << (v % 64));
            }
        }
    }
    /// Intersect with `o`; whether anything changed.
    fn meet(&mut self, o: &Set) -> bool {
        let mut ch = false;
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            let n = *a & *b;
            ch |= n != *a;
            *a = n;
        }
        ch
    }
}

/// Annotate every `Load`/`Store` of `funcs` with the indices known to be
/// non-negative. `funcs` is one compile's module, chunk functions included,
/// indexed as `ParFor.chunk` numbers them.
pub fn annotate(funcs: &mut [Func]) {
    // Facts about each function's parameters (only chunks get any). Chunks
    // nest in the function that runs them, so a few rounds settle them.
    let mut params: Vec<Set> = funcs.iter().map(|f| Set::empty(f.vars.len())).collect();
    for _round in 0..8 {
        let mut next: Vec<Option<Set>> = vec![None; funcs.len()];
        for (i, f) in funcs.iter().enumerate() {
            let states = analyse(f, &params[i]);
            for (pc, op) in f.ops.iter().enumerate() {
                let Op::ParFor {
                    chunk,
                    lo,
                    hi,
                    step,
                    env,
                    ..
                } = op
                else {
                    continue;
                };
                let c = *chunk as usize;
                let Some(cf) = funcs.get(c) else { continue };
                let Some(s) = states.get(pc).and_then(|s| s.as_ref()) else {
                    continue;
                };
                // A chunk runs range(lo', hi', step) with lo' and hi' values
                // of the loop's range (or its stop).
                let up = s.has(*lo) && s.has(*step);
                let mut p = Set::empty(cf.vars.len());
                let facts = [up, up && s.has(*hi), s.has(*step)];
                for (k, on) in facts.into_iter().enumerate() {
                    if let Some(&v) = cf.params.get(k) {
                        p.put(v, on);
                    }
                }
                for (k, ev) in env.iter().enumerate() {
                    if let Some(&v) = cf.params.get(3 + k) {
                        p.put(v, s.has(*ev));
                    }
                }
                match &mut next[c] {
                    Some(old) => {
                        old.meet(&p);
                    }
                    slot => *slot = Some(p),
                }
            }
        }
        let next: Vec<Set> = next
            .into_iter()
            .zip(funcs.iter())
            .map(|(s, f)| s.unwrap_or_else(|| Set::empty(f.vars.len())))
            .collect();
        if next == params {
            break;
        }
        params = next;
    }
    for (i, f) in funcs.iter_mut().enumerate() {
        let states = analyse(f, &params[i]);
        for (pc, op) in f.ops.iter_mut().enumerate() {
            let Some(s) = states.get(pc).and_then(|s| s.as_ref()) else {
                continue;
            };
            match op {
                Op::Load { idx, nonneg, .. } | Op::Store { idx, nonneg, .. } => *nonneg = mask(s, idx),
                _ => {}
            }
        }
    }
}

fn mask(s: &Set, idx: &[Var]) -> u8 {
    let mut m = 0u8;
    for (d, v) in idx.iter().enumerate().take(8) {
        if s.has(*v) {
            m |= 1 << d;
        }
    }
    m
}

/// The facts before each op (None where unreachable), given the facts about the parameters.
fn analyse(f: &Func, params: &Set) -> Vec<Option<Set>> {
    let n = f.ops.len();
    let nv = f.vars.len();
    let labels: HashMap<u32, usize> = f
        .ops
        .iter()
        .enumerate()
        .filter_map(|(i, op)| if let Op::Label(l) = op { Some((*l, i)) } else { None })
        .collect();
    let mut at: Vec<Option<Set>> = vec![None; n + 1];
    let mut entry = Set::empty(nv);
    for p in &f.params {
        entry.put(*p, params.has(*p));
    }
    at[0] = Some(entry);
    // Visit block starts (op 0 and labels) until nothing changes.
    let mut work = vec![0usize];
    let mut rounds = 0usize;
    while let Some(start) = work.pop() {
        rounds += 1;
        if rounds > 100_000 {
            // Give up soundly: no facts anywhere.
            return vec![None; n + 1];
        }
        let Some(mut s) = at.get(start).cloned().flatten() else {
            continue;
        };
        let mut i = start;
        let mut succ: Vec<usize> = Vec::new();
        while let Some(op) = f.ops.get(i) {
            if i != start {
                if let Op::Label(_) = op {
                    // Fall through into the next block.
                    succ.push(i);
                    break;
                }
                at[i] = Some(s.clone());
            }
            match op {
                Op::Jmp(l) => {
                    succ.extend(labels.get(l));
                    break;
                }
                Op::Br { then, els, .. } => {
                    succ.extend(labels.get(then));
                    succ.extend(labels.get(els));
                    break;
                }
                Op::Ret(_) | Op::Raise { .. } => break,
                op => step(f, op, &mut s),
            }
            i += 1;
        }
        for t in succ {
            let changed = match &mut at[t] {
                Some(old) => old.meet(&s),
                slot => {
                    *slot = Some(s.clone());
                    true
                }
            };
            if changed {
                work.push(t);
            }
        }
    }
    // Fill in the states inside blocks from their (now final) starts.
    let starts: Vec<usize> = (0..n).filter(|&i| i == 0 || matches!(f.ops[i], Op::Label(_))).collect();
    for &start in &starts {
        let Some(mut s) = at[start].clone() else { continue };
        let mut i = start;
        while let Some(op) = f.ops.get(i) {
            if i != start {
                if let Op::Label(_) = op {
                    break;
                }
                at[i] = Some(s.clone());
            }
            if matches!(op, Op::Jmp(_) | Op::Br { .. } | Op::Ret(_) | Op::Raise { .. }) {
                break;
            }
            step(f, op, &mut s);
            i += 1;
        }
    }
    at
}

/// The effect of one (non-branch) op on the facts.
fn step(f: &Func, op: &Op, s: &mut Set) {
    let int = |v: &Var| f.ty(*v) == Some(Ty::Int);
    match op {
        Op::Const { dst, c } => s.put(*dst, matches!(c, Const::Int(k) if *k >= 0)),
        Op::Move { dst, src } => s.put(*dst, s.has(*src)),
        // Bool → int gives 0 or 1; int → int keeps the fact.
        Op::Cast { dst, src } => s.put(*dst, int(dst) && (f.ty(*src) == Some(Ty::Bool) || s.has(*src))),
        Op::IntBin { op, dst, a, b, .. } => {
            let (x, y) = (s.has(*a), s.has(*b));
            let r = match op {
                // Checked: an overflow raises instead of wrapping.
                IntOp::Add | IntOp::Mul | IntOp::FloorDiv => x && y,
                // Python's % has the sign of the divisor; & clears the sign bit if either does.
                IntOp::Mod => y,
                IntOp::BitAnd => x || y,
                IntOp::BitOr | IntOp::BitXor => x && y,
                // A logical shift of a non-negative value is one (by ≥ 1 it always is,
                // but counts are not tracked).
                IntOp::Shr | IntOp::ShrU => x,
                IntOp::Sub | IntOp::Shl | IntOp::Pow => false,
                // They wrap.
                IntOp::WrapAdd | IntOp::WrapSub | IntOp::WrapMul | IntOp::WrapShl => false,
            };
            s.put(*dst, r);
        }
        Op::IntMinMax { max, dst, a, b } => {
            let (x, y) = (s.has(*a), s.has(*b));
            s.put(*dst, if *max { x || y } else { x && y });
        }
        // abs(i64::MIN) raises.
        Op::IntAbs { dst, .. } | Op::Dim { dst, .. } | Op::Size { dst, .. } => s.put(*dst, true),
        // The counter moves by `step` from where it is; the loop leaves before it could wrap.
        Op::RangeNext { dst, a, step, .. } => {
            let keep = s.has(*a) && s.has(*step);
            s.put(*a, keep);
            s.put(*dst, false);
        }
        other => {
            for d in written(other) {
                s.put(d, false);
            }
        }
    }
}

/// The variables an op writes (for the ops `step` does not model).
fn written(op: &Op) -> Vec<Var> {
    match op {
        Op::Const { dst, .. }
        | Op::Move { dst, .. }
        | Op::Cast { dst, .. }
        | Op::IntBin { dst, .. }
        | Op::FloatBin { dst, .. }
        | Op::Cmp { dst, .. }
        | Op::Not { dst, .. }
        | Op::Neg { dst, .. }
        | Op::Invert { dst, .. }
        | Op::Truthy { dst, .. }
        | Op::Math { dst, .. }
        | Op::IntMinMax { dst, .. }
        | Op::IntAbs { dst, .. }
        | Op::Dim { dst, .. }
        | Op::Size { dst, .. }
        | Op::Load { dst, .. }
        | Op::NewTensor { dst, .. }
        | Op::CopyTensor { dst, .. }
        | Op::LoadPartial { dst, .. }
        | Op::RangeTest { dst, .. } => vec![*dst],
        Op::RangeNext { dst, a, .. } => vec![*dst, *a],
        Op::Call { dsts, .. } => dsts.clone(),
        Op::ParFor { first, rest, nrest, .. } => {
            let mut v = first.clone();
            v.push(*rest);
            v.push(*nrest);
            v
        }
        Op::Label(_) | Op::Store { .. } | Op::Jmp(_) | Op::Br { .. } | Op::Ret(_) | Op::Raise { .. } => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn func(vars: Vec<Ty>, params: Vec<Var>, ops: Vec<Op>) -> Func {
        Func {
            name: "f".into(),
            params,
            rets: Vec::new(),
            vars,
            ops,
            entry: true,
            chunk: false,
        }
    }

    fn masks(f: &Func) -> Vec<u8> {
        f.ops
            .iter()
            .filter_map(|op| match op {
                Op::Load { nonneg, .. } | Op::Store { nonneg, .. } => Some(*nonneg),
                _ => None,
            })
            .collect()
    }

    const T1: Ty = Ty::Tensor {
        dt: apsi_native_ir::ir::Dt::F64,
        ndim: 1,
        contig: true,
    };

    fn load(dst: Var, t: Var, i: Var) -> Op {
        Op::Load {
            dst,
            t,
            idx: vec![i],
            line: 0,
            nonneg: 0,
        }
    }

    /// `for i in range(len(x)): y = x[i]`, in the shape the lowering emits.
    fn range_loop(start: i64, step: i64) -> Func {
        // vars: 0 x, 1 counter, 2 stop, 3 step, 4 cond, 5 i, 6 y
        let ty = vec![T1, Ty::Int, Ty::Int, Ty::Int, Ty::Bool, Ty::Int, Ty::Float];
        let ops = vec![
            Op::Label(0),
            Op::Const {
                dst: 1,
                c: Const::Int(start),
            },
            Op::Dim { dst: 2, t: 0, axis: 0 },
            Op::Const {
                dst: 3,
                c: Const::Int(step),
            },
            Op::RangeTest {
                dst: 4,
                a: 1,
                stop: 2,
                step: 3,
                line: 0,
            },
            Op::Br {
                cond: 4,
                then: 1,
                els: 3,
            },
            Op::Label(1),
            Op::Move { dst: 5, src: 1 },
            load(6, 0, 5),
            Op::RangeNext {
                dst: 4,
                a: 1,
                stop: 2,
                step: 3,
            },
            Op::Br {
                cond: 4,
                then: 1,
                els: 3,
            },
            Op::Label(3),
            Op::Ret(Vec::new()),
        ];
        func(ty, vec![0], ops)
    }

    fn run(f: Func) -> Vec<u8> {
        let mut fs = vec![f];
        annotate(&mut fs);
        masks(&fs[0])
    }

    #[test]
    fn range_from_zero_up_is_non_negative() {
        assert_eq!(run(range_loop(0, 1)), vec![1]);
        assert_eq!(run(range_loop(3, 2)), vec![1]);
    }

    #[test]
    fn negative_start_or_step_keeps_the_wrap() {
        assert_eq!(run(range_loop(-3, 1)), vec![0]);
        assert_eq!(run(range_loop(5, -1)), vec![0]);
    }

    #[test]
    fn a_parameter_or_a_difference_is_not_known() {
        // vars: 0 x, 1 n (param), 2 len, 3 n - len, 4 y
        let ty = vec![T1, Ty::Int, Ty::Int, Ty::Int, Ty::Float, Ty::Float];
        let ops = vec![
            load(4, 0, 1),
            Op::Size { dst: 2, t: 0 },
            load(4, 0, 2),
            Op::IntBin {
                op: IntOp::Sub,
                dst: 3,
                a: 2,
                b: 2,
                line: 0,
            },
            load(4, 0, 3),
            Op::IntBin {
                op: IntOp::Mod,
                dst: 3,
                a: 1,
                b: 2,
                line: 0,
            },
            load(5, 0, 3),
            Op::Ret(Vec::new()),
        ];
        assert_eq!(run(func(ty, vec![0, 1], ops)), vec![0, 1, 0, 1]);
    }

    #[test]
    fn a_fact_must_hold_on_every_path() {
        // vars: 0 x, 1 i, 2 cond (param), 3 y; i = 0 on one branch, -1 on the other.
        let ty = vec![T1, Ty::Int, Ty::Bool, Ty::Float];
        let ops = vec![
            Op::Br {
                cond: 2,
                then: 1,
                els: 2,
            },
            Op::Label(1),
            Op::Const {
                dst: 1,
                c: Const::Int(0),
            },
            Op::Jmp(3),
            Op::Label(2),
            Op::Const {
                dst: 1,
                c: Const::Int(-1),
            },
            Op::Label(3),
            load(3, 0, 1),
            Op::Ret(Vec::new()),
        ];
        assert_eq!(run(func(ty, vec![0, 2], ops)), vec![0]);
    }

    #[test]
    fn a_chunk_gets_the_facts_of_its_loop() {
        // Parent: parallel for over range(0, len(x), 1) with x captured.
        let parent = func(
            vec![T1, Ty::Int, Ty::Int, Ty::Int, Ty::Ptr, Ty::Int],
            vec![0],
            vec![
                Op::Const {
                    dst: 1,
                    c: Const::Int(0),
                },
                Op::Dim { dst: 2, t: 0, axis: 0 },
                Op::Const {
                    dst: 3,
                    c: Const::Int(1),
                },
                Op::ParFor {
                    chunk: 1,
                    lo: 1,
                    hi: 2,
                    step: 3,
                    env: vec![0],
                    init_first: Vec::new(),
                    init_rest: Vec::new(),
                    first: Vec::new(),
                    rest: 4,
                    nrest: 5,
                    line: 0,
                },
                Op::Ret(Vec::new()),
            ],
        );
        // Chunk: params lo, hi, step, x; loads x[lo] and x[hi - lo].
        let chunk = |lo: i64| {
            let mut p = parent.clone();
            if let Op::Const { c, .. } = &mut p.ops[0] {
                *c = Const::Int(lo);
            }
            let mut c = func(
                vec![Ty::Int, Ty::Int, Ty::Int, T1, Ty::Float, Ty::Int],
                vec![0, 1, 2, 3],
                vec![
                    load(4, 3, 0),
                    Op::IntBin {
                        op: IntOp::Sub,
                        dst: 5,
                        a: 1,
                        b: 0,
                        line: 0,
                    },
                    load(4, 3, 5),
                    Op::Ret(Vec::new()),
                ],
            );
            c.chunk = true;
            let mut fs = vec![p, c];
            annotate(&mut fs);
            masks(&fs[1])
        };
        assert_eq!(chunk(0), vec![1, 0]);
        assert_eq!(chunk(-4), vec![0, 0]);
    }
}
