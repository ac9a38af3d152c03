//! Tensors (LANGUAGE.md §7) and reverse-mode autodiff.
//!
//! - [`core::Tensor`]: `storage: Arc<Storage>` + [`layout::Layout`] (shape,
//!   strides, offset) + [`dtype::DType`] (+ its autodiff node).
//! - [`storage`]: CPU memory now; memory-mapped and device variants are
//!   stand-ins. Buffers are behind a lock (see the module docs for the rule
//!   that keeps writes through views from several threads safe).
//! - [`arith`], [`reduce`], [`shape`], [`index`], [`matmul`], [`fused`],
//!   [`wrapping`]: the operations; [`conv`] (`conv2d`, `max_pool2d`) and
//!   [`scatter`] (`scatter_reduce`): the differentiable operations of the
//!   `layers` module; [`inplace`]: `x op= y` written into `x`; [`kernels`]: broadcasting loops (rayon when large).
//! - [`autodiff`]: the tape and vector-Jacobian rules; [`api`]: the prelude
//!   functions (`tensor`, `zeros`, …, `grad`, `value_and_grad`).
//! - [`object`]: tensors as Apsi values (`Value::Object`), their methods and
//!   the operator hooks `ops` calls; [`print`]: their text.

pub mod annot;
pub mod api;
pub mod arith;
pub mod autodiff;
#[cfg(feature = "blas")]
pub mod cblas;
pub mod codec;
pub mod conv;
pub mod core;
pub mod cotangent;
pub mod deferred;
pub mod dtype;
pub mod fused;
pub mod gelu;
pub mod gemv;
pub mod index;
pub mod inplace;
pub mod kernels;
pub mod layout;
pub mod lstm;
pub mod mapped;
pub mod matmul;
pub mod object;
pub mod print;
pub mod random;
pub mod real;
pub mod reduce;
pub mod scatter;
pub mod shape;
pub mod storage;
pub mod vmath;
pub mod wrapping;

pub use self::core::Tensor;
pub use api::register;
pub use object::{as_tensor, tensor_value};

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
