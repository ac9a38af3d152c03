//! `save_tensor`, `load_tensor`, `open_tensor`: tensors in NumPy `.npy` files.
//!
//! `load_tensor(path, mmap=true)` maps the file copy-on-write: nothing is
//! read until used, and writes to the tensor stay in this process (NumPy's
//! `mmap_mode='c'`). `open_tensor(path, shape, dtype)` creates a zero-filled
//! file (sparse, so it may exceed RAM) mapped shared: writes go to the file.

use crate::npy::{self, Descr};
use apsi_core::api::tensor::DType;
use apsi_core::api::tensor::Layout;
use apsi_core::api::tensor::MappedStorage;
use apsi_core::api::tensor::Storage;
use apsi_core::api::tensor::Tensor;
use apsi_core::api::tensor::{as_tensor, tensor_value};
use apsi_core::api::Args;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Caller, Exc, Kwargs, VResult, Value};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) fn io_err(path: &Path, what: &str, e: std::io::Error) -> Exc {
    err(ErrorKind::IOError, format!("cannot {what} {}: {e}", path.display()))
}

fn npy_err(path: &Path, msg: String) -> Exc {
    err(ErrorKind::ValueError, format!("{}: {msg}", path.display()))
}

/// A local path argument (where a function writes): a URL is refused.
pub(crate) fn path_arg(a: &Args, i: usize) -> VResult<PathBuf> {
    match a.req(i)? {
        Value::Str(s) if apsi_core::api::is_url(s.as_str()) => Err(err(
            ErrorKind::ValueError,
            format!(
                "{}() works on a local file; {} is a URL (only the functions that read a source, such as load_tensor and from_csv, fetch URLs)",
                a.name,
                s.as_str()
            ),
        )),
        Value::Str(s) => Ok(PathBuf::from(s.as_str())),
        other => Err(a.wrong(i, "a path (str)", other)),
    }
}

/// A source argument (where a function reads): a path, or an `http(s)://`
/// URL fetched into a local file (with `--allow-net`).
pub(crate) fn source_arg(c: &dyn Caller, a: &Args, i: usize) -> VResult<PathBuf> {
    match a.req(i)? {
        Value::Str(s) => apsi_core::api::local_source(c, s.as_str(), a.name),
        other => Err(a.wrong(i, "a path or URL (str)", other)),
    }
}

/// Writes `t` to `path` as a `.npy` file (through a temporary file renamed
/// into place, so a reader never sees half a file).
pub fn save(path: &Path, t: &Tensor) -> VResult<()> {
    let descr = Descr::of(t.dtype).ok_or_else(|| {
        err(
            ErrorKind::TypeError,
            format!(
                "save_tensor() writes f64, f32, f16, i64, i32 and bool tensors (NumPy has no {}); found {}: convert with x.astype(f32)",
                t.dtype.name(),
                t.dtype.name()
            ),
        )
    })?;
    let tmp = tmp_path(path);
    let write = || -> std::io::Result<()> {
        let f = File::create(&tmp)?;
        let mut w = BufWriter::with_capacity(1 << 16, f);
        w.write_all(&npy::header_bytes(&descr, t.shape()))?;
        let d = t.dense();
        apsi_core::api::tensor::with_dtype!(t.dtype, T => d.with_slice::<T, _>(|s, l| {
            let n = d.size();
            npy::write_elems(&mut w, s.get(l.offset..l.offset + n).unwrap_or(&[]))
        })?, other => ());
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_data()?;
        Ok(())
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_err(path, "write", e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_err(path, "write", e)
    })
}

fn tmp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tensor".into());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Reads the header of `path` and checks the file holds all its data.
fn open_npy(path: &Path, write: bool) -> VResult<(File, npy::Header)> {
    let mut f = OpenOptions::new()
        .read(true)
        .write(write)
        .open(path)
        .map_err(|e| io_err(path, "open", e))?;
    let h = {
        let mut r = BufReader::new(&mut f);
        npy::read_header(&mut r).map_err(|m| npy_err(path, m))?
    };
    let need = h.data_len().map_err(|m| npy_err(path, m))?;
    let have = f
        .metadata()
        .map_err(|e| io_err(path, "read", e))?
        .len()
        .saturating_sub(h.data_offset);
    if have < need {
        return Err(npy_err(
            path,
            format!(
                "the file is truncated: the header says shape {} of {} ({need} bytes of data), but only {have} bytes follow it",
                npy::shape_text(&h.shape),
                h.descr.text()
            ),
        ));
    }
    Ok((f, h))
}

