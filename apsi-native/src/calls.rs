//! Lowering of calls, methods, attributes and indexing: the prelude
//! functions of the native subset, calls to other `@native` functions, and
//! tensor element access.

use crate::lower::{native_target, FnLower, R};
use crate::types::{dt_of, T};
use apsi_core::api::tensor::as_dtype;
use apsi_core::api::Value;
use apsi_native_ir::ir::{Const, Dt, IntOp, MathFn, Op, Ty, Var};

fn any_unknown(l: &FnLower, st: &[T], regs: &[usize]) -> bool {
    !l.emit && regs.iter().any(|r| matches!(st.get(*r), Some(T::Unknown)))
}

fn unknown(st: &mut [T], dst: usize) -> R<()> {
    if let Some(x) = st.get_mut(dst) {
        *x = T::Unknown;
    }
    Ok(())
}

fn elem_t(dt: Dt) -> T {
    match dt {
        Dt::F64 | Dt::F32 => T::Float,
        Dt::I64 | Dt::I32 => T::Int,
        Dt::Bool => T::Bool,
    }
}

pub(crate) fn call(
    l: &mut FnLower,
    st: &mut [T],
    dst: usize,
    f: &Value,
    args: &[usize],
    kw: &[(String, usize)],
) -> R<()> {
    let mut regs: Vec<usize> = args.to_vec();
    regs.extend(kw.iter().map(|k| k.1));
    if any_unknown(l, st, &regs) {
        return unknown(st, dst);
    }
    if let Some(nf) = native_target(f) {
        if !kw.is_empty() {
            return Err(l.bad(format!(
                "keyword arguments in a call to the native function '{}'",
                nf.name()
            )));
        }
        let proto = nf.closure.proto.clone();
        if args.len() != proto.nparams as usize
            || !proto.simple && (proto.has_vararg || proto.has_kwarg || proto.nkwonly > 0)
        {
            return Err(l.bad(format!(
                "a call to the native function '{}' with {} arguments (native calls pass every parameter positionally)",
                nf.name(),
                args.len()
            )));
        }
        let mut ts = Vec::new();
        let mut vs = Vec::new();
        for a in args {
            let (t, v) = l.get(st, *a)?;
            if !matches!(t, T::Int | T::Float | T::Bool | T::Tensor(..) | T::Tuple(_)) {
                return Err(l.bad(format!(
                    "passing {} to the native function '{}'",
                    t.describe(),
                    nf.name()
                )));
            }
            ts.push(t);
            vs.extend(v);
        }
        let (id, rt) = l.s.callee(&proto, ts)?;
        if matches!(rt, T::Unknown) {
            return unknown(st, dst);
        }
        let dsts = l.slots(dst, &rt);
        l.push(Op::Call {
            func: id,
            args: vs,
            dsts,
        });
        if let Some(x) = st.get_mut(dst) {
            *x = rt;
        }
        return Ok(());
    }
    let name = match f {
        Value::Native(nf) => nf.name.to_string(),
        Value::Func(c) => {
            return Err(l.bad(format!(
                "a call to '{}', which is not @native (decorate it with @native)",
                c.name
            )));
        }
        other => return Err(l.bad(format!("calling a {}", other.type_name()))),
    };
    call_named(l, st, dst, &name, args, kw)
}

