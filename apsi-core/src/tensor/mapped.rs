//! Tensor elements that live in a memory-mapped file (`Storage::Mapped`).
//!
//! [`Elems<T>`] is what a [`Buffer`](super::storage::Buffer) holds per
//! dtype: an owned vector, or a window of a mapping. Both dereference to
//! `[T]`, so every kernel, view, reduction and assignment works on mapped
//! tensors exactly as on CPU ones. [`MappedStorage`] owns the mapping behind
//! the same reader/writer lock as a CPU buffer.
//!
//! Two kinds of mapping:
//! - shared (`MAP_SHARED`, writable): writes through the tensor go to the
//!   file (what `open_tensor` gives);
//! - private (`MAP_PRIVATE`, copy-on-write): the file is only read; a write
//!   through the tensor changes this process's copy of the page, never the
//!   file (what `load_tensor(mmap=true)` gives).
//!
//! Invariants: a mapped window is aligned for `T` and lies inside its
//! mapping (checked when it is made); it is never `bool` (a byte other than
//! 0 or 1 in a file would not be a valid Rust `bool`), so any bytes of the
//! file are valid elements. What the operating system cannot promise is not
//! promised here either: a file truncated by another process while mapped
//! makes the next access fault (SIGBUS), as with NumPy's memmap.

use super::dtype::DType;
use super::storage::Buffer;
use half::{bf16, f16};
use parking_lot::RwLock;
use std::fs::File;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The elements of one dtype: owned, or a window of a mapped file.
pub enum Elems<T> {
    Owned(Vec<T>),
    Mapped(MappedSlice<T>),
}

/// `len` elements of `T` at `ptr`, inside the mapping kept alive by `_map`.
pub struct MappedSlice<T> {
    ptr: *mut T,
    len: usize,
    _map: Arc<memmap2::MmapMut>,
}

// SAFETY: the slice is plain memory of a `Send + Sync` element type; shared
// access goes through `&[T]` and mutation through `&mut [T]` only (the
// storage's lock decides who gets which), as for a `Vec<T>`.
unsafe impl<T: Send> Send for MappedSlice<T> {}
unsafe impl<T: Sync> Sync for MappedSlice<T> {}

impl<T> Deref for Elems<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            Elems::Owned(v) => v,
            // SAFETY: `ptr` is aligned and `len` elements lie inside the live
            // mapping (checked in `MappedStorage::map`); every bit pattern is
            // a valid `T` for the mapped dtypes (never bool).
            Elems::Mapped(m) => unsafe { std::slice::from_raw_parts(m.ptr, m.len) },
        }
    }
}

impl<T> DerefMut for Elems<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Elems::Owned(v) => v,
            // SAFETY: as for `deref`; `&mut self` makes this the only access
            // through this slice, and the mapping is writable (shared or
            // copy-on-write).
            Elems::Mapped(m) => unsafe { std::slice::from_raw_parts_mut(m.ptr, m.len) },
        }
    }
}

impl<T> From<Vec<T>> for Elems<T> {
    fn from(v: Vec<T>) -> Elems<T> {
        Elems::Owned(v)
    }
}

impl<T> Elems<T> {
    /// Whether the elements live in a mapped file.
    pub fn is_mapped(&self) -> bool {
        matches!(self, Elems::Mapped(_))
    }
}

/// A tensor's elements in a memory-mapped file.
pub struct MappedStorage {
    pub(crate) buf: RwLock<Buffer>,
    path: PathBuf,
    shared: bool,
}

impl MappedStorage {
    /// Maps `len` elements of `dtype` starting `offset` bytes into `file`.
    /// `shared`: writes go to the file (the file must be open for writing);
    /// otherwise the mapping is private copy-on-write. The file must already
    /// be long enough. Errors (as text) name what was expected and found.
    pub fn map(
        file: &File,
        path: &Path,
        offset: u64,
        len: usize,
        dtype: DType,
        shared: bool,
    ) -> Result<MappedStorage, String> {
        let elem = match dtype {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            other => {
                return Err(format!(
                    "a mapped tensor needs a dtype of f64, f32, f16, bf16, i64 or i32, found {}",
                    other.name()
                ))
            }
        };
        let bytes = len
            .checked_mul(elem)
            .ok_or_else(|| format!("{len} elements of {} are too many to map", dtype.name()))?;
        let file_len = file
            .metadata()
            .map_err(|e| format!("cannot read the size of {}: {e}", path.display()))?
            .len();
        let end = offset
            .checked_add(bytes as u64)
            .ok_or_else(|| "the mapped range overflows".to_string())?;
        if end > file_len {
            return Err(format!(
                "{} holds {file_len} bytes, but {len} elements of {} at offset {offset} need {end}",
                path.display(),
                dtype.name()
            ));
        }
        if !offset.is_multiple_of(elem as u64) {
            return Err(format!(
                "the data of {} starts at byte {offset}, not aligned for {}",
                path.display(),
                dtype.name()
            ));
        }
        if bytes == 0 {
            let buf = with_empty(dtype);
            return Ok(MappedStorage {
                buf: RwLock::new(buf),
                path: path.to_path_buf(),
                shared,
            });
        }
        let mut opts = memmap2::MmapOptions::new();
        opts.offset(offset).len(bytes);
        // SAFETY: mapping a file is unsafe because another process may change
        // or truncate it meanwhile; that is the documented contract of mapped
        // tensors (see the module docs), as it is for NumPy's memmap.
        let map = unsafe {
            if shared {
                opts.map_mut(file)
            } else {
                opts.map_copy(file)
            }
        }
        .map_err(|e| format!("cannot map {}: {e}", path.display()))?;
        let mut map = Arc::new(map);
        let base = match Arc::get_mut(&mut map) {
            Some(m) => m.as_mut_ptr(),
            None => return Err("internal error: a fresh mapping is shared".into()),
        };
        fn window<T>(base: *mut u8, len: usize, map: Arc<memmap2::MmapMut>) -> Result<Elems<T>, String> {
            if !(base as usize).is_multiple_of(std::mem::align_of::<T>()) {
                return Err("the mapping is not aligned for its dtype".into());
            }
            Ok(Elems::Mapped(MappedSlice {
                ptr: base as *mut T,
                len,
                _map: map,
            }))
        }
        let buf = match dtype {
            DType::F64 => Buffer::F64(window::<f64>(base, len, map)?),
            DType::F32 => Buffer::F32(window::<f32>(base, len, map)?),
            DType::F16 => Buffer::F16(window::<f16>(base, len, map)?),
            DType::BF16 => Buffer::BF16(window::<bf16>(base, len, map)?),
            DType::I64 => Buffer::I64(window::<i64>(base, len, map)?),
            _ => Buffer::I32(window::<i32>(base, len, map)?),
        };
        Ok(MappedStorage {
            buf: RwLock::new(buf),
            path: path.to_path_buf(),
            shared,
        })
    }

