//! Compile a module: build LLVM IR, optimise at O3 for the host CPU (its
//! name and features, so AVX2/AVX-512 are used), JIT with MCJIT, and return
//! the trampolines' addresses. Code stays mapped for the rest of the process.

use crate::codegen::Gen;
use apsi_native_ir::ir::Module as IrModule;
use inkwell::context::Context;
use inkwell::execution_engine::ExecutionEngine;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, InitializationConfig, RelocMode, Target, TargetMachine};
use inkwell::OptimizationLevel;
use std::sync::Once;

static INIT: Once = Once::new();

/// The optimisation pipeline: LLVM's O3, after a short canonicalisation
/// that ends in IRCE (inductive range check elimination). A loop over
/// `range(a, b)` whose bounds checks test its own counter (`x[i]`) is split
/// there into a main loop, whose iterations are known to be in bounds and
/// run without the checks (so it can be vectorised), and short pre- and
/// post-loops that keep them: an index out of range still raises at the
/// same iteration. IRCE needs the loops in simplified, rotated form (and
/// the chunk bodies of `parallel for` inlined into their step-1 copy
/// first), which O3 alone would only reach after its loop passes have run,
/// so it runs before. It runs twice: first on the checks as emitted (`i <
/// n`), which is what it recognises in the innermost loops, then after
/// `indvars`, which puts the loops around them in the form it needs (and
/// rewrites the innermost checks as `i != n`, which it no longer would).
const PIPELINE: &str = "always-inline,function(lower-expect,sroa,early-cse,instcombine,simplifycfg,\
loop-simplify,lcssa,loop-rotate,irce,indvars,irce),default<O3>";