/// A call of the built-in `name` (`len`, `sqrt`, `zeros`…), its arguments'
/// types known. Also what the interpreter's `Len` instruction lowers to.
pub(crate) fn call_named(
    l: &mut FnLower,
    st: &mut [T],
    dst: usize,
    name: &str,
    args: &[usize],
    kw: &[(String, usize)],
) -> R<()> {
    if any_unknown(l, st, args) {
        return unknown(st, dst);
    }
    if let Some((k, _)) = kw
        .iter()
        .find(|(k, _)| !(k == "dtype" && matches!(name, "zeros" | "ones")))
    {
        return Err(l.bad(format!("the keyword argument {k}= of {name}()")));
    }
    let arity = |l: &FnLower, n: usize| -> R<()> {
        if args.len() != n {
            return Err(l.bad(format!(
                "{name}() with {} arguments (native code supports {n})",
                args.len()
            )));
        }
        Ok(())
    };
    let math1 = |mf: MathFn| Some(mf);
    let unary_float = match name {
        "sqrt" => math1(MathFn::Sqrt),
        "exp" => math1(MathFn::Exp),
        "log" => math1(MathFn::Log),
        "log2" => math1(MathFn::Log2),
        "log10" => math1(MathFn::Log10),
        "log1p" => math1(MathFn::Log1p),
        "sin" => math1(MathFn::Sin),
        "cos" => math1(MathFn::Cos),
        "tan" => math1(MathFn::Tan),
        "atan" => math1(MathFn::Atan),
        "sinh" => math1(MathFn::Sinh),
        "cosh" => math1(MathFn::Cosh),
        "tanh" => math1(MathFn::Tanh),
        _ => None,
    };
    if let Some(mf) = unary_float {
        arity(l, 1)?;
        let x = l.scalar_as(st, args[0], &T::Float)?;
        let d = l.math(mf, vec![x], Ty::Float);
        l.set(st, dst, T::Float, &[d]);
        return Ok(());
    }
    match name {
        "len" => {
            arity(l, 1)?;
            let (t, v) = l.get(st, args[0])?;
            match t {
                T::Tensor(_, nd, _) if nd >= 1 => {
                    let d = l.new_var(Ty::Int);
                    l.push(Op::Dim {
                        dst: d,
                        t: v[0],
                        axis: 0,
                    });
                    l.set(st, dst, T::Int, &[d]);
                }
                T::Tuple(ts) => {
                    let c = l.konst(Const::Int(ts.len() as i64));
                    l.set(st, dst, T::Int, &[c]);
                }
                other => return Err(l.bad(format!("len() of {}", other.describe()))),
            }
        }
        "zeros" | "ones" => {
            arity(l, 1)?;
            let dt = match kw.first() {
                None => Dt::F64,
                Some((_, r)) => match st.get(*r) {
                    Some(T::Const(v)) => as_dtype(v).and_then(dt_of).ok_or_else(|| {
                        l.bad(format!(
                            "{name}() with a dtype native code does not handle (f64, f32, i64, i32, bool)"
                        ))
                    })?,
                    _ => return Err(l.bad(format!("{name}() with a dtype that is not a constant"))),
                },
            };
            let (t, v) = l.get(st, args[0])?;
            let dims: Vec<Var> = match &t {
                T::Int => v.clone(),
                T::Tuple(ts)
                    if !ts.is_empty()
                        && ts.len() <= apsi_native_ir::abi::MAX_DIMS
                        && ts.iter().all(|x| matches!(x, T::Int)) =>
                {
                    v.clone()
                }
                other => {
                    return Err(l.bad(format!(
                        "{name}() with the shape {} (a tuple of ints is needed)",
                        other.describe()
                    )))
                }
            };
            let line = l.line();
            let rt = T::Tensor(dt, dims.len() as u8, true);
            let d = l.new_var(rt.leaf_types()[0]);
            l.push(Op::NewTensor {
                dst: d,
                dims,
                ones: name == "ones",
                line,
            });
            l.set(st, dst, rt, &[d]);
        }
        "abs" => {
            arity(l, 1)?;
            let (t, _) = l.get(st, args[0])?;
            let line = l.line();
            if matches!(t, T::Float) {
                let x = l.scalar_as(st, args[0], &T::Float)?;
                let d = l.new_var(Ty::Float);
                l.push(Op::Math {
                    f: MathFn::Abs,
                    dst: d,
                    args: vec![x],
                    line,
                });
                l.set(st, dst, T::Float, &[d]);
            } else {
                let x = l.scalar_as(st, args[0], &T::Int)?;
                let d = l.new_var(Ty::Int);
                l.push(Op::IntAbs { dst: d, src: x, line });
                l.set(st, dst, T::Int, &[d]);
            }
        }
        "floor" | "ceil" => {
            arity(l, 1)?;
            let (t, _) = l.get(st, args[0])?;
            if matches!(t, T::Float) {
                let x = l.scalar_as(st, args[0], &T::Float)?;
                let mf = if name == "floor" { MathFn::Floor } else { MathFn::Ceil };
                let d = l.math(mf, vec![x], Ty::Int);
                l.set(st, dst, T::Int, &[d]);
            } else {
                let x = l.scalar_as(st, args[0], &T::Int)?;
                l.set(st, dst, T::Int, &[x]);
            }
        }
        "min" | "max" | "minimum" | "maximum" => {
            arity(l, 2)?;
            let (ta, _) = l.get(st, args[0])?;
            let (tb, _) = l.get(st, args[1])?;
            let py = matches!(name, "min" | "max");
            let is_max = name.ends_with("ax") || name == "maximum";
            if matches!(ta, T::Int | T::Bool) && matches!(tb, T::Int | T::Bool) && py {
                let x = l.scalar_as(st, args[0], &T::Int)?;
                let y = l.scalar_as(st, args[1], &T::Int)?;
                let d = l.new_var(Ty::Int);
                l.push(Op::IntMinMax {
                    max: is_max,
                    dst: d,
                    a: x,
                    b: y,
                });
                l.set(st, dst, T::Int, &[d]);
            } else if matches!(ta, T::Float) && matches!(tb, T::Float) || !py && ta.is_num() && tb.is_num() {
                let x = l.scalar_as(st, args[0], &T::Float)?;
                let y = l.scalar_as(st, args[1], &T::Float)?;
                let mf = match (py, is_max) {
                    (true, true) => MathFn::Max,
                    (true, false) => MathFn::Min,
                    (false, true) => MathFn::Maximum,
                    (false, false) => MathFn::Minimum,
                };
                let d = l.math(mf, vec![x, y], Ty::Float);
                l.set(st, dst, T::Float, &[d]);
            } else {
                return Err(l.bad(format!(
                    "{name}() of {} and {} (its result type would depend on the values: convert with float())",
                    ta.describe(),
                    tb.describe()
                )));
            }
        }
        "float" => {
            arity(l, 1)?;
            let x = l.scalar_as(st, args[0], &T::Float)?;
            l.set(st, dst, T::Float, &[x]);
        }
        "int" => {
            arity(l, 1)?;
            let (t, _) = l.get(st, args[0])?;
            if matches!(t, T::Float) {
                // int(x) truncates toward zero: floor for x >= 0, ceil below.
                let x = l.scalar_as(st, args[0], &T::Float)?;
                let line = l.line();
                let zero = l.konst(Const::Float(0.0f64.to_bits()));
                let neg = l.new_var(Ty::Bool);
                l.push(Op::Cmp {
                    op: apsi_native_ir::ir::CmpOp::Lt,
                    dst: neg,
                    a: x,
                    b: zero,
                });
                let (lneg, lpos, ldone) = (l.label(), l.label(), l.label());
                let d = l.new_var(Ty::Int);
                l.push(Op::Br {
                    cond: neg,
                    then: lneg,
                    els: lpos,
                });
                l.push(Op::Label(lneg));
                l.push(Op::Math {
                    f: MathFn::Ceil,
                    dst: d,
                    args: vec![x],
                    line,
                });
                l.push(Op::Jmp(ldone));
                l.push(Op::Label(lpos));
                l.push(Op::Math {
                    f: MathFn::Floor,
                    dst: d,
                    args: vec![x],
                    line,
                });
                l.push(Op::Jmp(ldone));
                l.push(Op::Label(ldone));
                l.set(st, dst, T::Int, &[d]);
            } else {
                let x = l.scalar_as(st, args[0], &T::Int)?;
                l.set(st, dst, T::Int, &[x]);
            }
        }
        "bool" => {
            arity(l, 1)?;
            let c = l.truth(st, args[0])?;
            l.set(st, dst, T::Bool, &[c]);
        }
        "isnan" | "isinf" => {
            arity(l, 1)?;
            let x = l.scalar_as(st, args[0], &T::Float)?;
            let mf = if name == "isnan" { MathFn::IsNan } else { MathFn::IsInf };
            let d = l.math(mf, vec![x], Ty::Bool);
            l.set(st, dst, T::Bool, &[d]);
        }
        "atan2" | "hypot" => {
            arity(l, 2)?;
            let x = l.scalar_as(st, args[0], &T::Float)?;
            let y = l.scalar_as(st, args[1], &T::Float)?;
            let mf = if name == "atan2" { MathFn::Atan2 } else { MathFn::Hypot };
            let d = l.math(mf, vec![x, y], Ty::Float);
            l.set(st, dst, T::Float, &[d]);
        }
        "round" => {
            if args.len() == 2 {
                return Err(l.bad("round() with ndigits (native code has round(x), which gives an int)"));
            }
            arity(l, 1)?;
            let (t, _) = l.get(st, args[0])?;
            match t {
                T::Float => {
                    let x = l.scalar_as(st, args[0], &T::Float)?;
                    let d = l.math(MathFn::Round, vec![x], Ty::Int);
                    l.set(st, dst, T::Int, &[d]);
                }
                T::Int | T::Bool => {
                    let x = l.scalar_as(st, args[0], &T::Int)?;
                    l.set(st, dst, T::Int, &[x]);
                }
                other => return Err(l.bad(format!("round() of {}", other.describe()))),
            }
        }
        "wrapping_add" | "wrapping_sub" | "wrapping_mul" | "wrapping_shl" | "shr_u" => {
            arity(l, 2)?;
            let (op, params) = match name {
                "wrapping_add" => (IntOp::WrapAdd, ["a", "b"]),
                "wrapping_sub" => (IntOp::WrapSub, ["a", "b"]),
                "wrapping_mul" => (IntOp::WrapMul, ["a", "b"]),
                "wrapping_shl" => (IntOp::WrapShl, ["x", "k"]),
                _ => (IntOp::ShrU, ["x", "k"]),
            };
            let mut xs = Vec::new();
            for (r, p) in args.iter().zip(params) {
                let (t, _) = l.get(st, *r)?;
                match t {
                    T::Int | T::Bool => xs.push(l.scalar_as(st, *r, &T::Int)?),
                    T::Tensor(..) => {
                        return Err(l.bad(format!(
                            "{name}() of {} (whole-tensor arithmetic is not native: write the loop)",
                            t.describe()
                        )))
                    }
                    other => {
                        return Err(l.bad(format!(
                            "{name}() of {} (argument '{p}' must be an int)",
                            other.describe()
                        )))
                    }
                }
            }
            let line = l.line();
            let d = l.new_var(Ty::Int);
            l.push(Op::IntBin {
                op,
                dst: d,
                a: xs[0],
                b: xs[1],
                line,
            });
            l.set(st, dst, T::Int, &[d]);
        }
        "range" => return Err(l.bad("range() outside a for loop header")),
        other => return Err(l.bad(format!("a call to {other}() (not in the native subset)"))),
    }
    Ok(())
}

