//! Text forms of values: Python's float repr, `str`/`repr` of values and
//! the format mini-language of f-strings.

mod bytes;
pub mod percent;
mod repr;
mod spec;

pub use crate::text::{f32_repr, float_repr, quote_str};
pub use bytes::bytes_repr;
pub use repr::{repr_checked, repr_of, str_checked, str_of};
pub use spec::format_value;