    /// The mapped file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether writes go to the file (a shared mapping) rather than to a
    /// private copy-on-write copy.
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// Writes dirty pages of a shared mapping back to the file now (the
    /// operating system does it anyway, at the latest when the mapping ends).
    pub fn flush(&self) -> Result<(), String> {
        if !self.shared {
            return Ok(());
        }
        let g = self.buf.read_recursive();
        let r = match &*g {
            Buffer::F64(Elems::Mapped(m)) => m._map.flush(),
            Buffer::F32(Elems::Mapped(m)) => m._map.flush(),
            Buffer::F16(Elems::Mapped(m)) => m._map.flush(),
            Buffer::BF16(Elems::Mapped(m)) => m._map.flush(),
            Buffer::I64(Elems::Mapped(m)) => m._map.flush(),
            Buffer::I32(Elems::Mapped(m)) => m._map.flush(),
            _ => Ok(()),
        };
        r.map_err(|e| format!("cannot write {} back: {e}", self.path.display()))
    }
}

fn with_empty(dtype: DType) -> Buffer {
    match dtype {
        DType::F64 => Buffer::F64(Vec::new().into()),
        DType::F32 => Buffer::F32(Vec::new().into()),
        DType::F16 => Buffer::F16(Vec::new().into()),
        DType::BF16 => Buffer::BF16(Vec::new().into()),
        DType::I64 => Buffer::I64(Vec::new().into()),
        _ => Buffer::I32(Vec::new().into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::storage::{Scalar, Storage};
    use std::io::Write;

    fn temp(name: &str, bytes: &[u8]) -> (PathBuf, File) {
        let dir = std::env::temp_dir().join(format!("apsi-mapped-{}-{name}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let p = dir.join("f.bin");
        let mut f = File::create(&p).expect("create");
        f.write_all(bytes).expect("write");
        drop(f);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .expect("open");
        (p, f)
    }

    #[test]
    fn shared_writes_reach_the_file() {
        let mut bytes = vec![0u8; 16];
        bytes.extend_from_slice(&1.5f32.to_le_bytes());
        bytes.extend_from_slice(&2.5f32.to_le_bytes());
        let (p, f) = temp("shared", &bytes);
        let m = MappedStorage::map(&f, &p, 16, 2, DType::F32, true).expect("map");
        let s = Storage::Mapped(m);
        assert_eq!(s.read(|b| f32::slice(b).map(|v| v.to_vec())), Some(vec![1.5, 2.5]));
        s.write(|b| {
            if let Some(v) = f32::slice_mut(b) {
                v[1] = 7.0;
            }
        });
        if let Storage::Mapped(m) = &s {
            m.flush().expect("flush");
        }
        drop(s);
        let back = std::fs::read(&p).expect("read");
        assert_eq!(&back[20..24], &7.0f32.to_le_bytes());
    }

    #[test]
    fn private_writes_stay_in_memory() {
        let (p, f) = temp("private", &3i64.to_le_bytes());
        let s = Storage::Mapped(MappedStorage::map(&f, &p, 0, 1, DType::I64, false).expect("map"));
        s.write(|b| {
            if let Some(v) = i64::slice_mut(b) {
                v[0] = 9;
            }
        });
        assert_eq!(s.read(|b| i64::slice(b).map(|v| v[0])), Some(9));
        drop(s);
        assert_eq!(std::fs::read(&p).expect("read"), 3i64.to_le_bytes());
    }

    #[test]
    fn refuses_short_files_misalignment_and_bool() {
        let (p, f) = temp("short", &[0u8; 12]);
        let e = MappedStorage::map(&f, &p, 0, 2, DType::F64, false)
            .err()
            .unwrap_or_default();
        assert!(e.contains("holds 12 bytes"), "{e}");
        let e = MappedStorage::map(&f, &p, 2, 1, DType::F32, false)
            .err()
            .unwrap_or_default();
        assert!(e.contains("not aligned"), "{e}");
        let e = MappedStorage::map(&f, &p, 0, 1, DType::Bool, false)
            .err()
            .unwrap_or_default();
        assert!(e.contains("needs a dtype"), "{e}");
        assert!(MappedStorage::map(&f, &p, 8, 0, DType::F32, false).is_ok());
    }
}
