//! Per-opcode counts of the instructions the dispatch loop runs and of those
//! that fall through to the slow path (`exec/slow.rs`), for finding which
//! instructions a program needs fast paths for. Compiled in only with the
//! `opstats` feature; `APSI_OPSTATS=1` prints the table (most run first) to
//! stderr when the main program ends. Counts are per thread.

use crate::code::Instr;
use std::cell::RefCell;

/// Counts by the instruction's variant index: (run, slow), and its name.
struct Table {
    counts: Vec<[u64; 2]>,
    names: Vec<&'static str>,
    /// Pairs run one after the other (`APSI_OPSTATS=pairs`), by the two
    /// variants' indices, and the variant run last.
    pairs: std::collections::HashMap<(u8, u8), u64>,
    last: u8,
}

thread_local! {
    /// Slow-path entries by site: (code name, byte offset, instruction) -> count.
    static SITES: RefCell<std::collections::HashMap<(String, u32, String), u64>> = RefCell::new(Default::default());
    static TABLE: RefCell<Table> = RefCell::new(Table {
        counts: vec![[0; 2]; 256],
        names: vec![""; 256],
        pairs: Default::default(),
        last: 0,
    });
}

/// The variant's index: the enum's tag byte (`Instr` is a plain enum of
/// `Copy` fields whose first byte is its tag on every target we build).
fn variant(ins: &Instr) -> usize {
    // SAFETY: `Instr` is 8 bytes (asserted in `code.rs`); reading its first byte is in bounds.
    unsafe { *(ins as *const Instr as *const u8) as usize }
}

/// Whether `APSI_OPSTATS=pairs` asks for the pairs of instructions run
/// one after the other (the busiest are printed after the table).
static PAIRS_ASKED: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| std::env::var_os("APSI_OPSTATS").is_some_and(|v| v == "pairs"));

/// Count one instruction: run by the dispatch loop, or (`slow`) by the slow path.
pub fn count(ins: &Instr, slow: bool) {
    TABLE.with(|t| {
        let mut t = t.borrow_mut();
        let v = variant(ins);
        t.counts[v][slow as usize] += 1;
        if !slow && *PAIRS_ASKED {
            let last = t.last;
            *t.pairs.entry((last, v as u8)).or_insert(0) += 1;
            t.last = v as u8;
        }
        if t.names[v].is_empty() {
            let text = format!("{ins:?}");
            let name = text.split([' ', '{']).next().unwrap_or("?").to_string();
            t.names[v] = Box::leak(name.into_boxed_str());
        }
    });
}

/// Count one slow-path entry by its site (`APSI_OPSTATS=sites` prints the
/// busiest: the function, the source offset and the instruction).
pub fn count_site(code: &crate::code::Code, pc: usize, ins: &Instr) {
    static ASKED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*ASKED.get_or_init(|| std::env::var_os("APSI_OPSTATS").is_some_and(|v| v == "sites")) {
        return;
    }
    let key = (code.name.to_string(), code.span_at(pc).start, format!("{ins:?}"));
    SITES.with(|s| *s.borrow_mut().entry(key).or_insert(0) += 1);
}

/// Print the table to stderr when `APSI_OPSTATS` is set.
pub fn dump_if_asked() {
    if std::env::var_os("APSI_OPSTATS").is_none() {
        return;
    }
    TABLE.with(|t| {
        let t = t.borrow();
        let mut rows: Vec<(u64, u64, &str)> = (0..t.counts.len())
            .filter(|&i| t.counts[i][0] + t.counts[i][1] > 0)
            .map(|i| (t.counts[i][0], t.counts[i][1], t.names[i]))
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.0));
        eprintln!("{:>12} {:>12}  instruction", "run", "slow path");
        for (run, slow, name) in rows {
            eprintln!("{run:>12} {slow:>12}  {name}");
        }
        let mut pairs: Vec<_> = t.pairs.iter().collect();
        pairs.sort_by_key(|r| std::cmp::Reverse(*r.1));
        // (The first instruction of a thread has no pair: its `last` is
        // the table's initial 0, which has no name unless a `Nop` ran.)
        let named = |i: u8| !t.names[i as usize].is_empty();
        for ((a, b), n) in pairs.into_iter().filter(|((a, b), _)| named(*a) && named(*b)).take(40) {
            eprintln!("{n:>12}  {} -> {}", t.names[*a as usize], t.names[*b as usize]);
        }
    });
    SITES.with(|s| {
        let s = s.borrow();
        let mut rows: Vec<_> = s.iter().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(*r.1));
        for ((name, at, ins), n) in rows.into_iter().take(25) {
            eprintln!("{n:>12}  {name} @{at}  {ins}");
        }
    });
}
