//! Drop the functions of a compile that the entry function cannot reach.
//! Type inference lowers a `parallel for` body once per inference round, so
//! a module holds chunk functions no `ParFor` runs; compiling them would only
//! cost LLVM time.

use apsi_native_ir::ir::{Func, Op};

/// The functions reachable from `entry` (through calls and `parallel for`
/// chunks), renumbered in their original order, and the entry's new index.
pub fn reachable(funcs: Vec<Func>, entry: u32) -> (Vec<Func>, u32) {
    let n = funcs.len();
    let mut keep = vec![false; n];
    let mut work = vec![entry as usize];
    while let Some(i) = work.pop() {
        if i >= n || keep[i] {
            continue;
        }
        keep[i] = true;
        for op in &funcs[i].ops {
            match op {
                Op::Call { func, .. } => work.push(*func as usize),
                Op::ParFor { chunk, .. } => work.push(*chunk as usize),
                _ => {}
            }
        }
    }
    let mut new_id = vec![u32::MAX; n];
    let mut k = 0u32;
    for (i, kept) in keep.iter().enumerate() {
        if *kept {
            new_id[i] = k;
            k += 1;
        }
    }
    let renum = |old: u32| new_id.get(old as usize).copied().unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(k as usize);
    for (i, mut f) in funcs.into_iter().enumerate() {
        if !keep[i] {
            continue;
        }
        for op in f.ops.iter_mut() {
            match op {
                Op::Call { func, .. } => *func = renum(*func),
                Op::ParFor { chunk, .. } => *chunk = renum(*chunk),
                _ => {}
            }
        }
        out.push(f);
    }
    (out, renum(entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, ops: Vec<Op>) -> Func {
        Func {
            name: name.into(),
            params: Vec::new(),
            rets: Vec::new(),
            vars: Vec::new(),
            ops,
            entry: false,
            chunk: false,
        }
    }

    fn call(func: u32) -> Op {
        Op::Call {
            func,
            args: Vec::new(),
            dsts: Vec::new(),
        }
    }

    #[test]
    fn unreachable_functions_go_and_references_are_renumbered() {
        // 0: dead, 1: dead chunk, 2: callee of 3, 3: entry (calls 2 and itself).
        let funcs = vec![
            f("dead", vec![call(2)]),
            f("dead chunk", Vec::new()),
            f("callee", Vec::new()),
            f("entry", vec![call(2), call(3)]),
        ];
        let (out, e) = reachable(funcs, 3);
        let names: Vec<&str> = out.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, vec!["callee", "entry"]);
        assert_eq!(e, 1);
        assert_eq!(out[1].ops, vec![call(0), call(1)]);
    }
}