/// Returns the optimised IR when asked for.
pub fn compile(json: &[u8], want_ir: bool, addrs: &mut [u64]) -> Result<Option<String>, String> {
    let m: IrModule = serde_json::from_slice(json).map_err(|e| format!("bad IR from the host: {e}"))?;
    if addrs.len() < 2 * m.funcs.len() {
        return Err("too few address slots".into());
    }
    let mut init_err = None;
    INIT.call_once(|| {
        if let Err(e) = Target::initialize_native(&InitializationConfig::default()) {
            init_err = Some(e);
        }
        ExecutionEngine::link_in_mc_jit();
        // LLVM 14 vectorises a loop's remainder only after a main loop at
        // least 16 lanes wide, so 8-lane f64 loops (AVX-512) left up to 15
        // iterations to scalar code (N-body's 1000 = 62 x 16 + 8).
        // No runtime unrolling (of loops whose trip count is known only when
        // they run): for the vectoriser's loops it adds nothing (it
        // interleaves them itself), and it made the short inner loops that
        // IRCE frees of their checks slower (k-means over 4 coordinates:
        // 1.5x, an unrolled-by-8 body skipped for its remainder loop on each
        // entry); on the scalar benchmarks it measured even.
        let mut owned: Vec<std::ffi::CString> = vec![
            c"apsi-native".into(),
            c"-epilogue-vectorization-minimum-VF=8".into(),
            c"-unroll-runtime=false".into(),
        ];
        // `APSI_NATIVE_LLVM_ARGS`: more of LLVM's options, for measuring the back end.
        if let Ok(more) = std::env::var("APSI_NATIVE_LLVM_ARGS") {
            owned.extend(more.split_whitespace().filter_map(|a| std::ffi::CString::new(a).ok()));
        }
        let args: Vec<*const std::ffi::c_char> = owned.iter().map(|a| a.as_ptr()).collect();
        // SAFETY: valid NUL-terminated strings that outlive the call; called once, before any compile.
        unsafe { llvm_sys::support::LLVMParseCommandLineOptions(args.len() as i32, args.as_ptr(), std::ptr::null()) };
    });
    if let Some(e) = init_err {
        return Err(format!("cannot initialise LLVM's native target: {e}"));
    }
    let cpu = TargetMachine::get_host_cpu_name().to_string();
    let features = TargetMachine::get_host_cpu_features().to_string();
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple).map_err(|e| e.to_string())?;
    let tm = target
        .create_target_machine(
            &triple,
            &cpu,
            &features,
            OptimizationLevel::Aggressive,
            RelocMode::Default,
            CodeModel::JITDefault,
        )
        .ok_or("cannot create a target machine for this CPU")?;
    // The context and engine live for the rest of the process (the code they own is called later).
    let ctx: &'static Context = Box::leak(Box::new(Context::create()));
    let module = {
        let g = Gen::new(ctx, &m, &cpu, &features)?;
        g.build()?
    };
    module.set_triple(&triple);
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    let module = if m.fastmath {
        // LLVM 14's C API cannot set fast-math flags on instructions: mark
        // every float instruction in the textual IR and parse it back.
        let text = module.print_to_string().to_string();
        let text = fast_flags(&text);
        let buf = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "apsi-native");
        ctx.create_module_from_ir(buf)
            .map_err(|e| format!("fast-math rewrite failed: {e}"))?
    } else {
        module
    };
    module
        .verify()
        .map_err(|e| format!("internal error: invalid LLVM IR: {e}"))?;
    // For work on the code generator: each module before optimisation, as
    // DIR/<entry function>.ll (`opt-14 -passes=…` reads it).
    if let Some(dir) = std::env::var_os("APSI_NATIVE_RAW_IR") {
        let name = m.funcs.iter().find(|f| f.entry).map_or("module", |f| f.name.as_str());
        let path = std::path::Path::new(&dir).join(format!("{name}.ll"));
        let _ = std::fs::write(path, module.print_to_string().to_string());
    }
    // `APSI_NATIVE_PIPELINE` replaces it, for measuring the back end (`default<O3>` was the pipeline before IRCE).
    let pipeline = std::env::var("APSI_NATIVE_PIPELINE").unwrap_or_else(|_| PIPELINE.to_string());
    module
        .run_passes(&pipeline, &tm, PassBuilderOptions::create())
        .map_err(|e| e.to_string())?;
    pair_sin_cos(&module);
    // Declared after the passes, which would drop an unused declaration;
    // the calls the back end makes for `llvm.exp.f64`/`llvm.log.f64` go to
    // the symbols these name.
    let cores = libm_cores();
    for (name, _) in cores {
        if module.get_function(name).is_none() {
            let f64t = ctx.f64_type();
            module.add_function(name, f64t.fn_type(&[f64t.into()], false), None);
        }
    }
    #[cfg(debug_assertions)]
    module
        .verify()
        .map_err(|e| format!("internal error: invalid LLVM IR after pairing sin and cos: {e}"))?;
    let ir = if want_ir {
        Some(module.print_to_string().to_string())
    } else {
        None
    };
    let ee = module
        .create_jit_execution_engine(OptimizationLevel::Aggressive)
        .map_err(|e| e.to_string())?;
    for (name, addr) in host_symbols(&m).into_iter().chain(cores.iter().copied()) {
        if let Some(f) = module.get_function(name) {
            ee.add_global_mapping(&f, addr as usize);
        }
    }
    for (i, f) in m.funcs.iter().enumerate() {
        if f.entry {
            addrs[2 * i] = ee
                .get_function_address(&format!("{}$entry", f.name))
                .map_err(|e| e.to_string())? as u64;
        }
        if f.chunk {
            addrs[2 * i + 1] = ee
                .get_function_address(&format!("{}$chunk", f.name))
                .map_err(|e| e.to_string())? as u64;
        }
    }
    std::mem::forget(ee);
    Ok(ir)
}

