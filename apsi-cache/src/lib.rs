//! Apsi's signed on-disk caches, outside the interpreter core: the per-user
//! key (`$APSI_HOME/cache.key`, [`key`]) that signs every cache entry, and
//! the compile cache ([`compile`]). The core only turns a compiled program
//! into bytes and back (`apsi_core::serial`); reading, writing, signing and
//! verifying happen here.

pub mod compile;
pub mod key;

pub use compile::{CompileCache, Entry, FileRecord, Hit, Known, Lookup};