/// Loads a `.npy` file: mapped copy-on-write when `mmap` and the element
/// bytes are Apsi's own (little-endian f64/f32/f16/i64/i32), else read.
pub fn load(path: &Path, mmap: bool) -> VResult<Tensor> {
    let (mut f, h) = open_npy(path, false)?;
    let n = h.count().map_err(|m| npy_err(path, m))?;
    let dtype = h.descr.dtype();
    if mmap && h.descr.is_native() {
        let m = MappedStorage::map(&f, path, h.data_offset, n, dtype, false).map_err(|m| err(ErrorKind::IOError, m))?;
        return Ok(mapped_tensor(m, h.shape, dtype));
    }
    let len = h.data_len().map_err(|m| npy_err(path, m))?;
    apsi_core::api::tensor::check_alloc(n, "load_tensor()")?;
    f.seek(SeekFrom::Start(h.data_offset))
        .map_err(|e| io_err(path, "read", e))?;
    let mut bytes = Vec::new();
    f.take(len)
        .read_to_end(&mut bytes)
        .map_err(|e| io_err(path, "read", e))?;
    Ok(apsi_core::api::tensor::with_dtype!(dtype, T => {
        let v: Vec<T> = npy::decode(&h.descr, &bytes).map_err(|m| npy_err(path, m))?;
        Tensor::from_vec(v, h.shape)
    }, other => return Err(err(ErrorKind::TypeError, format!("internal: no element type for {}", dtype.name())))))
}

fn mapped_tensor(m: MappedStorage, shape: Vec<usize>, dtype: DType) -> Tensor {
    Tensor {
        storage: Arc::new(Storage::Mapped(m)),
        layout: Layout::contiguous(shape),
        dtype,
        node: None,
    }
}

/// Creates `path` as a zero-filled `.npy` of `shape` and `dtype` (sparse:
/// the disk fills as pages are written) and maps it shared.
pub fn create(path: &Path, shape: Vec<usize>, dtype: DType) -> VResult<Tensor> {
    let descr = match Descr::of(dtype) {
        Some(d) if d.is_native() => d,
        _ => {
            return Err(err(
                ErrorKind::TypeError,
                format!(
                    "open_tensor() maps f64, f32, f16, i64 and i32 tensors; found {}",
                    dtype.name()
                ),
            ))
        }
    };
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .and_then(|n| n.checked_mul(descr.size).map(|b| (n, b)));
    let Some((n, bytes)) = n else {
        return Err(err(
            ErrorKind::OverflowError,
            format!("open_tensor(): the shape {} is too large", npy::shape_text(&shape)),
        ));
    };
    let header = npy::header_bytes(&descr, &shape);
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| io_err(path, "create", e))?;
    f.write_all(&header).map_err(|e| io_err(path, "write", e))?;
    f.set_len(header.len() as u64 + bytes as u64)
        .map_err(|e| io_err(path, "size", e))?;
    let m =
        MappedStorage::map(&f, path, header.len() as u64, n, dtype, true).map_err(|m| err(ErrorKind::IOError, m))?;
    Ok(mapped_tensor(m, shape, dtype))
}

/// `save_tensor(path, x)`.
pub fn save_tensor(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("save_tensor", args, kw, &["path", "x"])?;
    let path = path_arg(&a, 0)?;
    let x = a.req(1)?;
    let t = as_tensor(x).ok_or_else(|| a.wrong(1, "a Tensor", x))?;
    save(&path, &t)?;
    Ok(Value::None)
}

/// `load_tensor(path, mmap=true)`.
pub fn load_tensor(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("load_tensor", args, kw, &["path", "mmap"])?;
    let mmap = match a.opt(1) {
        None => true,
        Some(v) => v.truthy()?,
    };
    let path = source_arg(c, &a, 0)?;
    Ok(tensor_value(load(&path, mmap)?))
}

/// `open_tensor(path, shape, dtype=f64)`.
pub fn open_tensor(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("open_tensor", args, kw, &["path", "shape", "dtype"])?;
    let path = path_arg(&a, 0)?;
    let shape = shape_arg(&a, 1)?;
    let dtype = a.dtype_opt(2)?.unwrap_or(DType::F64);
    Ok(tensor_value(create(&path, shape, dtype)?))
}