/// Puts `sin(v)` and `cos(v)` of one value side by side (the later right
/// after the earlier when the earlier's block dominates, else both right
/// after `v` is computed), so that instruction selection makes them one `sincos` call
/// (glibc's gives the bits of `sin` and `cos`; it costs about 1.25 `sin`
/// where the two cost 1.8). O3 leaves them apart when a check between them
/// ends a block (`z1 = r * cos(a)`, an `exp` with its range check, then
/// `z2 = r * sin(a)`). Both are pure, so computing one earlier on the same
/// path is safe: the point it moves to dominates its old place and so its
/// uses.
fn pair_sin_cos(module: &inkwell::module::Module) {
    use llvm_sys::core::*;
    use llvm_sys::prelude::LLVMValueRef;
    use std::collections::HashMap;
    // SAFETY: plain walks over a verified module this thread owns; an
    // instruction is moved only within its function, before a point its
    // operand dominates.
    unsafe {
        let callee_name = |call: LLVMValueRef| -> Option<&'static str> {
            let f = LLVMGetCalledValue(call);
            if f.is_null() {
                return None;
            }
            let mut len = 0usize;
            let p = LLVMGetValueName2(f, &mut len);
            if p.is_null() {
                return None;
            }
            let name = std::slice::from_raw_parts(p as *const u8, len);
            match name {
                b"llvm.sin.f64" => Some("sin"),
                b"llvm.cos.f64" => Some("cos"),
                _ => None,
            }
        };
        let mut f = LLVMGetFirstFunction(module.as_mut_ptr());
        while !f.is_null() {
            // operand → (a sin call, a cos call)
            let mut pairs: HashMap<LLVMValueRef, (Option<LLVMValueRef>, Option<LLVMValueRef>)> = HashMap::new();
            let mut bb = LLVMGetFirstBasicBlock(f);
            while !bb.is_null() {
                let mut i = LLVMGetFirstInstruction(bb);
                while !i.is_null() {
                    if !LLVMIsACallInst(i).is_null() {
                        if let Some(which) = callee_name(i) {
                            let v = LLVMGetOperand(i, 0);
                            let e = pairs.entry(v).or_default();
                            if which == "sin" {
                                e.0.get_or_insert(i);
                            } else {
                                e.1.get_or_insert(i);
                            }
                        }
                    }
                    i = LLVMGetNextInstruction(i);
                }
                bb = LLVMGetNextBasicBlock(bb);
            }
            let builder = LLVMCreateBuilderInContext(LLVMGetModuleContext(module.as_mut_ptr()));
            let move_after = |call: LLVMValueRef, at: LLVMValueRef| {
                LLVMInstructionRemoveFromParent(call);
                LLVMPositionBuilderBefore(builder, LLVMGetNextInstruction(at));
                LLVMInsertIntoBuilder(builder, call);
            };
            for (v, (s, c)) in pairs {
                let (Some(s), Some(c)) = (s, c) else { continue };
                // Best: the later call right after the earlier one, where the
                // earlier's checks have been made (no argument kept across the
                // call for them); that needs the earlier's block to dominate.
                let (bs, bc) = (LLVMGetInstructionParent(s), LLVMGetInstructionParent(c));
                if bs == bc {
                    let mut n = LLVMGetNextInstruction(s);
                    while !n.is_null() && n != c {
                        n = LLVMGetNextInstruction(n);
                    }
                    if n == c {
                        move_after(c, s);
                    } else {
                        move_after(s, c);
                    }
                    continue;
                }
                if dominates(f, bs, bc) {
                    move_after(c, s);
                    continue;
                }
                if dominates(f, bc, bs) {
                    move_after(s, c);
                    continue;
                }
                // Else both right after `v`, which dominates both.
                let at = if !LLVMIsAInstruction(v).is_null() {
                    let mut n = LLVMGetNextInstruction(v);
                    while !n.is_null() && !LLVMIsAPHINode(n).is_null() {
                        n = LLVMGetNextInstruction(n);
                    }
                    n
                } else if !LLVMIsAArgument(v).is_null() {
                    LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(f))
                } else {
                    std::ptr::null_mut()
                };
                if at.is_null() {
                    continue;
                }
                for call in [s, c] {
                    if call == at {
                        continue;
                    }
                    LLVMInstructionRemoveFromParent(call);
                    LLVMPositionBuilderBefore(builder, at);
                    LLVMInsertIntoBuilder(builder, call);
                }
            }
            LLVMDisposeBuilder(builder);
            f = LLVMGetNextFunction(f);
        }
    }
}

/// Whether block `a` dominates block `b` of function `f`: `b` cannot be
/// reached from the entry without passing through `a`.
///
/// # Safety
/// `f` is a function with a body; `a` and `b` are blocks of it.
unsafe fn dominates(
    f: llvm_sys::prelude::LLVMValueRef,
    a: llvm_sys::prelude::LLVMBasicBlockRef,
    b: llvm_sys::prelude::LLVMBasicBlockRef,
) -> bool {
    use llvm_sys::core::*;
    let entry = LLVMGetEntryBasicBlock(f);
    if a == entry || a == b {
        return true;
    }
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![entry];
    seen.insert(entry);
    while let Some(bb) = stack.pop() {
        if bb == b {
            return false;
        }
        let t = LLVMGetBasicBlockTerminator(bb);
        if t.is_null() {
            continue;
        }
        for k in 0..LLVMGetNumSuccessors(t) {
            let n = LLVMGetSuccessor(t, k);
            if n != a && seen.insert(n) {
                stack.push(n);
            }
        }
    }
    true
}

