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
        let args = [
            c"apsi-native".as_ptr(),
            c"-epilogue-vectorization-minimum-VF=8".as_ptr(),
        ];
        // SAFETY: two valid NUL-terminated strings; called once, before any compile.
        unsafe { llvm_sys::support::LLVMParseCommandLineOptions(2, args.as_ptr(), std::ptr::null()) };
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
    module
        .run_passes("default<O3>", &tm, PassBuilderOptions::create())
        .map_err(|e| e.to_string())?;
    let ir = if want_ir {
        Some(module.print_to_string().to_string())
    } else {
        None
    };
    let ee = module
        .create_jit_execution_engine(OptimizationLevel::Aggressive)
        .map_err(|e| e.to_string())?;
    for (name, addr) in host_symbols(&m) {
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

fn host_symbols(m: &IrModule) -> [(&'static str, u64); 5] {
    [
        ("apsi_rt_alloc", m.host.alloc),
        ("apsi_rt_copy", m.host.copy),
        ("apsi_rt_par_for", m.host.par_for),
        ("apsi_rt_fbin", m.host.fbin),
        ("apsi_rt_ipow", m.host.ipow),
    ]
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
