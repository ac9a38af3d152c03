//! One bytecode instruction at a time: its effect on the register types
//! and, when emitting, its IR; control flow into loop bodies and jumps.

use super::*;

impl FnLower<'_> {
    /// One instruction: its effect on the types in `st` (and its IR when
    /// emitting); returns the successors.
    pub(super) fn step(&mut self, pc: usize, st: &mut Vec<T>) -> R<Vec<usize>> {
        let ins = self
            .code
            .instrs
            .get(pc)
            .copied()
            .ok_or_else(|| self.bad("a jump out of the function"))?;
        let next = vec![pc + 1];
        let r = |x: Reg| x as usize;
        match ins {
            Instr::Nop => {}
            Instr::Move { a, b } => {
                let t = st.get(r(b)).cloned().unwrap_or(T::Undef);
                if matches!(t, T::Undef | T::Conflict) {
                    if let Some(x) = st.get_mut(r(a)) {
                        *x = t;
                    }
                } else {
                    let (t, v) = self.get(st, r(b))?;
                    self.set(st, r(a), t, &v);
                }
            }
            Instr::LoadK { a, k } => {
                let v = self.code.consts.get(k as usize).cloned().unwrap_or(Value::None);
                self.load_value(st, r(a), v);
            }
            Instr::LoadInt { a, v } => {
                let c = self.konst(Const::Int(v as i64));
                self.set(st, r(a), T::Int, &[c]);
            }
            Instr::LoadBool { a, v } => {
                let c = self.konst(Const::Bool(v));
                self.set(st, r(a), T::Bool, &[c]);
            }
            Instr::LoadNone { a } => self.set(st, r(a), T::None, &[]),
            Instr::GetGlobal { a, g } => {
                let v = self.global(g as usize)?;
                self.load_value(st, r(a), v);
            }
            Instr::SetGlobal { .. } => return Err(self.bad("an assignment to a global variable")),
            Instr::MakeCell { a, c } => {
                let cell = self.code.nregs as usize + c as usize;
                if a == NO_REG {
                    if let Some(x) = st.get_mut(cell) {
                        *x = T::Undef;
                    }
                } else {
                    let (t, v) = self.get(st, r(a))?;
                    self.set(st, cell, t, &v);
                }
            }
            Instr::GetCell { a, c } => {
                let (t, v) = self.get(st, self.code.nregs as usize + c as usize)?;
                self.set(st, r(a), t, &v);
            }
            Instr::SetCell { a, c } => {
                let (t, v) = self.get(st, r(a))?;
                self.set(st, self.code.nregs as usize + c as usize, t, &v);
            }
            Instr::GetFree { a, c } => {
                let base = self.code.nregs as usize + self.code.ncells as usize;
                if base + c as usize >= self.nslots {
                    return Err(self.bad("a closure variable (nested functions are not native)"));
                }
                let (t, v) = self.get(st, base + c as usize)?;
                self.set(st, r(a), t, &v);
            }
            Instr::SetFree { .. } => {
                return Err(self.bad(
                    "an assignment inside parallel for to a variable of the enclosing function that is not a reduction",
                ))
            }
            Instr::Add { a, b, c } => self.binary(st, BinOp::Add, r(a), r(b), r(c))?,
            Instr::Sub { a, b, c } => self.binary(st, BinOp::Sub, r(a), r(b), r(c))?,
            Instr::Mul { a, b, c } | Instr::MulT { a, b, c } => self.binary(st, BinOp::Mul, r(a), r(b), r(c))?,
            // A read the compiler could not prove assigned: native code needs
            // it assigned on every path.
            Instr::CheckBound { a, .. } => {
                self.get(st, r(a))?;
            }
            Instr::Bin { op, a, b, c } => self.binary(st, op, r(a), r(b), r(c))?,
            Instr::AddI { a, b, v } => {
                let tmp = self.nslots; // a scratch register index past the file
                let k = self.konst(Const::Int(v as i64));
                let mut st2 = st.clone();
                st2.push(T::Undef);
                self.set(&mut st2, tmp, T::Int, &[k]);
                self.binary(&mut st2, BinOp::Add, r(a), r(b), tmp)?;
                st2.pop();
                *st = st2;
            }
            Instr::Unary { op, a, b } => self.unary(st, op, r(a), r(b))?,
            Instr::Cmp { op, a, b, c } => {
                let d = self.compare(st, op, r(b), r(c))?;
                self.set(st, r(a), T::Bool, &[d]);
            }
            Instr::CmpI { op, a, b, v } => {
                let d = self.compare_small_int(st, op, r(b), v)?;
                self.set(st, r(a), T::Bool, &[d]);
            }
            Instr::CmpJmp { op, a, b, jt } => {
                let d = self.compare(st, op, r(a), r(b))?;
                return self.cond_jump(pc, d, jt);
            }
            Instr::CmpJmpNone { a, jt } => {
                let tmp = self.nslots; // a scratch register holding `none`
                let mut st2 = st.clone();
                st2.push(T::Undef);
                self.set(&mut st2, tmp, T::None, &[]);
                let d = self.compare(&st2, CmpOp::Is, r(a), tmp)?;
                return self.cond_jump(pc, d, jt);
            }
            Instr::CmpJmpI { op, a, v, jt } => {
                let d = self.compare_small_int(st, op, r(a), v)?;
                return self.cond_jump(pc, d, jt);
            }
            Instr::Jmp { t } => {
                self.push(Op::Jmp(t));
                return Ok(vec![t as usize]);
            }
            Instr::JmpIf { a, t } | Instr::JmpIfNot { a, t } => {
                let c = self.truth(st, r(a))?;
                let jump_when = matches!(ins, Instr::JmpIf { .. });
                let (then, els) = if jump_when {
                    (t, pc as u32 + 1)
                } else {
                    (pc as u32 + 1, t)
                };
                self.push(Op::Br { cond: c, then, els });
                return Ok(vec![t as usize, pc + 1]);
            }
            Instr::Call { a, n } => {
                let (t, _) = self.get(st, r(a))?;
                let T::Const(f) = t else {
                    return Err(self.bad(format!("calling {}", t.describe())));
                };
                let args: Vec<usize> = (1..=n as usize).map(|i| r(a) + i).collect();
                calls::call(self, st, r(a), &f, &args, &[])?;
            }
            Instr::CallK { a, k, n } => {
                let f = self.code.consts.get(k as usize).cloned().unwrap_or(Value::None);
                let args: Vec<usize> = (1..=n as usize).map(|i| r(a) + i).collect();
                calls::call(self, st, r(a), &f, &args, &[])?;
            }
            Instr::CallGlobal { a, g, n } => {
                let f = self.global(g as usize)?;
                let args: Vec<usize> = (1..=n as usize).map(|i| r(a) + i).collect();
                calls::call(self, st, r(a), &f, &args, &[])?;
            }
            Instr::CallKw { a, n, k } => {
                let (t, _) = self.get(st, r(a))?;
                let T::Const(f) = t else {
                    return Err(self.bad(format!("calling {}", t.describe())));
                };
                let names: Vec<String> = match self.code.consts.get(k as usize) {
                    Some(Value::Tuple(t)) => t.0.iter().map(|v| v.as_str().unwrap_or("").to_string()).collect(),
                    _ => Vec::new(),
                };
                let args: Vec<usize> = (1..=n as usize).map(|i| r(a) + i).collect();
                let kw: Vec<(String, usize)> = names
                    .into_iter()
                    .enumerate()
                    .map(|(i, nm)| (nm, r(a) + n as usize + 1 + i))
                    .collect();
                calls::call(self, st, r(a), &f, &args, &kw)?;
            }
            Instr::CallMethod { a, k, n } => {
                let name = self
                    .code
                    .consts
                    .get(k as usize)
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                let args: Vec<usize> = (2..=1 + n as usize).map(|i| r(a) + i).collect();
                calls::method(self, st, r(a), r(a) + 1, &name, &args)?;
            }
            Instr::GetAttr { a, b, k } => {
                let name = self
                    .code
                    .consts
                    .get(k as usize)
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                calls::attr(self, st, r(a), r(b), &name)?;
            }
            Instr::GetIndex { a, b, c } => calls::index(self, st, r(a), r(b), r(c))?,
            Instr::SetIndex { a, b, c } => calls::set_index(self, st, r(a), r(b), r(c))?,
            Instr::BuildTuple { a, b, n } => {
                let mut ts = Vec::new();
                let mut vs = Vec::new();
                for i in 0..n as usize {
                    let (t, v) = self.get(st, r(b) + i)?;
                    ts.push(t);
                    vs.extend(v);
                }
                self.set(st, r(a), T::Tuple(ts), &vs);
            }
            Instr::Unpack { .. } | Instr::UnpackRegs { .. } => {
                let (b, n, dests): (Reg, u16, Vec<usize>) = match ins {
                    Instr::Unpack { a, b, n } => (b, n, (0..n as usize).map(|i| r(a) + i).collect()),
                    Instr::UnpackRegs { b, k, n } => {
                        let regs: Option<Vec<usize>> = match self.code.consts.get(k as usize) {
                            Some(Value::Tuple(t)) => {
                                t.0.iter()
                                    .map(|x| match x {
                                        Value::Int(i) => Reg::try_from(*i).ok().map(r),
                                        _ => None,
                                    })
                                    .collect()
                            }
                            _ => None,
                        };
                        match regs {
                            Some(regs) => (b, n, regs),
                            None => return Err(self.bad("unpacking into unknown registers")),
                        }
                    }
                    _ => unreachable!("matched above"),
                };
                let (t, v) = self.get(st, r(b))?;
                let T::Tuple(ts) = t else {
                    return Err(self.bad(format!("unpacking {}", t.describe())));
                };
                if ts.len() != n as usize {
                    let line = self.line();
                    let k = self.konst(Const::Int(ts.len() as i64));
                    self.push(Op::Raise {
                        code: ecode::UNPACK,
                        line,
                        a: k,
                    });
                    return Ok(Vec::new());
                }
                let mut off = 0;
                for (i, t) in ts.iter().enumerate() {
                    let w = t.leaf_types().len();
                    let part: Vec<Var> = v.get(off..off + w).map(|s| s.to_vec()).unwrap_or_default();
                    off += w;
                    let Some(&d) = dests.get(i) else { break };
                    self.set(st, d, t.clone(), &part);
                }
            }
            Instr::ForRangePrep { a, b } => {
                let (x, stop, step) = (
                    self.scalar_as(st, r(a), &T::Int)?,
                    self.scalar_as(st, r(a) + 1, &T::Int)?,
                    self.scalar_as(st, r(a) + 2, &T::Int)?,
                );
                // The counter and bounds become int registers.
                self.set(st, r(a), T::Int, &[x]);
                self.set(st, r(a) + 1, T::Int, &[stop]);
                self.set(st, r(a) + 2, T::Int, &[step]);
                let (xa, sa, ka) = (
                    self.slots(r(a), &T::Int)[0],
                    self.slots(r(a) + 1, &T::Int)[0],
                    self.slots(r(a) + 2, &T::Int)[0],
                );
                let line = self.line();
                let c = self.new_var(Ty::Bool);
                self.push(Op::RangeTest {
                    dst: c,
                    a: xa,
                    stop: sa,
                    step: ka,
                    line,
                });
                // An empty loop leaves its variable as it was.
                return Ok(self.enter_body(st, c, r(b), xa, pc + 2, pc + 1));
            }
            Instr::ForRangeLoop { a, b } => {
                let xa = self.slots(r(a), &T::Int)[0];
                let sa = self.slots(r(a) + 1, &T::Int)[0];
                let ka = self.slots(r(a) + 2, &T::Int)[0];
                let c = self.new_var(Ty::Bool);
                self.push(Op::RangeNext {
                    dst: c,
                    a: xa,
                    stop: sa,
                    step: ka,
                });
                // After the last iteration the loop variable keeps its last value.
                return Ok(self.enter_body(st, c, r(b), xa, pc + 1, pc + 2));
            }
            Instr::ForPrep { a } => {
                let (t, _) = self.get(st, r(a))?;
                if !matches!(t, T::Partials(_)) {
                    return Err(self.bad(format!(
                        "a for loop over {} (native for loops run over range())",
                        t.describe()
                    )));
                }
                let z = self.konst(Const::Int(0));
                self.set(st, r(a) + 1, T::Int, &[z]);
            }
            Instr::ForNext { a, b } => {
                let (t, v) = self.get(st, r(a))?;
                let T::Partials(ts) = t else {
                    return Err(self.bad("a for loop over a non-range iterable"));
                };
                let (buf, count) = (v[0], v[1]);
                let pos = self.slots(r(a) + 1, &T::Int)[0];
                let c = self.new_var(Ty::Bool);
                self.push(Op::Cmp {
                    op: ir::CmpOp::Ge,
                    dst: c,
                    a: pos,
                    b: count,
                });
                let cont = self.label();
                self.push(Op::Br {
                    cond: c,
                    then: pc as u32 + 1,
                    els: cont,
                });
                self.push(Op::Label(cont));
                let mut vs = Vec::new();
                let width: u32 = ts.iter().map(|t| t.leaf_types().len() as u32).sum();
                let mut slot = 0;
                for t in &ts {
                    for ty in t.leaf_types() {
                        let d = self.new_var(ty);
                        self.push(Op::LoadPartial {
                            dst: d,
                            buf,
                            row: pos,
                            width,
                            slot,
                        });
                        slot += 1;
                        vs.push(d);
                    }
                }
                let one = self.konst(Const::Int(1));
                let line = self.line();
                self.push(Op::IntBin {
                    op: IntOp::Add,
                    dst: pos,
                    a: pos,
                    b: one,
                    line,
                });
                self.set(st, r(b), T::Tuple(ts), &vs);
                self.push(Op::Jmp(pc as u32 + 2));
                return Ok(vec![pc + 1, pc + 2]);
            }
            Instr::Return { a } | Instr::ReturnParams { a, .. } => {
                let (t, v) = self.get(st, r(a))?;
                if matches!(t, T::Const(_) | T::Chunk(_) | T::Partials(_)) {
                    return Err(self.bad(format!("returning {}", t.describe())));
                }
                if !matches!(t, T::Unknown) {
                    self.rets.push(t);
                }
                self.push(Op::Ret(v));
                return Ok(Vec::new());
            }
            Instr::ReturnNone => {
                self.rets.push(T::None);
                self.push(Op::Ret(Vec::new()));
                return Ok(Vec::new());
            }
            Instr::MakeFunc { a, p, .. } => {
                let is_chunk = self
                    .code
                    .protos
                    .get(p as usize)
                    .map(|pr| &*pr.name == "<parallel for>")
                    .unwrap_or(false);
                if !is_chunk {
                    return Err(self.bad("a nested function or lambda"));
                }
                if let Some(x) = st.get_mut(r(a)) {
                    *x = T::Chunk(p);
                }
            }
            Instr::ParFor { a, n, range } => {
                if !range {
                    return Err(self.bad("a parallel for over something other than range()"));
                }
                self.par_for(st, r(a), n as usize)?;
            }
            Instr::BuildList { .. }
            | Instr::NewListFor { .. }
            | Instr::ListAppend { .. }
            | Instr::ListExtend { .. }
            | Instr::AppendTo { .. } => return Err(self.bad("a list")),
            Instr::BuildDict { .. } | Instr::DictSet { .. } | Instr::DictUpdate { .. } => {
                return Err(self.bad("a dict"))
            }
            Instr::BuildSlice { .. } => return Err(self.bad("slicing (native code indexes one element at a time)")),
            Instr::BuildRange { .. } => return Err(self.bad("a range value (native code runs for loops over range())")),
            Instr::UnpackEx { .. } => return Err(self.bad("starred unpacking")),
            Instr::MakeStruct { .. } | Instr::StructConst { .. } => return Err(self.bad("a struct")),
            Instr::DefFunc { .. } => return Err(self.bad("a nested function or lambda")),
            Instr::DefStruct { .. } => return Err(self.bad("a struct")),
            Instr::CallSuper { .. } => return Err(self.bad("super()")),
            Instr::Len { a, b } => calls::call_named(self, st, r(a), "len", &[r(b)], &[])?,
            Instr::IsInstance { a, b, c } => calls::call_named(self, st, r(a), "isinstance", &[r(b), r(c)], &[])?,
            Instr::Raise { .. } | Instr::Reraise { .. } => return Err(self.bad("raise")),
            Instr::AssertFail { .. } => return Err(self.bad("assert")),
            Instr::PushHandler { .. } | Instr::PopHandler | Instr::ExcMatch { .. } => {
                return Err(self.bad("try/except"))
            }
            Instr::ToStr { .. } | Instr::ToRepr { .. } | Instr::Format { .. } | Instr::Concat { .. } => {
                return Err(self.bad("a str (f-strings and str() are not native)"))
            }
            Instr::CallEx { .. } => return Err(self.bad("a call with *args or **kwargs")),
            Instr::SetAttr { .. } => return Err(self.bad("an attribute assignment")),
            Instr::BuildSet { .. } | Instr::SetAdd { .. } => return Err(self.bad("a set")),
            Instr::DelIndex { .. }
            | Instr::DelLocal { .. }
            | Instr::DelGlobal { .. }
            | Instr::DelCell { .. }
            | Instr::DelFree { .. } => return Err(self.bad("del")),
            Instr::Yield { .. } => return Err(self.bad("yield (a generator)")),
            // A `for` statement's or comprehension's loop over a list,
            // tuple or other iterable (range loops are `ForRangeLoop`).
            Instr::ForLoop { .. } => return Err(self.bad("a for loop over a non-range iterable")),
            Instr::GetIter { .. } | Instr::IterPrep { .. } | Instr::Reduce { .. } => {
                return Err(self.bad("an iterator (yield from, a generator expression)"))
            }
        }
        Ok(next)
    }

    /// A range loop's branch: into the body (`body_pc`) with the loop
    /// variable `b` set to the counter `xa` when `cond` holds, else out to
    /// `exit_pc` with the state as it was (the variable keeps its value, as
    /// in the interpreter). Returns the successors.
    ///
    /// A variable never assigned before the loop gets the counter on the
    /// way out too: the interpreter's UnboundLocalError for reading it
    /// after an empty loop has no native equivalent, and an unassigned
    /// value must not reach an index.
    pub(super) fn enter_body(
        &mut self,
        st: &mut [T],
        cond: Var,
        b: usize,
        xa: Var,
        body_pc: usize,
        exit_pc: usize,
    ) -> Vec<usize> {
        let body = self.label();
        if matches!(st.get(b), Some(T::Undef) | None) {
            let out = self.label();
            self.push(Op::Br {
                cond,
                then: body,
                els: out,
            });
            self.push(Op::Label(out));
            let mut ex = st.to_vec();
            self.set(&mut ex, b, T::Int, &[xa]);
            self.push(Op::Jmp(exit_pc as u32));
            self.exit_state = Some((exit_pc, ex));
        } else {
            self.exit_state = Some((exit_pc, st.to_vec()));
            self.push(Op::Br {
                cond,
                then: body,
                els: exit_pc as u32,
            });
        }
        self.push(Op::Label(body));
        self.set(st, b, T::Int, &[xa]);
        self.push(Op::Jmp(body_pc as u32));
        vec![body_pc, exit_pc]
    }

    /// `a op v` for the small int `v` of `CmpI`/`CmpJmpI`, which goes into a
    /// scratch register past the file.
    fn compare_small_int(&mut self, st: &[T], op: CmpOp, a: usize, v: i16) -> R<Var> {
        let tmp = self.nslots;
        let k = self.konst(Const::Int(v as i64));
        let mut st2 = st.to_vec();
        st2.push(T::Undef);
        self.set(&mut st2, tmp, T::Int, &[k]);
        self.compare(&st2, op, a, tmp)
    }

    pub(super) fn cond_jump(&mut self, pc: usize, c: Var, jt: bool) -> R<Vec<usize>> {
        // +J: the Jmp at pc+1 is taken when the condition equals `jt`.
        let (then, els) = if jt {
            (pc as u32 + 1, pc as u32 + 2)
        } else {
            (pc as u32 + 2, pc as u32 + 1)
        };
        self.push(Op::Br { cond: c, then, els });
        Ok(vec![pc + 1, pc + 2])
    }

    pub(super) fn load_value(&mut self, st: &mut [T], a: usize, v: Value) {
        match v {
            Value::Int(i) => {
                let c = self.konst(Const::Int(i));
                self.set(st, a, T::Int, &[c]);
            }
            Value::Float(f) => {
                let c = self.konst(Const::Float(f.to_bits()));
                self.set(st, a, T::Float, &[c]);
            }
            Value::Bool(b) => {
                let c = self.konst(Const::Bool(b));
                self.set(st, a, T::Bool, &[c]);
            }
            Value::None => self.set(st, a, T::None, &[]),
            other => self.set(st, a, T::Const(other), &[]),
        }
    }

    pub(super) fn global(&self, g: usize) -> R<Value> {
        let slot = self.code.globals.get(g).ok_or_else(|| self.bad("an unknown global"))?;
        slot.get()
            .ok_or_else(|| self.bad(format!("the global '{}', which is not bound yet", slot.name)))
    }
}
