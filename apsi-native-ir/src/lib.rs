//! The contract between `apsi-native` (the front half, inside the `apsi`
//! binary) and `apsi-native-llvm` (the LLVM back end, a plugin loaded with
//! `dlopen` at the first native compile).
//!
//! - [`ir`]: the typed, lowered form of one `@native` function and the
//!   functions it calls, sent to the plugin as JSON.
//! - [`abi`]: the C ABI: the plugin's entry point, the call context, the
//!   tensor descriptor, the host callbacks and the error codes.

pub mod abi;
pub mod ir;