pub(crate) fn method(l: &mut FnLower, st: &mut [T], dst: usize, recv: usize, name: &str, args: &[usize]) -> R<()> {
    if any_unknown(l, st, &[recv]) {
        return unknown(st, dst);
    }
    let (t, v) = l.get(st, recv)?;
    match (&t, name) {
        (T::Tensor(..), "copy") if args.is_empty() => {
            let line = l.line();
            let rt = match t {
                T::Tensor(dt, nd, _) => T::Tensor(dt, nd, true),
                _ => t.clone(),
            };
            let d = l.new_var(rt.leaf_types()[0]);
            l.push(Op::CopyTensor {
                dst: d,
                src: v[0],
                line,
            });
            l.set(st, dst, rt, &[d]);
            Ok(())
        }
        _ => Err(l.bad(format!("the method .{name}() of {}", t.describe()))),
    }
}

pub(crate) fn attr(l: &mut FnLower, st: &mut [T], dst: usize, obj: usize, name: &str) -> R<()> {
    if any_unknown(l, st, &[obj]) {
        return unknown(st, dst);
    }
    let (t, v) = l.get(st, obj)?;
    let T::Tensor(_, nd, _) = t else {
        return Err(l.bad(format!("the attribute .{name} of {}", t.describe())));
    };
    match name {
        "shape" => {
            let mut ds = Vec::new();
            for axis in 0..nd {
                let d = l.new_var(Ty::Int);
                l.push(Op::Dim { dst: d, t: v[0], axis });
                ds.push(d);
            }
            l.set(st, dst, T::Tuple(vec![T::Int; nd as usize]), &ds);
        }
        "ndim" => {
            let c = l.konst(Const::Int(nd as i64));
            l.set(st, dst, T::Int, &[c]);
        }
        "size" => {
            let d = l.new_var(Ty::Int);
            l.push(Op::Size { dst: d, t: v[0] });
            l.set(st, dst, T::Int, &[d]);
        }
        other => return Err(l.bad(format!("the tensor attribute .{other}"))),
    }
    Ok(())
}

