//! The out-of-line half of the dispatch loop: every instruction in full.
//!
//! `Executor::run` (in `exec.rs`) handles the hot cases inline — scalar
//! arithmetic and comparisons, jumps, loads, calls of simple closures,
//! returns, list and dict indexing — and hands every other instruction,
//! and every case whose fast path does not apply, to `Executor::slow`.
//! Keeping the rare and bulky cases out of the hot function lets the
//! compiler keep the loop's state (pc, register window, code) in machine
//! registers instead of spilling it around every dispatch.

use super::*;
use crate::code::{FuncProto, ProtoSlot};
use crate::value::ic::AttrCache;

/// `a op b` (`inplace`: `a op= b`) where an operand is a struct: its
/// operator methods run on this executor (no spare one needed).
fn struct_binary(ex: &mut Executor, op: BinOp, a: Value, b: Value, inplace: bool) -> VResult<Value> {
    let r = if inplace {
        ops::dunder::inplace_with(ex, op, &a, &b)
    } else {
        ops::dunder::binary_with(ex, op, &a, &b)
    };
    match r {
        Some(r) => r,
        None => ops::binary(op, &a, &b),
    }
}

/// `a op b` for operands the fast paths leave (mixed types, overflow,
/// module objects); where the instruction at `pc` was written `a op= b`
/// and `a` is a tensor, the result is written into `a` (`tensor::inplace`).
fn object_binary(code: &Code, pc: usize, op: BinOp, a: &Value, b: &Value) -> VResult<Value> {
    if matches!(a, Value::Object(_)) && code.is_inplace(pc) {
        if let Some(r) = crate::tensor::inplace::binary_inplace(op, a, b) {
            return r;
        }
    }
    ops::binary(op, a, b)
}

/// A list, set or dict: `a op= b` may change it in place (`ops::inplace`).
#[inline]
fn is_mutable_container(v: &Value) -> bool {
    matches!(v, Value::List(_) | Value::Set(_) | Value::Dict(_))
}