fn host_symbols(m: &IrModule) -> [(&'static str, u64); 5] {
    [
        ("apsi_rt_alloc", m.host.alloc),
        ("apsi_rt_copy", m.host.copy),
        ("apsi_rt_par_for", m.host.par_for),
        ("apsi_rt_fbin", m.host.fbin),
        ("apsi_rt_ipow", m.host.ipow),
    ]
}

/// The IEEE cores of libm's `exp` and `log`, where the C library has them:
/// glibc's `exp` and `log` are wrappers that call `__exp_finite` and
/// `__log_finite` (the same function under its old exported name), then
/// test the argument or result only to set `errno`, which native code
/// never reads. The result is the same bits; `exp`'s wrapper was 30% of
/// each call's time (a stack frame, a call through the PLT, two tests).
/// Found once per process with `dlvsym`, by the version they were exported
/// under; anywhere else the plain functions are called.
fn libm_cores() -> &'static [(&'static str, u64)] {
    static CORES: std::sync::OnceLock<Vec<(&'static str, u64)>> = std::sync::OnceLock::new();
    CORES.get_or_init(find_libm_cores)
}

fn find_libm_cores() -> Vec<(&'static str, u64)> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::ffi::{c_char, c_void};
        #[link(name = "dl")]
        extern "C" {
            fn dlvsym(handle: *mut c_void, symbol: *const c_char, version: *const c_char) -> *mut c_void;
        }
        let mut found = Vec::new();
        for (name, core) in [("exp", c"__exp_finite"), ("log", c"__log_finite")] {
            // SAFETY: RTLD_DEFAULT (null) and NUL-terminated names; the
            // result is only used as a function address when not null.
            let p = unsafe { dlvsym(std::ptr::null_mut(), core.as_ptr(), c"GLIBC_2.15".as_ptr()) };
            if !p.is_null() {
                found.push((name, p as u64));
            }
        }
        found
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        Vec::new()
    }
}

/// Adds `fast` to every float arithmetic instruction and comparison.
fn fast_flags(text: &str) -> String {
    let mut s = text.to_string();
    for op in ["fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "fcmp"] {
        s = s.replace(&format!(" = {op} "), &format!(" = {op} fast "));
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn fast_flags_mark_float_ops_only() {
        let t = "  %a = fadd double %x, %y\n  %b = add i64 %p, %q\n  %c = fcmp olt double %a, %x\n";
        let f = super::fast_flags(t);
        assert!(f.contains("fadd fast double"));
        assert!(f.contains("fcmp fast olt"));
        assert!(f.contains("= add i64"));
    }
}

#[cfg(test)]
mod pairing_tests {
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;

    /// `cos(a)`, a check that ends the block, then `sin(a)`: the sin call
    /// moves right after the cos call (where instruction selection makes one
    /// `sincos` of them), and the module stays valid.
    #[test]
    fn sin_and_cos_of_one_value_end_up_side_by_side() {
        let ir = r#"
declare double @llvm.sin.f64(double)
declare double @llvm.cos.f64(double)
define double @f(double %a, i1 %c) {
entry:
  %x = fmul double %a, 2.0
  %co = call double @llvm.cos.f64(double %x)
  br i1 %c, label %fail, label %ok
fail:
  ret double 0.0
ok:
  %si = call double @llvm.sin.f64(double %x)
  %r = fadd double %co, %si
  ret double %r
}
"#;
        let ctx = Context::create();
        let buf = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "t");
        let m = ctx.create_module_from_ir(buf).unwrap();
        super::pair_sin_cos(&m);
        m.verify().unwrap();
        let text = m.print_to_string().to_string();
        let cos = text.find("@llvm.cos.f64(double %x)").unwrap();
        let sin = text.find("@llvm.sin.f64(double %x)").unwrap();
        let between = &text[cos..sin];
        assert_eq!(between.lines().count(), 2, "not adjacent:\n{text}");
        assert!(!between.contains("br "), "{text}");
    }
}
