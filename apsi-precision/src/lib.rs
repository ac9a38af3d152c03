//! `use precision` (LANGUAGE.md §8): quantization to the narrow number
//! formats whose codecs and packed storage live in apsi-core
//! (`tensor::codec`). See docs/PRECISION.md.
//!
//! - [`quant`]: scales, codes and the way back (`quantize`, `dequantize`, errors).
//! - [`object`]: the `QTensor` value.
//! - [`funcs`]: the exported functions.

pub mod funcs;
pub mod object;
pub mod quant;

use apsi_core::api::{ModuleBuilder, ModuleDescriptor};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `precision` module, ready to install into a runtime.
pub fn module() -> ModuleDescriptor {
    ModuleBuilder::new("precision", VERSION, "^2.1")
        .function("quantize", funcs::quantize)
        .function("dequantize", funcs::dequantize)
        .function("round_to", funcs::round_to)
        .function("qmatmul", funcs::qmatmul)
        .function("precision", funcs::precision)
        .function("quant_error", funcs::quant_error)
        .function("format_info", funcs::format_info)
        .function("nbytes", funcs::nbytes)
        .build()
}