/// `dst = dst + t` for two strings where `dst`'s string has no other
/// holder: `t` is appended in place (amortised, as CPython does for a
/// string held by one variable), so a loop of `s += piece` is linear.
/// Returns whether it did; nobody can observe the difference.
#[inline]
fn append_str_in_place(dst: &mut Value, t: &Value) -> bool {
    match (dst, t) {
        (Value::Str(s), Value::Str(t)) => match s.get_mut() {
            Some(obj) => {
                obj.append(t);
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// What the dispatch loop does after an instruction ran here.
pub(super) enum Flow {
    /// Go on with the next instruction (`pc` may have jumped).
    Next,
    /// The frame stack changed (a call or a caught error): reload the top frame.
    Reload,
    /// Raise this error at the current instruction.
    Throw(Exc),
    /// The frame at depth `stop` returned this value.
    Return(Value),
    /// The error has already unwound to depth `stop` (or was raised by the
    /// frame at that depth on its way out): `run` returns it.
    Fail(Exc),
}

/// The function of a `def` bound lazily (`Instr::DefFunc`, a lazily
/// defined struct's methods): nothing is evaluated at such a `def`, so it
/// has no defaults and captures nothing. A prototype with either (damaged
/// bytes: the compiler never binds one lazily) makes a function that
/// raises.
#[inline(never)]
fn lazy_function(proto: &ProtoSlot) -> Value {
    let p = proto.get();
    let p = if p.ndefaults == 0 && p.kwonly_has_default.iter().all(|d| !d) && p.captures.is_empty() {
        p.clone()
    } else {
        Arc::new(FuncProto::unreadable(
            "a lazily defined function with defaults or captures",
        ))
    };
    Value::Func(Arc::new(Closure::new(
        p,
        Box::default(),
        Box::default(),
        Box::default(),
    )))
}

/// `DefFunc`: binds `globals[g]` lazily to a function of `protos[p]`;
/// false when the code has no such prototype or global. Kept out of the
/// slow path's body (it runs once per `def`).
#[cold]
#[inline(never)]
fn def_func(code: &Code, p: u16, g: u32) -> bool {
    let (Some(_), Some(slot)) = (code.protos.get(p as usize), code.globals.get(g as usize)) else {
        return false;
    };
    let protos = code.protos.clone();
    slot.set_lazy(Box::new(move || Some(lazy_function(&protos[usize::from(p)]))));
    true
}

/// `DefStruct`: binds `globals[g]` lazily to the struct of `structs[s]`
/// and its methods' prototypes (both read when the global is first
/// read); false when the code has no such struct or global. A struct
/// that cannot be read, or is not one `DefStruct` can make (it has a
/// parent or field defaults, or its methods' prototypes are not there),
/// leaves the global unbound.
#[cold]
#[inline(never)]
fn def_struct(code: &Code, s: u16, g: u32) -> bool {
    let (Some(_), Some(slot)) = (code.structs.get(s as usize), code.globals.get(g as usize)) else {
        return false;
    };
    let structs = code.structs.clone();
    let protos = code.protos.clone();
    slot.set_lazy(Box::new(move || {
        let sp = structs[usize::from(s)].get().ok()?;
        if sp.has_base || sp.has_default.iter().any(|d| *d) {
            return None;
        }
        let at = usize::from(sp.methods_at);
        let methods = protos.get(at..at + sp.methods.len())?;
        let funcs = methods.iter().map(lazy_function).collect();
        crate::ops::structs::make_struct_type(sp, funcs).ok()
    }));
    true
}

/// The value of a module global, or the `NameError` of reading it unbound.
fn read_global(slot: &crate::value::globals::GlobalSlot) -> VResult<Value> {
    let v = if slot.is_const {
        slot.get_const_or_make().cloned()
    } else {
        slot.get()
    };
    v.ok_or_else(|| err(ErrorKind::NameError, format!("name '{}' is not defined", slot.name)))
}

/// `T.name` (`on_type`: a method, static method or constant of the struct
/// type) or `obj.name` (not: a constant, the name being no field, method,
/// property or static method of the instance's type) through the
/// instruction's cache (`value/ic.rs`); `None` sends the read down the
/// general path, errors included. The lookup order is `type_attr`'s and
/// `get_attr`'s.
fn const_cached(t: &StructType, name: &str, ic: Option<&AttrCache>, on_type: bool) -> Option<Value> {
    let ic = ic?;
    let hit = ic.get(t.id).filter(|h| on_type || matches!(h, Hit::Const(_)));
    if let Some(w) = type_attr_hit(t, hit) {
        return Some(w.into_value());
    }
    if on_type {
        if let Some((i, _, v)) = t.methods.get_full(name) {
            ic.set(t.id, Hit::Method(i));
            return Some(v.clone());
        }
        if let Some((i, _, v)) = t.statics.get_full(name) {
            ic.set(t.id, Hit::Static(i));
            return Some(v.clone());
        }
    } else if t.field_index(name).is_some() || t.methods.contains_key(name) || t.statics.contains_key(name) {
        return None;
    }
    if t.properties.contains_key(name) {
        return None;
    }
    let consts = t.consts.read();
    let (i, _, v) = consts.get_full(name)?;
    ic.set(t.id, Hit::Const(i));
    Some(v.clone())
}

/// The value a cache word names on the struct type `t` itself: its
/// constant, method or static method `i` (`None` for any other word).
///
/// The copy comes back as its parts (`Value::words`): the dispatch loop
/// stores them into a register part by part (a `Value` returned through
/// memory, written by parts, is read back whole: a store-forwarding stall).
#[inline]
pub(super) fn type_attr_hit(t: &StructType, hit: Option<Hit>) -> Option<Words> {
    match hit? {
        Hit::Const(i) => type_const(t, i),
        Hit::Method(i) => t.methods.get_index(i).map(|(_, v)| v.words()),
        Hit::Static(i) => t.statics.get_index(i).map(|(_, v)| v.words()),
        _ => None,
    }
}

/// Constant `i` of a struct type (`Direction.FORWARD`, `self.RATE`), as
/// its parts.
#[inline(always)]
pub(super) fn type_const(t: &StructType, i: usize) -> Option<Words> {
    t.consts.read().get_index(i).map(|(_, v)| v.words())
}

/// `module.name` when the instruction's cache knows the module: the
/// attribute at the cached index (attributes are only ever added).
/// The attributes' lock is a `VLock`: no locked instruction while one
/// thread runs Apsi code.
#[inline]
pub(super) fn module_attr_hit(m: &ModuleObj, ic: Option<&AttrCache>) -> Option<Words> {
    match ic?.get(m.id)? {
        Hit::Static(i) => m.attrs.read().get_index(i).map(|(_, v)| v.words()),
        _ => None,
    }
}

/// `module.name` through the cache, filling it on a miss; `None` when
/// the module has no such attribute (the general path reports it).
fn module_attr(m: &ModuleObj, name: &str, ic: Option<&AttrCache>) -> Option<Value> {
    if let Some(w) = module_attr_hit(m, ic) {
        return Some(w.into_value());
    }
    let (i, v) = m.attrs.read().get_full(name).map(|(i, _, v)| (i, v.clone()))?;
    if let Some(ic) = ic {
        ic.set(m.id, Hit::Static(i));
    }
    Some(v)
}

/// The string constant `k` (a variable's name).
fn const_name(code: &Code, k: u16) -> String {
    match code.consts.get(k as usize) {
        Some(Value::Str(s)) => s.as_str().to_string(),
        _ => "?".to_string(),
    }
}

/// The `NameError` for reading cell `c` (a captured one when `free`) after `del`.
#[cold]
fn deleted_cell(code: &Code, c: u16, free: bool) -> Exc {
    let names = if free { &code.free_names } else { &code.cell_names };
    let name = names.get(c as usize).map(|n| n.to_string());
    let msg = match (name, free) {
        (Some(n), false) => format!("cannot access local variable '{n}' where it is not associated with a value"),
        (Some(n), true) => {
            format!("cannot access free variable '{n}' where it is not associated with a value in enclosing scope")
        }
        (None, _) => "cannot access a variable that was deleted with 'del'".to_string(),
    };
    err(ErrorKind::NameError, msg)
}

impl Executor {
    /// Run one instruction of the top frame in full. `pc_io` is the
    /// index after `ins` on entry and the next one to run on exit.
    #[inline(never)]
    pub(super) fn slow(&mut self, ins: Instr, pc_io: &mut usize, stop: usize) -> Flow {
        // The top frame's fields are read one by one, as `run` does (it
        // may just have been written field by field).
        let Some(top) = self.frames.last() else {
            return Flow::Throw(err(ErrorKind::Error, "internal error: no frame"));
        };
        let (clo, code, base, cell_base) = (top.clo, top.code, top.base as usize, top.cell_base as usize);
        // SAFETY: the closure is kept alive by its stack slot (see module invariants).
        let clo: &Closure = unsafe { &*clo };
        let code: &Code = unsafe { &*code };
        let instrs: &[Instr] = &code.instrs;
        let mut pc = *pc_io;
        let mut regs: *mut Value = unsafe { self.stack.as_mut_ptr().add(base) };

        macro_rules! exit {
            ($f:expr) => {{
                *pc_io = pc;
                return $f;
            }};
        }
        macro_rules! r {
            ($i:expr) => {
                // SAFETY: the compiler keeps every register below `nregs`,
                // and push_frame reserved `base + nregs` slots.
                unsafe { &mut *regs.add($i as usize) }
            };
        }
        macro_rules! save_pc {
            () => {
                if let Some(f) = self.frames.last_mut() {
                    f.pc = pc as u32;
                }
            };
        }
        macro_rules! throw {
            ($e:expr) => {{
                let e: Exc = $e;
                exit!(Flow::Throw(e));
            }};
        }
        macro_rules! tri {
            ($x:expr) => {
                match $x {
                    Ok(v) => v,
                    Err(e) => throw!(e),
                }
            };
        }
        macro_rules! refresh {
            () => {
                regs = unsafe { self.stack.as_mut_ptr().add(base) };
            };
        }
        // `x op y` where an operand is a struct: its operator method runs on
        // this executor, whose stack may move (operands are owned copies).
        macro_rules! struct_bin {
            ($op:expr, $x:expr, $y:expr) => {{
                let (x, y) = ($x, $y);
                let inplace = code.is_inplace(pc - 1);
                save_pc!();
                // A plain Apsi method runs as a frame on this loop (`frames.rs`).
                match self.push_op_frame($op, &x, &y, inplace, code.ic_at(pc - 1)) {
                    Some(Ok(())) => exit!(Flow::Reload),
                    Some(Err(e)) => throw!(e),
                    None => {}
                }
                let res = struct_binary(self, $op, x, y, inplace);
                refresh!();
                tri!(res)
            }};
        }
        // `a op= b` on a list, set or dict: the container changes in place
        // (`ops::inplace`); the right operand may be iterated (Apsi code), so
        // both are owned copies and the registers are reloaded after.
        // `None` when the operation is not one of those.
        macro_rules! container_inplace {
            ($op:expr, $x:expr, $y:expr) => {{
                let (x, y): (Value, Value) = ($x, $y);
                save_pc!();
                let res = ops::inplace::container(self, $op, &x, &y);
                refresh!();
                match res {
                    Some(Ok(())) => Some(x),
                    Some(Err(e)) => throw!(e),
                    None => None,
                }
            }};
        }
        // `b op c` for operands the fast paths leave: in place for a
        // container the instruction writes back (`a op= b`), else
        // `object_binary`.
        macro_rules! object_bin {
            ($op:expr, $b:expr, $c:expr) => {{
                let done = if code.is_inplace(pc - 1) && is_mutable_container(r!($b)) {
                    container_inplace!($op, dup(r!($b)), dup(r!($c)))
                } else {
                    None
                };
                match done {
                    Some(v) => v,
                    None => tri!(object_binary(code, pc - 1, $op, r!($b), r!($c))),
                }
            }};
        }
        // Call `f` with the collected arguments; its result lands in `a`.
        macro_rules! call_with {
            ($a:expr, $f:expr, $pos:expr, $kw:expr) => {{
                let res = self.setup_call(base + $a as usize, $f, $pos, $kw);
                refresh!();
                match res {
                    Ok(None) => exit!(Flow::Reload),
                    Ok(Some(v)) => setv(r!($a), v),
                    Err(e) => throw!(e),
                }
            }};
        }
        macro_rules! do_call {
            ($a:expr, $n:expr) => {{
                save_pc!();
                let fpos = base + $a as usize;
                match self.call_at(fpos, $n as usize) {
                    Ok(None) => exit!(Flow::Reload),
                    Ok(Some(v)) => {
                        refresh!();
                        setv(r!($a), v);
                    }
                    Err(e) => throw!(e),
                }
            }};
        }

        #[cfg(feature = "opstats")]
        crate::vm::opstats::count(&ins, true);
        #[cfg(feature = "opstats")]
        crate::vm::opstats::count_site(code, pc.saturating_sub(1), &ins);
        match ins {
            Instr::Nop => {}
            Instr::Move { a, b } => {
                if a != b {
                    copy_to(r!(a), r!(b));
                }
            }
            Instr::LoadK { a, k } => {
                setv(r!(a), code.consts.get(k as usize).cloned().unwrap_or(Value::None));
            }
            Instr::LoadInt { a, v } => setv(r!(a), Value::Int(v as i64)),
            Instr::LoadNone { a } => setv(r!(a), Value::None),
            Instr::LoadBool { a, v } => setv(r!(a), Value::Bool(v)),
            Instr::GetGlobal { a, g } => {
                let Some(slot) = code.globals.get(g as usize) else {
                    throw!(err(ErrorKind::Error, "internal error: bad global"))
                };
                let v = tri!(read_global(slot));
                setv(r!(a), v);
            }
            Instr::SetGlobal { a, g } => {
                let Some(slot) = code.globals.get(g as usize) else {
                    throw!(err(ErrorKind::Error, "internal error: bad global"))
                };
                slot.set(dup(r!(a)));
            }
            Instr::GetCell { a, c } => {
                let v = match self.cells.get(cell_base + c as usize) {
                    Some(cell) => cell.get(),
                    None => throw!(err(ErrorKind::Error, "internal error: bad cell")),
                };
                if matches!(v, Value::Unbound) {
                    throw!(deleted_cell(code, c, false));
                }
                setv(r!(a), v);
            }
            Instr::SetCell { a, c } => {
                let v = dup(r!(a));
                match self.cells.get(cell_base + c as usize) {
                    Some(cell) => cell.set(v),
                    None => throw!(err(ErrorKind::Error, "internal error: bad cell")),
                }
            }
            Instr::GetFree { a, c } => match clo.free.get(c as usize) {
                Some(cell) => {
                    let v = cell.get();
                    if matches!(v, Value::Unbound) {
                        throw!(deleted_cell(code, c, true));
                    }
                    setv(r!(a), v)
                }
                None => throw!(err(ErrorKind::Error, "internal error: bad free variable")),
            },
            Instr::SetFree { a, c } => match clo.free.get(c as usize) {
                Some(cell) => cell.set(dup(r!(a))),
                None => throw!(err(ErrorKind::Error, "internal error: bad free variable")),
            },
            Instr::MakeCell { a, c: _ } => {
                let v = if a == NO_REG { Value::None } else { dup(r!(a)) };
                self.cells.push(Arc::new(Cell::new(v)));
            }
            // The scalar fast paths are in `run`; here: mixed types, overflow, objects.
            Instr::Add { a, b, c } | Instr::Sub { a, b, c } => {
                let op = if matches!(ins, Instr::Add { .. }) {
                    BinOp::Add
                } else {
                    BinOp::Sub
                };
                let v = match bin_fast(op, r!(b), r!(c)) {
                    Some(v) => v,
                    None if matches!(&*r!(b), Value::Struct(_)) || matches!(&*r!(c), Value::Struct(_)) => {
                        struct_bin!(op, dup(r!(b)), dup(r!(c)))
                    }
                    // `s = s + t` (or `s += t`) where no one else holds `s`'s string.
                    None if op == BinOp::Add && a == b && b != c && append_str_in_place(r!(b), r!(c)) => {
                        exit!(Flow::Next);
                    }
                    None => object_bin!(op, b, c),
                };
                setv(r!(a), v);
            }
            Instr::Mul { a, b, c } | Instr::MulT { a, b, c } => {
                let has_object = matches!(&*r!(b), Value::Object(_)) || matches!(&*r!(c), Value::Object(_));
                if let (Instr::MulT { .. }, true) = (ins, has_object) {
                    // `x * y + z` on tensors: one fused pass (see Instr::MulT).
                    // Scalars never look ahead (mixed int/float products stay cheap).
                    if let Some((skip, d, rz, load)) = mul_add_partner(instrs, pc, a) {
                        let z = match load {
                            Some(Instr::GetGlobal { g, .. }) => code.globals.get(g as usize).and_then(|s| {
                                if s.is_const {
                                    s.get_const_or_make().cloned()
                                } else {
                                    s.get()
                                }
                            }),
                            Some(Instr::LoadK { k, .. }) => code.consts.get(k as usize).cloned(),
                            _ => Some(dup(r!(rz))),
                        };
                        if let Some(v) = z.as_ref().and_then(|z| crate::tensor::fused::mul_add(r!(b), r!(c), z)) {
                            if let (Some(_), Some(z)) = (load, z) {
                                setv(r!(rz), z);
                            }
                            setv(r!(d), v);
                            pc += skip;
                            exit!(Flow::Next);
                        }
                    }
                }
                let v = match bin_fast(BinOp::Mul, r!(b), r!(c)) {
                    Some(v) => v,
                    None if matches!(&*r!(b), Value::Struct(_)) || matches!(&*r!(c), Value::Struct(_)) => {
                        struct_bin!(BinOp::Mul, dup(r!(b)), dup(r!(c)))
                    }
                    None => object_bin!(BinOp::Mul, b, c),
                };
                setv(r!(a), v);
            }
            Instr::AddI { a, b, v } => {
                match &*r!(b) {
                    Value::Int(x) => {
                        if let Some(s) = x.checked_add(v as i64) {
                            setv(r!(a), Value::Int(s));
                            exit!(Flow::Next);
                        }
                    }
                    Value::Float(x) => {
                        let f = x + v as f64;
                        setv(r!(a), Value::Float(f));
                        exit!(Flow::Next);
                    }
                    _ => {}
                }
                // `x + v`, or `x - k` written as `AddI` with v = -k.
                let (op, k) = if code.is_sub_addi(pc - 1) {
                    (BinOp::Sub, -(v as i64))
                } else {
                    (BinOp::Add, v as i64)
                };
                if matches!(&*r!(b), Value::Struct(_)) {
                    let res = struct_bin!(op, dup(r!(b)), Value::Int(k));
                    setv(r!(a), res);
                    exit!(Flow::Next);
                }
                if code.is_inplace(pc - 1) && is_mutable_container(r!(b)) {
                    // `xs += 1`: what `xs += it` says of an int (not iterable).
                    if let Some(v) = container_inplace!(op, dup(r!(b)), Value::Int(k)) {
                        setv(r!(a), v);
                        exit!(Flow::Next);
                    }
                }
                if matches!(&*r!(b), Value::Object(_)) && code.is_inplace(pc - 1) {
                    if let Some(r) = crate::tensor::inplace::binary_inplace(op, r!(b), &Value::Int(k)) {
                        let res = tri!(r);
                        setv(r!(a), res);
                        exit!(Flow::Next);
                    }
                }
                let res = tri!(ops::binary(op, r!(b), &Value::Int(k)));
                setv(r!(a), res);
            }
            Instr::Bin { op, a, b, c } => {
                let v = match bin_fast(op, r!(b), r!(c)) {
                    Some(v) => v,
                    None if matches!(&*r!(b), Value::Struct(_)) || matches!(&*r!(c), Value::Struct(_)) => {
                        struct_bin!(op, dup(r!(b)), dup(r!(c)))
                    }
                    None => object_bin!(op, b, c),
                };
                setv(r!(a), v);
            }
            Instr::Unary { op, a, b } => {
                let v = match (op, &*r!(b)) {
                    (UnaryOp::Not, x) => Value::Bool(!tri!(x.truthy())),
                    (UnaryOp::Neg, Value::Int(x)) if *x != i64::MIN => Value::Int(-*x),
                    (UnaryOp::Neg, Value::Float(x)) => Value::Float(-*x),
                    (op, Value::Struct(_)) => {
                        let x = dup(r!(b));
                        save_pc!();
                        match self.push_unary_frame(op, &x) {
                            Some(Ok(())) => exit!(Flow::Reload),
                            Some(Err(e)) => throw!(e),
                            None => tri!(ops::unary(op, &x)),
                        }
                    }
                    (op, x) => tri!(ops::unary(op, x)),
                };
                setv(r!(a), v);
            }
            // (A struct's plain comparison method was pushed as a frame by
            // `run`, which tries that before coming here.)
            Instr::Cmp { op, a, b, c } => {
                let v = match cmp_fast(op, r!(b), r!(c)) {
                    Some(v) => Value::Bool(v),
                    // Objects (tensors) may compare elementwise.
                    None if matches!(op, CmpOp::Is | CmpOp::IsNot) => Value::Bool(tri!(compare(op, r!(b), r!(c)))),
                    None => tri!(ops::compare_value(op, r!(b), r!(c))),
                };
                setv(r!(a), v);
            }
            Instr::CmpJmp { op, a, b, jt } => {
                let v = match cmp_fast(op, r!(a), r!(b)) {
                    Some(v) => v,
                    None => tri!(compare(op, r!(a), r!(b))),
                };
                if v == jt {
                    pc = jump_target(instrs, pc);
                } else {
                    pc += 1;
                }
            }
            Instr::CmpJmpNone { a, jt } => {
                if matches!(*r!(a), Value::None) == jt {
                    pc = jump_target(instrs, pc);
                } else {
                    pc += 1;
                }
            }
            Instr::CmpI { op, a, b, v } => {
                let y = Value::Int(v as i64);
                let v = match cmp_fast(op, r!(b), &y) {
                    Some(v) => Value::Bool(v),
                    // Objects (tensors) may compare elementwise.
                    None => tri!(ops::compare_value(op, r!(b), &y)),
                };
                setv(r!(a), v);
            }
            Instr::CmpJmpI { op, a, v, jt } => {
                let res = match &*r!(a) {
                    Value::Int(x) => cmp_int(op, *x, v as i64),
                    other => tri!(compare(op, other, &Value::Int(v as i64))),
                };
                if res == jt {
                    pc = jump_target(instrs, pc);
                } else {
                    pc += 1;
                }
            }
            Instr::Jmp { t } => pc = t as usize,
            Instr::JmpIf { a, t } => {
                let b = match &*r!(a) {
                    Value::Bool(b) => *b,
                    other => tri!(other.truthy()),
                };
                if b {
                    pc = t as usize;
                }
            }
            Instr::JmpIfNot { a, t } => {
                let b = match &*r!(a) {
                    Value::Bool(b) => *b,
                    other => tri!(other.truthy()),
                };
                if !b {
                    pc = t as usize;
                }
            }
            Instr::Call { a, n } => do_call!(a, n),
            Instr::CallK { a, k, n } => {
                let Some(f) = code.consts.get(k as usize) else {
                    throw!(err(ErrorKind::Error, "internal error: bad constant"))
                };
                if let Value::Native(nf) = f {
                    // The constant table (alive as long as this code) owns the function.
                    let nf: *const NativeFn = Arc::as_ptr(nf);
                    save_pc!();
                    let args: Args = (1..=n as usize).map(|i| take(r!(a as usize + i))).collect();
                    // SAFETY: see above; natives cannot free this code's constants.
                    let nf = unsafe { &*nf };
                    flush_before(&self.shared, nf);
                    let res = nf.call(self, &args, &[]);
                    refresh!();
                    match res {
                        Ok(v) => setv(r!(a), v),
                        Err(e) => throw!(e),
                    }
                } else {
                    setv(r!(a), dup(f));
                    do_call!(a, n)
                }
            }
            Instr::CallGlobal { a, g, n } => {
                let Some(slot) = code.globals.get(g as usize) else {
                    throw!(err(ErrorKind::Error, "internal error: bad global"))
                };
                // (`run` calls a write-once simple function itself.)
                let v = tri!(read_global(slot));
                setv(r!(a), v);
                do_call!(a, n)
            }
            Instr::CallKw { a, n, k } => {
                save_pc!();
                let names = match code.consts.get(k as usize) {
                    Some(Value::Tuple(t)) => t.clone(),
                    _ => throw!(err(ErrorKind::Error, "internal error: bad keyword names")),
                };
                let n = n as usize;
                let f = take(r!(a));
                let pos: Args = (0..n).map(|i| take(r!(a as usize + 1 + i))).collect();
                let mut kw = Vec::with_capacity(names.0.len());
                for (j, name) in names.0.iter().enumerate() {
                    let v = take(r!(a as usize + 1 + n + j));
                    kw.push((Arc::<str>::from(name.as_str().unwrap_or("")), v));
                }
                call_with!(a, f, pos, kw);
            }
            Instr::CallEx { a } => {
                save_pc!();
                let f = take(r!(a));
                let pos: Args = match take(r!(a as usize + 1)) {
                    Value::List(l) => l.items.read().iter().cloned().collect(),
                    Value::Tuple(t) => t.0.iter().cloned().collect(),
                    other => tri!(ops::iterate(self, &other)).into_iter().collect(),
                };
                refresh!();
                let kw = match take(r!(a as usize + 2)) {
                    Value::None => Vec::new(),
                    Value::Dict(d) => {
                        let mut kw = Vec::new();
                        for (k, v) in d.map.read().iter() {
                            match k.value() {
                                Value::Str(s) => kw.push((Arc::<str>::from(s.as_str()), v.clone())),
                                other => {
                                    throw!(type_err(format!("keywords must be strings, not {}", other.type_name())))
                                }
                            }
                        }
                        kw
                    }
                    other => throw!(type_err(format!(
                        "argument after ** must be a dict, not {}",
                        other.type_name()
                    ))),
                };
                call_with!(a, f, pos, kw);
            }
            Instr::AppendTo { a, b, c, mv } => {
                if let Value::List(l) = &*r!(b) {
                    let v = if mv { take(r!(c)) } else { dup(r!(c)) };
                    l.items.write().push(v);
                    setv(r!(a), Value::None);
                    exit!(Flow::Next);
                }
                // Not a list: the general method call, through the caller interface.
                save_pc!();
                let recv = dup(r!(b));
                let arg = dup(r!(c));
                let res = match ops::get_attr(&recv, "append") {
                    Ok(f) => Caller::call(self, &f, &[arg], &[]),
                    Err(e) => Err(e),
                };
                refresh!();
                match res {
                    Ok(v) => setv(r!(a), v),
                    Err(e) => throw!(e),
                }
            }
            Instr::CallMethod { a, k, n } => {
                let name = match code.consts.get(k as usize) {
                    Some(Value::Str(s)) => s.as_str(),
                    _ => throw!(err(ErrorKind::Error, "internal error: bad method name")),
                };
                let recv_reg = a as usize + 1;
                // `xs.append(v)`: the hottest list method, done in place.
                if n == 1 && name == "append" {
                    if let Value::List(l) = &*r!(recv_reg) {
                        if let Some(ic) = code.ic_at(pc - 1) {
                            let (key, i) = crate::builtins::method_slots::LIST_APPEND;
                            ic.set(key, Hit::Builtin(i));
                        }
                        let v = take(r!(recv_reg + 1));
                        l.items.write().push(v);
                        setv(r!(a), Value::None);
                        exit!(Flow::Next);
                    }
                }
                // A struct's own method: call it with the receiver as `self`.
                if let Value::Struct(s) = &*r!(recv_reg) {
                    if s.ty.field_index(name).is_none() {
                        if let Some((i, _, m)) = s.ty.methods.get_full(name) {
                            if let Some(ic) = code.ic_at(pc - 1) {
                                ic.set(s.ty.id, Hit::Method(i));
                            }
                            setv(r!(a), m.clone());
                            do_call!(a, n + 1);
                            exit!(Flow::Next);
                        }
                    }
                }
                // `super().m(args…)`: the parent's method with the receiver as `self`.
                if let Some((m, recv)) = ops::structs::super_method(r!(recv_reg), name) {
                    setv(r!(recv_reg), recv);
                    setv(r!(a), m);
                    do_call!(a, n + 1);
                    exit!(Flow::Next);
                }
                // `T.helper(args…)`: a static method's index is cached (not a
                // method's: `T.m(obj)` is called differently from `obj.m()`).
                if let Value::StructType(t) = &*r!(recv_reg) {
                    if !t.methods.contains_key(name) {
                        if let (Some((i, _, _)), Some(ic)) = (t.statics.get_full(name), code.ic_at(pc - 1)) {
                            ic.set(t.id, Hit::Static(i));
                        }
                    }
                }
                // `module.f(args…)` (`math.sqrt(x)`): the attribute's index is cached.
                if let Value::Module(m) = &*r!(recv_reg) {
                    if let Some(f) = module_attr(m, name, code.ic_at(pc - 1)) {
                        setv(r!(a), f);
                        for i in 0..n as usize {
                            let v = take(r!(recv_reg + 1 + i));
                            setv(r!(recv_reg + i), v);
                        }
                        do_call!(a, n);
                        exit!(Flow::Next);
                    }
                }
                if !matches!(&*r!(recv_reg), Value::Struct(_) | Value::Object(_) | Value::Module(_)) {
                    if let Some(fp) = crate::builtins::method(r!(recv_reg), name) {
                        // The next call here skips the lookup (`run`'s `CallMethod`).
                        if let (Some((key, i)), Some(ic)) = (
                            crate::builtins::method_slots::slot_of(r!(recv_reg), name),
                            code.ic_at(pc - 1),
                        ) {
                            ic.set(key, Hit::Builtin(i));
                        }
                        save_pc!();
                        let args: Args = (0..=n as usize).map(|i| take(r!(recv_reg + i))).collect();
                        let res = fp(self, &args, &[]);
                        refresh!();
                        match res {
                            Ok(v) => setv(r!(a), v),
                            Err(e) => throw!(e),
                        }
                        exit!(Flow::Next);
                    }
                }
                let f = tri!(ops::get_attr(r!(recv_reg), name));
                setv(r!(a), f);
                for i in 0..n as usize {
                    let v = take(r!(recv_reg + 1 + i));
                    setv(r!(recv_reg + i), v);
                }
                do_call!(a, n)
            }
            Instr::CallSuper { a, k, n } => {
                let (owner, name) = match code.consts.get(k as usize) {
                    Some(Value::Tuple(t)) => match (t.0.first(), t.0.get(1)) {
                        (Some(Value::Str(o)), Some(Value::Str(m))) => (o.as_str(), m.as_str()),
                        _ => throw!(err(ErrorKind::Error, "internal error: bad super() call")),
                    },
                    _ => throw!(err(ErrorKind::Error, "internal error: bad super() call")),
                };
                let recv_reg = a as usize + 1;
                if let (Value::Struct(s), Some(ic)) = (&*r!(recv_reg), code.ic_at(pc - 1)) {
                    if let Some(slot) = ops::structs::super_slot(&s.ty, owner, name, n as usize) {
                        ic.set(s.ty.id, Hit::Super(slot));
                    }
                }
                // The full lookup: what `super()` and then `.name(…)` do.
                let sup = tri!(ops::structs::make_super(r!(recv_reg), owner));
                if let Some((m, recv)) = ops::structs::super_method(&sup, name) {
                    setv(r!(recv_reg), recv);
                    setv(r!(a), m);
                    do_call!(a, n + 1);
                    exit!(Flow::Next);
                }
                let f = tri!(ops::get_attr(&sup, name));
                setv(r!(a), f);
                for i in 0..n as usize {
                    let v = take(r!(recv_reg + 1 + i));
                    setv(r!(recv_reg + i), v);
                }
                do_call!(a, n)
            }
            // `run` returns into a caller itself; here the frame at depth
            // `stop` ends and its value leaves the loop.
            Instr::Return { a } | Instr::ReturnParams { a, .. } => {
                let v = take(r!(a));
                let ret = self.frames.last().map_or(Ret::Normal, |f| f.ret);
                self.pop_frame();
                exit!(self.finish_return(ret, base, v, stop));
            }
            Instr::ReturnNone => {
                let ret = self.frames.last().map_or(Ret::Normal, |f| f.ret);
                self.pop_frame();
                exit!(self.finish_return(ret, base, Value::None, stop));
            }
            Instr::GetAttr { a, b, k } => {
                let name = match code.consts.get(k as usize) {
                    Some(Value::Str(s)) => s.as_str(),
                    _ => throw!(err(ErrorKind::Error, "internal error: bad attribute name")),
                };
                let v = match &*r!(b) {
                    Value::Struct(s) => match s.ty.field_index(name) {
                        Some(i) => {
                            if let Some(ic) = code.ic_at(pc - 1) {
                                ic.set(s.ty.layout, Hit::Field(i));
                            }
                            s.fields.read().get(i).cloned().unwrap_or(Value::None)
                        }
                        None => {
                            // `obj.m` as a value (`f = obj.m`, `obj.m(k=v)`):
                            // `get_attr` binds it; the next read here is `run`'s.
                            if let (Some(i), Some(ic)) = (s.ty.methods.get_index_of(name), code.ic_at(pc - 1)) {
                                ic.set(s.ty.id, Hit::Method(i));
                            }
                            match const_cached(&s.ty, name, code.ic_at(pc - 1), false) {
                                Some(v) => v,
                                None => tri!(ops::get_attr(r!(b), name)),
                            }
                        }
                    },
                    Value::StructType(t) => match const_cached(t, name, code.ic_at(pc - 1), true) {
                        Some(v) => v,
                        None => tri!(ops::get_attr(r!(b), name)),
                    },
                    Value::Module(m) => match module_attr(m, name, code.ic_at(pc - 1)) {
                        Some(v) => v,
                        None => tri!(ops::get_attr(r!(b), name)),
                    },
                    other => tri!(ops::get_attr(other, name)),
                };
                setv(r!(a), v);
            }
            Instr::SetAttr { a, k, c } => {
                let name = match code.consts.get(k as usize) {
                    Some(Value::Str(s)) => s.as_str(),
                    _ => throw!(err(ErrorKind::Error, "internal error: bad attribute name")),
                };
                let v = dup(r!(c));
                if let Value::Struct(s) = &*r!(a) {
                    if let (Some(i), Some(ic)) = (s.ty.field_index(name), code.ic_at(pc - 1)) {
                        ic.set(s.ty.layout, Hit::Field(i));
                    }
                }
                tri!(ops::set_attr(r!(a), name, v));
            }
            Instr::GetIndex { a, b, c } => {
                let v = match (&*r!(b), &*r!(c)) {
                    (Value::List(l), Value::Int(i)) => {
                        let items = l.items.read();
                        let n = items.len() as i64;
                        let j = if *i < 0 { *i + n } else { *i };
                        if j >= 0 && j < n {
                            items[j as usize].clone()
                        } else {
                            drop(items);
                            tri!(ops::get_index(r!(b), r!(c)))
                        }
                    }
                    (Value::Dict(d), Value::Int(i)) => {
                        let found = d.map.read().get_int(*i).map(dup);
                        match found {
                            Some(v) => v,
                            None => tri!(ops::get_index(r!(b), r!(c))),
                        }
                    }
                    (Value::Struct(_), _) => {
                        // (A plain Apsi `__getitem__` was pushed as a frame
                        // by `run`; this is any other one.)
                        let (x, i) = (dup(r!(b)), dup(r!(c)));
                        let r = ops::get_index(&x, &i);
                        refresh!();
                        tri!(r)
                    }
                    (x, i) => tri!(ops::get_index(x, i)),
                };
                setv(r!(a), v);
            }
            Instr::SetIndex { a, b, c } => {
                let v = dup(r!(c));
                if let (Value::List(l), Value::Int(i)) = (&*r!(a), &*r!(b)) {
                    let mut items = l.items.write();
                    let n = items.len() as i64;
                    let j = if *i < 0 { *i + n } else { *i };
                    if j >= 0 && j < n {
                        items[j as usize] = v;
                        exit!(Flow::Next);
                    }
                }
                if let (Value::Dict(d), Value::Int(i)) = (&*r!(a), &*r!(b)) {
                    d.map.write().insert_int(*i, v);
                    exit!(Flow::Next);
                }
                if let Value::Struct(_) = &*r!(a) {
                    // (A plain Apsi `__setitem__` was pushed as a frame by
                    // `run`; this is any other one.)
                    let (x, i) = (dup(r!(a)), dup(r!(b)));
                    tri!(ops::set_index(&x, &i, v));
                    exit!(Flow::Next);
                }
                tri!(ops::set_index(r!(a), r!(b), v));
            }
            Instr::BuildList { a, b, n } => {
                let items: Vec<Value> = (0..n as usize).map(|i| take(r!(b as usize + i))).collect();
                setv(r!(a), Value::list(items));
            }
            Instr::NewListFor { a, b } => {
                let room = crate::ops::known_len(r!(b));
                setv(r!(a), Value::list(crate::value::room_for(room)));
            }
            Instr::BuildTuple { a, b, n } => {
                if n == u16::MAX {
                    let v = match &*r!(b) {
                        Value::List(l) => Value::tuple(l.items.read().clone()),
                        other => other.clone(),
                    };
                    setv(r!(a), v);
                } else {
                    let items: SmallVec<[Value; 3]> = (0..n as usize).map(|i| take(r!(b as usize + i))).collect();
                    setv(r!(a), Value::tuple_small(items));
                }
            }
            Instr::BuildDict { a, b, n } => {
                let mut map = DictMap::with_capacity(n as usize);
                for i in 0..n as usize {
                    let k = take(r!(b as usize + 2 * i));
                    let v = take(r!(b as usize + 2 * i + 1));
                    map.insert(tri!(ops::hash_key(&k)), v);
                }
                setv(r!(a), Value::dict(map));
            }
            Instr::ListAppend { a, b } => {
                let v = dup(r!(b));
                match &*r!(a) {
                    Value::List(l) => l.items.write().push(v),
                    other => throw!(type_err(format!("cannot append to {}", other.type_name()))),
                }
            }
            Instr::ListExtend { a, b } => {
                let src = dup(r!(b));
                save_pc!();
                let items = match &src {
                    Value::List(l) => l.items.read().clone(),
                    Value::Tuple(t) => t.0.to_vec(),
                    other => {
                        let r = ops::iterate(self, other);
                        refresh!();
                        tri!(r)
                    }
                };
                match &*r!(a) {
                    Value::List(l) => l.items.write().extend(items),
                    other => throw!(type_err(format!("cannot extend {}", other.type_name()))),
                }
            }
            Instr::DictSet { a, b, c } => {
                let key = tri!(ops::hash_key(r!(b)));
                let v = dup(r!(c));
                match &*r!(a) {
                    Value::Dict(d) => {
                        d.map.write().insert(key, v);
                    }
                    other => throw!(type_err(format!("cannot set a key of {}", other.type_name()))),
                }
            }
            Instr::DictUpdate { a, b } => {
                let entries: Vec<(HashKey, Value)> = match &*r!(b) {
                    Value::Dict(d) => d.map.read().iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    other => throw!(type_err(format!(
                        "argument after ** must be a dict, not {}",
                        other.type_name()
                    ))),
                };
                match &*r!(a) {
                    Value::Dict(d) => d.map.write().extend(entries),
                    other => throw!(type_err(format!("cannot update {}", other.type_name()))),
                }
            }
            Instr::BuildSlice { a, b } => {
                let s = super::slice_value(r!(b), r!(b as usize + 1), r!(b as usize + 2));
                setv(r!(a), s);
            }
            Instr::BuildRange { a, b, c } => {
                let start = tri!(call::range_int(r!(b)));
                let stop = tri!(call::range_int(r!(c)));
                setv(r!(a), Value::Range(Arc::new(RangeObj { start, stop, step: 1 })));
            }
            Instr::ForPrep { a } => {
                // A generator (`yield from`'s `GetIter` made it) is pulled as it is.
                if crate::value::generator::GenObj::of(r!(a)).is_some() {
                    setv(r!(a as usize + 1), Value::Int(0));
                    exit!(Flow::Next);
                }
                let v = take(r!(a));
                let prepared = match v {
                    Value::List(_) | Value::Tuple(_) | Value::Range(_) => v,
                    // Generators, iterators, structs: pulled one item at a time.
                    ref lazy if ops::iters::is_lazy(lazy) => {
                        save_pc!();
                        let it = ops::iters::get_iter(self, lazy);
                        refresh!();
                        tri!(it)
                    }
                    Value::Str(ref s) if s.is_ascii() => v,
                    Value::Dict(d) => Value::tuple(d.map.read().keys().map(|k| k.value().clone()).collect()),
                    // A module object's `iter` hook (a dataset's pass):
                    // `get_iter` always gives an iterator, pulled one item
                    // at a time.
                    Value::Object(ref o) if o.0.protocols().iter => {
                        save_pc!();
                        let it = ops::iters::get_iter(self, &v);
                        refresh!();
                        tri!(it)
                    }
                    other => {
                        save_pc!();
                        let items = ops::iterate(self, &other);
                        refresh!();
                        Value::tuple(tri!(items))
                    }
                };
                setv(r!(a), prepared);
                setv(r!(a as usize + 1), Value::Int(0));
            }
            // Where an item and the end go: `for_step_pc`.
            Instr::ForNext { a, b } | Instr::ForLoop { a, b } => {
                // (A generator, and a loop's `zip`/`enumerate` row unpacked
                // at once, are `run`'s cases.)
                if ops::iters::is_lazy(r!(a)) {
                    save_pc!();
                    let res = self.for_next_lazy(base + a as usize);
                    refresh!();
                    match tri!(res) {
                        Some(v) => {
                            setv(r!(b), v);
                            pc = for_step_pc(instrs, pc, true);
                        }
                        None => pc = for_step_pc(instrs, pc, false),
                    }
                    exit!(Flow::Next);
                }
                if matches!(&*r!(a), Value::Native(_) | Value::BoundMethod(_) | Value::Func(_)) {
                    let hook = dup(r!(a));
                    save_pc!();
                    let res = self.call_value(&hook, &[], &[]);
                    refresh!();
                    match tri!(res) {
                        Value::Tuple(t) if t.0.len() == 1 => {
                            let v = t.0[0].clone();
                            setv(r!(b), v);
                            pc = for_step_pc(instrs, pc, true);
                        }
                        Value::None => pc = for_step_pc(instrs, pc, false),
                        other => throw!(type_err(format!(
                            "__next__ must return a 1-tuple or none, not '{}'",
                            other.type_name()
                        ))),
                    }
                    exit!(Flow::Next);
                }
                let i = match &*r!(a as usize + 1) {
                    Value::Int(i) => *i,
                    _ => 0,
                };
                let item = match &*r!(a) {
                    Value::List(l) => l.items.read().get(i as usize).cloned(),
                    Value::Tuple(t) => t.0.get(i as usize).cloned(),
                    Value::Range(rg) => rg.item(i).map(Value::Int),
                    Value::Str(s) => s.as_str().as_bytes().get(i as usize).map(|&c| Value::char(c as char)),
                    _ => None,
                };
                match item {
                    Some(v) => {
                        setv(r!(b), v);
                        setv(r!(a as usize + 1), Value::Int(i + 1));
                        pc = for_step_pc(instrs, pc, true);
                    }
                    None => pc = for_step_pc(instrs, pc, false),
                }
            }
            Instr::ForRangePrep { a, b } => {
                let start = tri!(call::range_int(r!(a)));
                let stop = tri!(call::range_int(r!(a as usize + 1)));
                let step = tri!(call::range_int(r!(a as usize + 2)));
                if step == 0 {
                    throw!(err(ErrorKind::ValueError, "range() arg 3 must not be zero"));
                }
                setv(r!(a), Value::Int(start));
                setv(r!(a as usize + 1), Value::Int(stop));
                setv(r!(a as usize + 2), Value::Int(step));
                if (step > 0 && start < stop) || (step < 0 && start > stop) {
                    setv(r!(b), Value::Int(start));
                    pc += 1;
                } else {
                    pc = jump_target(instrs, pc);
                }
            }
            // `run` steps every range loop: ForRangePrep leaves ints in its
            // registers. Anything else there ends the loop.
            Instr::ForRangeLoop { .. } => pc += 1,
            Instr::Unpack { a, b, n } => {
                let src = dup(r!(b));
                save_pc!();
                let res = call::unpack(self, &src, n as usize, None);
                refresh!();
                let items = tri!(res);
                for (i, v) in items.into_iter().enumerate() {
                    setv(r!(a as usize + i), v);
                }
            }
            Instr::UnpackRegs { b, k, n } => {
                let src = dup(r!(b));
                save_pc!();
                let res = call::unpack(self, &src, n as usize, None);
                refresh!();
                let items = tri!(res);
                let Some(Value::Tuple(regs)) = code.consts.get(k as usize) else {
                    throw!(err(ErrorKind::Error, "internal error: bad unpack targets"))
                };
                for (v, r) in items.into_iter().zip(regs.0.iter()) {
                    if let Value::Int(r) = *r {
                        setv(r!(r), v);
                    }
                }
            }
            Instr::UnpackEx { a, b, before, after } => {
                let src = dup(r!(b));
                save_pc!();
                let res = call::unpack(self, &src, before as usize, Some(after as usize));
                refresh!();
                let items = tri!(res);
                for (i, v) in items.into_iter().enumerate() {
                    setv(r!(a as usize + i), v);
                }
            }
            Instr::MakeFunc { a, p, b } => {
                let Some(proto) = code.protos.get(p as usize).map(|p| p.get()) else {
                    throw!(err(ErrorKind::Error, "internal error: bad function"))
                };
                let nd = proto.ndefaults as usize;
                // Most functions have neither (every `def` of a module
                // runs this once at start-up): no collecting then.
                let defaults: Box<[Value]> = if nd == 0 {
                    Box::default()
                } else {
                    (0..nd).map(|i| dup(r!(b as usize + i))).collect()
                };
                let mut j = nd;
                let kwdefaults: Box<[Option<Value>]> = if proto.kwonly_has_default.is_empty() {
                    Box::default()
                } else {
                    proto
                        .kwonly_has_default
                        .iter()
                        .map(|&has| {
                            if has {
                                j += 1;
                                Some(dup(r!(b as usize + j - 1)))
                            } else {
                                None
                            }
                        })
                        .collect()
                };
                let mut free = Vec::with_capacity(proto.captures.len());
                for cap in proto.captures.iter() {
                    let cell = match cap {
                        Capture::Cell(c) => self.cells.get(cell_base + *c as usize).cloned(),
                        Capture::Free(c) => clo.free.get(*c as usize).cloned(),
                    };
                    match cell {
                        Some(c) => free.push(c),
                        None => throw!(err(ErrorKind::Error, "internal error: bad capture")),
                    }
                }
                let f = Closure::new(proto.clone(), defaults, kwdefaults, free.into_boxed_slice());
                setv(r!(a), Value::Func(Arc::new(f)));
            }
            Instr::DefFunc { p, g } => {
                if !def_func(code, p, g) {
                    throw!(err(ErrorKind::Error, "internal error: bad function"))
                }
            }
            Instr::DefStruct { s, g } => {
                if !def_struct(code, s, g) {
                    throw!(err(ErrorKind::Error, "internal error: bad struct"))
                }
            }
            Instr::MakeStruct { a, p, b } => {
                let Some(sp) = code.structs.get(p as usize) else {
                    throw!(err(ErrorKind::Error, "internal error: bad struct"))
                };
                let sp = match sp.get() {
                    Ok(sp) => sp,
                    Err(why) => throw!(err(
                        ErrorKind::Error,
                        format!(
                            "this struct's compiled code cannot be read ({why}); compile the program again \
                             (`apsi run --no-cache`, or `apsi build` for an executable)"
                        )
                    )),
                };
                let ndef = sp.has_default.iter().filter(|d| **d).count();
                let vals: Vec<Value> = (0..ndef + sp.methods.len() + usize::from(sp.has_base))
                    .map(|i| dup(r!(b as usize + i)))
                    .collect();
                let t = tri!(crate::ops::structs::make_struct_type(sp, vals));
                setv(r!(a), t);
            }
            Instr::StructConst { a, k, c } => {
                let v = dup(r!(c));
                tri!(crate::ops::structs::define_const(r!(a), &const_name(code, k), v));
            }
            Instr::Raise { a } => {
                let e = match &*r!(a) {
                    Value::Error(e) => {
                        e.trace.lock().clear();
                        e.clone()
                    }
                    Value::Kind(k) => err(*k, ""),
                    Value::Struct(s) if s.ty.error_kind.is_some() => match crate::ops::structs::raise_struct(s) {
                        Some(e) => e,
                        None => type_err("internal error: not an error kind".to_string()),
                    },
                    Value::StructType(t) if t.error_kind.is_some() => {
                        // `raise K` is `raise K()`.
                        save_pc!();
                        let t = t.clone();
                        // The frame's registers are not read again before the throw.
                        let made = crate::ops::structs::construct(self, &t, Args::new(), Vec::new());
                        match made {
                            Ok(Value::Struct(s)) => match crate::ops::structs::raise_struct(&s) {
                                Some(e) => e,
                                None => type_err("internal error: not an error kind".to_string()),
                            },
                            Ok(_) => type_err("internal error: constructor gave no instance".to_string()),
                            Err(e) => e,
                        }
                    }
                    Value::Struct(s) => type_err(format!(
                        "raise needs an error value, and '{}' is not an error kind (declare it as 'struct {}(Error):')",
                        s.ty.name, s.ty.name
                    )),
                    other => type_err(format!(
                        "raise needs an error value such as ValueError(\"…\"), not {}",
                        other.type_name()
                    )),
                };
                throw!(e)
            }
            Instr::Reraise { a } => {
                let e = if a == NO_REG {
                    err(
                        ErrorKind::Error,
                        "a bare 'raise' is only allowed inside an except block",
                    )
                } else {
                    match &*r!(a) {
                        Value::Error(e) => e.clone(),
                        _ => err(ErrorKind::Error, "internal error: nothing to re-raise"),
                    }
                };
                throw!(e)
            }
            Instr::CheckBound { a, k } => {
                if matches!(&*r!(a), Value::Unbound) {
                    let name = match code.consts.get(k as usize) {
                        Some(Value::Str(s)) => s.as_str().to_string(),
                        _ => "?".to_string(),
                    };
                    throw!(err(
                        ErrorKind::NameError,
                        format!("cannot access local variable '{name}' where it is not associated with a value")
                    ));
                }
            }
            Instr::AssertFail { a } => {
                let msg = if a == NO_REG {
                    String::new()
                } else {
                    format::str_of(r!(a))
                };
                throw!(err(ErrorKind::AssertionError, msg))
            }
            Instr::PushHandler { a, t } => {
                self.handlers.push(Handler {
                    frame: (self.frames.len() - 1) as u32,
                    target: t,
                    reg: a,
                });
            }
            Instr::PopHandler => {
                self.handlers.pop();
            }
            Instr::ExcMatch { a, b, c } => {
                let m = match &*r!(b) {
                    Value::Error(e) if c == NO_REG => e.exit.is_none(),
                    Value::Error(e) => tri!(call::error_matches(e, r!(c))),
                    _ => false,
                };
                setv(r!(a), Value::Bool(m));
            }
            // `len(x)` of what `run` does not count itself: a non-ASCII
            // string, a struct's `__len__`, a tensor, a module object.
            Instr::Len { a, b } => {
                let v = dup(r!(b));
                save_pc!();
                let n = ops::len_with(self, &v);
                refresh!();
                setv(r!(a), Value::Int(tri!(n)));
            }
            // `isinstance(x, T)` that `run` does not answer itself: a
            // tuple of types, a built-in type, an error kind, a bad `T`.
            Instr::IsInstance { a, b, c } => {
                let v = tri!(crate::builtins::types::is_instance(r!(b), r!(c)));
                setv(r!(a), Value::Bool(v));
            }
            Instr::ToStr { a, b } => {
                let v = match &*r!(b) {
                    Value::Str(_) => dup(r!(b)),
                    Value::Int(i) => Value::Str(crate::value::StrRef::new(StrObj::from_int(*i))),
                    other => Value::str(tri!(format::str_checked(other))),
                };
                setv(r!(a), v);
            }
            Instr::ToRepr { a, b } => {
                let v = Value::str(tri!(format::repr_checked(r!(b))));
                setv(r!(a), v);
            }
            Instr::Format { a, b, c } => {
                let spec = r!(c).as_str().unwrap_or("").to_string();
                let s = tri!(format::format_value(r!(b), &spec));
                setv(r!(a), Value::str(s));
            }
            Instr::ParFor { a, n, range } => {
                // `parallel for`: the chunks run on the pool (crate::vm::parfor);
                // this thread runs the first and waits for the rest.
                let a = a as usize;
                let f = take(r!(a));
                let iter = if range {
                    crate::vm::parfor::LoopIter::Range(dup(r!(a + 1)), dup(r!(a + 2)), dup(r!(a + 3)))
                } else {
                    crate::vm::parfor::LoopIter::Items(take(r!(a + 1)))
                };
                let inits: Vec<(Value, Value)> = (0..n as usize)
                    .map(|j| (take(r!(a + 4 + 2 * j)), take(r!(a + 5 + 2 * j))))
                    .collect();
                save_pc!();
                let res = crate::vm::parfor::run_loop(self, &f, iter, inits);
                refresh!();
                match res {
                    Ok((first, rest)) => {
                        setv(r!(a), first);
                        setv(r!(a + 1), rest);
                    }
                    Err(e) => throw!(e),
                }
            }
            Instr::BuildSet { a, b, n } => {
                let items: Vec<Value> = (0..n as usize).map(|i| dup(r!(b as usize + i))).collect();
                let v = tri!(ops::sets::set_of(items));
                setv(r!(a), v);
            }
            Instr::SetAdd { a, b } => {
                let key = tri!(ops::hash_key(r!(b)));
                match &*r!(a) {
                    Value::Set(s) => {
                        let mut m = s.map.write();
                        if !m.contains_key(&key) {
                            m.insert(key, Value::None);
                        }
                    }
                    other => throw!(type_err(format!("cannot add to {}", other.type_name()))),
                }
            }
            Instr::DelIndex { a, b } => {
                let obj = dup(r!(a));
                let idx = dup(r!(b));
                save_pc!();
                // (The stack may have moved; nothing below reads a register.)
                tri!(ops::del_index(self, &obj, &idx));
            }
            Instr::DelLocal { a, k } => {
                if matches!(&*r!(a), Value::Unbound) {
                    throw!(err(
                        ErrorKind::NameError,
                        format!(
                            "cannot access local variable '{}' where it is not associated with a value",
                            const_name(code, k)
                        )
                    ));
                }
                let old = std::mem::replace(r!(a), Value::Unbound);
                drop(old);
            }
            Instr::DelGlobal { g } => {
                let Some(slot) = code.globals.get(g as usize) else {
                    throw!(err(ErrorKind::Error, "internal error: bad global"))
                };
                if !slot.unbind() {
                    throw!(err(
                        ErrorKind::NameError,
                        format!("name '{}' is not defined", slot.name)
                    ));
                }
            }
            Instr::DelCell { c, k } | Instr::DelFree { c, k } => {
                let cell = if matches!(ins, Instr::DelCell { .. }) {
                    self.cells.get(cell_base + c as usize).cloned()
                } else {
                    clo.free.get(c as usize).cloned()
                };
                let Some(cell) = cell else {
                    throw!(err(ErrorKind::Error, "internal error: bad cell"))
                };
                let old = cell.take_unbound();
                if matches!(old, Value::Unbound) {
                    let name = const_name(code, k);
                    let msg = if matches!(ins, Instr::DelCell { .. }) {
                        format!("cannot access local variable '{name}' where it is not associated with a value")
                    } else {
                        format!("cannot access free variable '{name}' where it is not associated with a value in enclosing scope")
                    };
                    throw!(err(ErrorKind::NameError, msg));
                }
                drop(old);
            }
            Instr::Yield { a, b } => {
                // (`run` handles both cases itself: a `GenFor` frame's
                // yield, and this one.) Suspend: `resume_gen` (resume.rs)
                // saves the frame.
                if !self.may_yield() {
                    throw!(err(
                        ErrorKind::Error,
                        "internal error: 'yield' outside a running generator"
                    ));
                }
                let v = dup(r!(a));
                setv(r!(b), Value::None);
                save_pc!();
                self.yielded = true;
                exit!(Flow::Return(v));
            }
            Instr::GetIter { a, b } => {
                let v = dup(r!(b));
                save_pc!();
                let it = ops::iters::get_iter(self, &v);
                refresh!();
                setv(r!(a), tri!(it));
            }
            Instr::IterPrep { a } => {
                if !matches!(
                    &*r!(a),
                    Value::List(_) | Value::Tuple(_) | Value::Range(_) | Value::Str(_)
                ) {
                    let v = dup(r!(a));
                    save_pc!();
                    let it = ops::iters::get_iter(self, &v);
                    refresh!();
                    setv(r!(a), tri!(it));
                }
            }
            Instr::Reduce { op, a, b } => {
                // The built-in's own error: this frame (a generator
                // expression compiled into the built-in's loop) is left
                // out of its trace, as the suspended generator is in Python.
                macro_rules! as_builtin {
                    ($x:expr) => {
                        match $x {
                            Ok(v) => v,
                            Err(e) => {
                                self.reraise_skip = Some((e.clone(), self.frames.len().saturating_sub(1)));
                                throw!(e)
                            }
                        }
                    };
                }
                match op {
                    ReduceOp::Sum | ReduceOp::SumEnd => {
                        // The state of `SumAcc` in two registers (see `ReduceOp::Sum`).
                        let mut acc = match (&*r!(a), &*r!(a as usize + 1)) {
                            (&Value::Int(lo), &Value::Int(hi)) => crate::builtins::SumAcc {
                                acc: Value::None,
                                wide: Some(((hi as i128) << 64) + lo as i128),
                            },
                            (v, _) => crate::builtins::SumAcc {
                                acc: v.clone(),
                                wide: None,
                            },
                        };
                        if op == ReduceOp::SumEnd {
                            let v = as_builtin!(acc.finish());
                            setv(r!(a), v);
                        } else {
                            let x = dup(r!(b));
                            save_pc!();
                            let res = acc.add(&x);
                            refresh!();
                            as_builtin!(res);
                            match acc.wide {
                                Some(w) => {
                                    let lo = w as i64;
                                    setv(r!(a), Value::Int(lo));
                                    setv(r!(a as usize + 1), Value::Int(((w - lo as i128) >> 64) as i64));
                                }
                                None => {
                                    setv(r!(a), acc.acc);
                                    setv(r!(a as usize + 1), Value::None);
                                }
                            }
                        }
                    }
                    ReduceOp::Truth => {
                        let x = dup(r!(b));
                        save_pc!();
                        let res = x.truthy();
                        refresh!();
                        let t = as_builtin!(res);
                        setv(r!(a), Value::Bool(t));
                    }
                }
            }
            Instr::Concat { a, b, n } => {
                let mut s = String::new();
                for i in 0..n as usize {
                    match &*r!(b as usize + i) {
                        Value::Str(x) => s.push_str(x.as_str()),
                        other => s.push_str(&tri!(format::str_checked(other))),
                    }
                }
                setv(r!(a), Value::str(s));
            }
        }
        exit!(Flow::Next)
    }
}