/// The index variables for tensor `t` indexed by register `idx`.
fn tensor_index(l: &mut FnLower, st: &[T], nd: u8, idx: usize) -> R<Vec<Var>> {
    let (it, iv) = l.get(st, idx)?;
    let n = match &it {
        T::Int | T::Bool => 1,
        T::Tuple(ts) if ts.iter().all(|x| matches!(x, T::Int | T::Bool)) => ts.len(),
        other => {
            return Err(l.bad(format!(
                "indexing a tensor with {} (native code indexes one element with ints)",
                other.describe()
            )))
        }
    };
    if n != nd as usize {
        return Err(l.bad(format!(
            "indexing a {nd}-d tensor with {n} index(es): native code reads and writes single elements (a view is not native)"
        )));
    }
    let mut out = Vec::new();
    let leaves = it.leaf_types();
    for (k, v) in iv.iter().enumerate() {
        if leaves.get(k) == Some(&Ty::Bool) {
            let d = l.new_var(Ty::Int);
            l.push(Op::Cast { dst: d, src: *v });
            out.push(d);
        } else {
            out.push(*v);
        }
    }
    Ok(out)
}

pub(crate) fn index(l: &mut FnLower, st: &mut [T], dst: usize, obj: usize, idx: usize) -> R<()> {
    if any_unknown(l, st, &[obj, idx]) {
        return unknown(st, dst);
    }
    let (t, v) = l.get(st, obj)?;
    match t {
        T::Tensor(dt, nd, _) => {
            let iv = tensor_index(l, st, nd, idx)?;
            let line = l.line();
            let et = elem_t(dt);
            let d = l.new_var(et.leaf_types()[0]);
            l.push(Op::Load {
                dst: d,
                t: v[0],
                idx: iv,
                line,
                nonneg: 0,
            });
            l.set(st, dst, et, &[d]);
            Ok(())
        }
        T::Tuple(ts) => {
            let Some(k) = l.const_int_before(idx as u16) else {
                return Err(l.bad("indexing a tuple with a non-constant index"));
            };
            let n = ts.len() as i64;
            let k = if k < 0 { k + n } else { k };
            if k < 0 || k >= n {
                return Err(l.bad("a tuple index out of range"));
            }
            let mut off = 0;
            for (i, t) in ts.iter().enumerate() {
                let w = t.leaf_types().len();
                if i as i64 == k {
                    let part: Vec<Var> = v.get(off..off + w).map(|s| s.to_vec()).unwrap_or_default();
                    l.set(st, dst, t.clone(), &part);
                    return Ok(());
                }
                off += w;
            }
            Err(l.bad("a tuple index out of range"))
        }
        other => Err(l.bad(format!("indexing {}", other.describe()))),
    }
}

pub(crate) fn set_index(l: &mut FnLower, st: &mut [T], obj: usize, idx: usize, val: usize) -> R<()> {
    if any_unknown(l, st, &[obj, idx, val]) {
        return Ok(());
    }
    let (t, v) = l.get(st, obj)?;
    let T::Tensor(dt, nd, _) = t else {
        return Err(l.bad(format!("an item assignment to {}", t.describe())));
    };
    let iv = tensor_index(l, st, nd, idx)?;
    let (vt, _) = l.get(st, val)?;
    let want = elem_t(dt);
    let ok = matches!(
        (&want, &vt),
        (T::Float, T::Float | T::Int | T::Bool) | (T::Int, T::Int | T::Bool) | (T::Bool, T::Bool)
    );
    if !ok {
        return Err(l.bad(format!("storing {} into a {} tensor", vt.describe(), dt.name())));
    }
    let x = l.scalar_as(st, val, &want)?;
    let line = l.line();
    l.push(Op::Store {
        t: v[0],
        idx: iv,
        val: x,
        line,
        nonneg: 0,
    });
    Ok(())
}