fn shape_arg(a: &Args, i: usize) -> VResult<Vec<usize>> {
    let v = a.req(i)?;
    let dims: Vec<Value> = match v {
        Value::Int(_) => vec![v.clone()],
        Value::Tuple(t) => t.0.to_vec(),
        Value::List(l) => l.items.read().clone(),
        other => return Err(a.wrong(i, "a shape (a tuple of ints)", other)),
    };
    dims.iter()
        .map(|d| match d {
            Value::Int(n) if *n >= 0 => Ok(*n as usize),
            Value::Int(n) => Err(err(
                ErrorKind::ValueError,
                format!("{}() needs dimensions ≥ 0, found {n}", a.name),
            )),
            other => Err(a.wrong(i, "a shape of ints", other)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("apsi-data-files-{}-{name}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        d
    }

    #[test]
    fn save_and_load_both_ways() {
        let d = dir("rt");
        let p = d.join("x.npy");
        let t = Tensor::from_vec((0..12).map(|i| i as f32).collect::<Vec<_>>(), vec![4, 3]);
        save(&p, &t).expect("save");
        for mmap in [true, false] {
            let back = load(&p, mmap).expect("load");
            assert_eq!(back.shape(), &[4, 3]);
            assert_eq!(back.dtype, DType::F32);
            assert_eq!(back.to_vec::<f32>(), t.to_vec::<f32>());
            assert_eq!(matches!(&*back.storage, Storage::Mapped(_)), mmap);
        }
        let b = Tensor::from_vec(vec![true, false, true], vec![3]);
        save(&p, &b).expect("save bool");
        assert_eq!(load(&p, true).expect("bool").to_vec::<bool>(), vec![true, false, true]);
    }

    #[test]
    fn created_files_are_zero_and_take_writes() {
        let d = dir("create");
        let p = d.join("big.npy");
        let t = create(&p, vec![1000, 4], DType::F32).expect("create");
        assert!(t.to_vec::<f32>().iter().all(|x| *x == 0.0));
        apsi_core::api::tensor::set_index(&t, &Value::Int(3), &Value::Float(2.0)).expect("assign");
        let back = load(&p, false).expect("reload");
        assert_eq!(back.to_vec::<f32>().iter().sum::<f32>(), 8.0);
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let d = dir("errors");
        let e = load(&d.join("missing.npy"), true)
            .err()
            .map(|e| (e.kind, e.message.clone()));
        assert!(
            matches!(&e, Some((ErrorKind::IOError, m)) if m.contains("missing.npy")),
            "{e:?}"
        );
        let p = d.join("short.npy");
        let mut bytes = npy::header_bytes(&Descr::of(DType::F64).expect("f8"), &[10]);
        bytes.extend_from_slice(&[0u8; 16]);
        std::fs::write(&p, &bytes).expect("write");
        let e = load(&p, true).err().map(|e| e.message.clone()).unwrap_or_default();
        assert!(e.contains("truncated") && e.contains("80 bytes"), "{e}");
        std::fs::write(&p, b"garbage").expect("write");
        let e = load(&p, false).err().map(|e| e.message.clone()).unwrap_or_default();
        assert!(e.contains("not a .npy file"), "{e}");
        let e = create(&d.join("b.npy"), vec![2], DType::Bool)
            .err()
            .map(|e| e.message.clone())
            .unwrap_or_default();
        assert!(e.contains("found bool"), "{e}");
        let e = create(&d.join("o.npy"), vec![usize::MAX, 4], DType::F64)
            .err()
            .map(|e| e.kind);
        assert_eq!(e, Some(ErrorKind::OverflowError));
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]
        #[test]
        fn files_round_trip_any_shape_and_dtype(shape in proptest::collection::vec(0usize..5, 0..4), which in 0usize..6, mmap: bool) {
            let dt = [DType::F64, DType::F32, DType::F16, DType::I64, DType::I32, DType::Bool][which];
            let n: usize = shape.iter().product();
            let vals: Vec<f64> = (0..n).map(|i| (i as f64) * 1.5 - 3.0).collect();
            let t = Tensor::from_vec(vals, shape.clone()).astype(dt).expect("astype");
            let d = std::env::temp_dir().join(format!("apsi-data-prop-{}", std::process::id()));
            let _ = std::fs::create_dir_all(&d);
            let p = d.join(format!("t{which}.npy"));
            save(&p, &t).expect("save");
            let back = load(&p, mmap).expect("load");
            prop_assert_eq!(back.shape(), &shape[..]);
            prop_assert_eq!(back.dtype, dt);
            prop_assert_eq!(back.to_vec::<f64>(), t.to_vec::<f64>());
        }
    }
}
