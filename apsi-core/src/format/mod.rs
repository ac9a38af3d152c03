//! Text forms of values: Python's float repr, `str`/`repr` of values and
//! the format mini-language of f-strings.

mod bytes;
mod float;
pub mod percent;
mod repr;
mod spec;

pub use bytes::bytes_repr;
pub use float::{f32_repr, float_repr};
pub use repr::{quote_str, repr_checked, repr_of, str_checked, str_of};
pub use spec::format_value;
