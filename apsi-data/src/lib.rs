//! `use data` (LANGUAGE.md §8): tensors in NumPy `.npy` files, memory-mapped
//! both ways, and lazy data pipelines. See docs/DATA.md.
//!
//! - [`npy`]: the `.npy` format (headers, element bytes).
//! - [`files`]: `save_tensor`, `load_tensor`, `open_tensor`.
//! - [`stream`]: the pipeline graph and its pull engine; [`sources`],
//!   [`pmap`] (ordered `map` on the worker pool), [`prefetch`].
//! - [`collate`]: batching and unbatching; [`csv`], [`glob`]: sources' parsers.
//! - [`cache`]: `cache(dir)` and `@disk_cache`, signed with [`key`]; values
//!   stored in [`serial`]'s encoding.
//! - [`object`]: the `Dataset` value; [`funcs`]: the exported functions.
//!
//! `map` and `filter` are the prelude's: given a dataset, the prelude calls
//! the dataset's own `map`/`filter` method, so this module does not export
//! them.

pub mod cache;
pub mod collate;
pub mod csv;
pub mod files;
pub mod funcs;
pub mod glob;
pub mod key;
pub mod npy;
pub mod object;
pub mod pmap;
pub mod prefetch;
pub mod rng;
pub mod serial;
pub mod sources;
pub mod stream;

use apsi_core::api::{ModuleBuilder, ModuleDescriptor};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `data` module, ready to install into a runtime.
pub fn module() -> ModuleDescriptor {
    ModuleBuilder::new("data", VERSION, "^2.1")
        .function("save_tensor", files::save_tensor)
        .function("load_tensor", files::load_tensor)
        .function("open_tensor", files::open_tensor)
        .function("from_tensors", funcs::from_tensors)
        .function("from_npy", funcs::from_npy)
        .function("from_csv", funcs::from_csv)
        .function("from_files", funcs::from_files)
        .function("from_generator", funcs::from_generator)
        .function("from_range", funcs::from_range)
        .function("from_list", funcs::from_list)
        .function("shuffle", funcs::shuffle)
        .function("batch", funcs::batch)
        .function("unbatch", funcs::unbatch)
        .function("take", funcs::take)
        .function("skip", funcs::skip)
        .function("repeat", funcs::repeat)
        .function("prefetch", funcs::prefetch)
        .function("cache", funcs::cache)
        .function("disk_cache", cache::disk_cache)
        .function("throughput", funcs::throughput)
        .reads_sources(&["load_tensor", "open_tensor", "from_npy", "from_csv", "from_files"])
        .build()
}
