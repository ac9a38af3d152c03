//! Passes over a function's finished bytecode: returns threaded through
//! jumps, early returns marked (`ReturnParams`), and the bytecode dump.

use super::*;

/// `APSI_DUMP_BYTECODE=1`: print every compiled body to stderr (for
/// people working on the compiler and the VM).
pub(super) fn dump_bytecode() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("APSI_DUMP_BYTECODE").is_some_and(|v| v == "1"))
}

/// Is `ins` a test whose jump target is the `Jmp` word right after it?
pub(super) fn reads_next_jmp(ins: &Instr) -> bool {
    matches!(
        ins,
        Instr::CmpJmp { .. }
            | Instr::CmpJmpI { .. }
            | Instr::CmpJmpNone { .. }
            | Instr::ForNext { .. }
            | Instr::ForLoop { .. }
            | Instr::ForRangePrep { .. }
            | Instr::ForRangeLoop { .. }
    )
}

/// Two peepholes on finished code: a jump to a return becomes that return,
/// and `Move { a, b }` right before `Return { a }` becomes `Return { b }`
/// (the copy is dead once the frame ends). A jump word that belongs to a
/// two-word test is left alone.
pub(super) fn thread_returns(instrs: &mut [Instr], spans: &mut [Span]) {
    fn copy_span(spans: &mut [Span], from: usize, to: usize) {
        if let Some(&sp) = spans.get(from) {
            if let Some(s) = spans.get_mut(to) {
                *s = sp;
            }
        }
    }
    for i in 0..instrs.len() {
        if i > 0 && reads_next_jmp(&instrs[i - 1]) {
            continue;
        }
        if let Instr::Jmp { t } = instrs[i] {
            if let Some(&ret @ (Instr::Return { .. } | Instr::ReturnNone)) = instrs.get(t as usize) {
                instrs[i] = ret;
                copy_span(spans, t as usize, i);
            }
        }
    }
    for i in 0..instrs.len() {
        if let (Instr::Move { a, b }, Some(&Instr::Return { a: r })) = (instrs[i], instrs.get(i + 1)) {
            if r == a {
                instrs[i] = Instr::Return { a: b };
                copy_span(spans, i + 1, i);
            }
        }
    }
}

/// Where control can go after instruction `pc` (a superset is safe: it only
/// makes `mark_early_returns` mark fewer returns). Jump targets live only in
/// `Jmp`, `JmpIf`, `JmpIfNot` and `PushHandler`; a test that reads the `Jmp`
/// word after it continues at `pc + 2` or at that word's target.
pub(super) fn successors(instrs: &[Instr], pc: usize) -> Vec<usize> {
    let Some(ins) = instrs.get(pc) else { return Vec::new() };
    match *ins {
        Instr::Jmp { t } => vec![t as usize],
        Instr::Return { .. } | Instr::ReturnParams { .. } | Instr::ReturnNone => Vec::new(),
        Instr::JmpIf { t, .. } | Instr::JmpIfNot { t, .. } | Instr::PushHandler { t, .. } => vec![pc + 1, t as usize],
        ref i if reads_next_jmp(i) => vec![pc + 1, pc + 2],
        _ => vec![pc + 1],
    }
}

/// Turn each `Return { a }` that is reached from the entry only through
/// instructions that write no register, or write only register `a` itself,
/// into `ReturnParams { a, n: nparams }`. On such a path every register
/// other than the parameters and `a` still holds what it held when the frame
/// was pushed: nothing this call owns (the locals it may read unassigned are
/// reset on entry, see `Code::unbound_regs`). The return takes `a`'s value
/// out (a scalar is copied and may stay behind; an owned value is replaced
/// by `none`), so clearing the parameters is enough: `def add(a, b): return
/// a + b` and a recursion's base case clear two and one registers instead of
/// the whole window.
///
/// A generator's code is left alone: its frame is resumed in the middle,
/// with every register restored, so "reached from the entry" says nothing
/// about what its registers hold (its frames also always end on the slow
/// path, which clears the whole window).
pub(super) fn mark_early_returns(instrs: &mut [Instr], nparams: u16) {
    if instrs.iter().any(|i| matches!(i, Instr::Yield { .. })) {
        return;
    }
    let len = instrs.len();
    // Write no register, end nothing, raise nothing but errors that unwind
    // (which clears the whole window). Operator hooks written in Apsi run in
    // frames above this whole window.
    let pure = |i: &Instr| {
        matches!(
            i,
            Instr::Nop
                | Instr::Jmp { .. }
                | Instr::JmpIf { .. }
                | Instr::JmpIfNot { .. }
                | Instr::CmpJmp { .. }
                | Instr::CmpJmpI { .. }
                | Instr::CmpJmpNone { .. }
                | Instr::CheckBound { .. }
        )
    };
    // Write register `r` and no other.
    let writes_only = |i: &Instr, r: Reg| match *i {
        Instr::Move { a, .. }
        | Instr::LoadK { a, .. }
        | Instr::LoadInt { a, .. }
        | Instr::LoadNone { a }
        | Instr::LoadBool { a, .. }
        | Instr::GetGlobal { a, .. }
        | Instr::Add { a, .. }
        | Instr::Sub { a, .. }
        | Instr::Mul { a, .. }
        | Instr::AddI { a, .. }
        | Instr::Bin { a, .. }
        | Instr::Unary { a, .. }
        | Instr::Cmp { a, .. }
        | Instr::CmpI { a, .. } => a == r,
        _ => false,
    };
    let mut regs: Vec<Reg> = instrs
        .iter()
        .filter_map(|i| match i {
            Instr::Return { a } => Some(*a),
            _ => None,
        })
        .collect();
    regs.sort_unstable();
    regs.dedup();
    if regs.is_empty() {
        return;
    }
    // The control-flow edges, once; only what counts as harmless depends on `r`.
    let succ: Vec<Vec<usize>> = (0..len).map(|pc| successors(instrs, pc)).collect();
    for r in regs {
        let ok = |i: &Instr| pure(i) || writes_only(i, r);
        let mut reached = vec![false; len];
        let mut work = vec![0usize];
        while let Some(pc) = work.pop() {
            if pc >= len || reached[pc] {
                continue;
            }
            reached[pc] = true;
            if ok(&instrs[pc]) {
                work.extend_from_slice(&succ[pc]);
            }
        }
        let mut only_ok_preds = vec![true; len];
        for (pc, targets) in succ.iter().enumerate() {
            let from_ok = reached[pc] && ok(&instrs[pc]);
            for &s in targets {
                if let Some(p) = only_ok_preds.get_mut(s) {
                    *p &= from_ok;
                }
            }
        }
        for pc in 0..len {
            if matches!(instrs[pc], Instr::Return { a } if a == r) && reached[pc] && only_ok_preds[pc] {
                instrs[pc] = Instr::ReturnParams { a: r, n: nparams };
            }
        }
    }
}
