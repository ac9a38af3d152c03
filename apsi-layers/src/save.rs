//! Models on disk (LAYERS.md §6): the safetensors format — an 8-byte
//! little-endian header length, a JSON header padded with spaces to a
//! multiple of 8, then each tensor's little-endian row-major bytes back to
//! back — with the architecture in `__metadata__["apsi.model"]`, so
//! `load_model` rebuilds the model and PyTorch's `load_state_dict` takes
//! the weights unchanged.

use crate::construct;
use crate::layer::{fn_name, layer_of, Kind};
use crate::model::{collect, expect_model};
use crate::ops;
use apsi_core::api::tensor::{shape_str, DType, Tensor};
use apsi_core::api::{err, Args, Caller, ErrorKind, Kwargs, VResult, Value};
use serde_json::{json, Map, Value as Json};
use std::io::Write;
use std::path::Path;

/// The architecture of `v` as JSON (`{"type": "Dense", "args": […], "kwargs": {…}}`).
pub fn spec(v: &Value) -> VResult<Json> {
    if let Some(l) = layer_of(v) {
        let mut args: Vec<Json> = vec![];
        let mut kw = Map::new();
        let act = |kw: &mut Map<String, Json>, a: &Option<crate::act::Act>| {
            if let Some(a) = a {
                kw.insert("activation".into(), json!(a.name()));
            }
        };
        match &l.kind {
            Kind::Sequential(items) => {
                let layers = items.iter().map(spec).collect::<VResult<Vec<_>>>()?;
                return Ok(json!({"type": "Sequential", "layers": layers}));
            }
            Kind::Residual(inner) => return Ok(json!({"type": "Residual", "inner": spec(inner)?})),
            Kind::Dense { inp, out, act: a, bias } => {
                args = vec![json!(inp), json!(out)];
                act(&mut kw, a);
                if !bias {
                    kw.insert("bias".into(), json!(false));
                }
            }
            Kind::Conv2d {
                inp,
                out,
                bias,
                act: a,
                given,
                ..
            } => {
                args = vec![json!(inp), json!(out), value_json(&given[0])];
                if !matches!(given[1], Value::Int(1)) {
                    kw.insert("stride".into(), value_json(&given[1]));
                }
                if !matches!(given[2], Value::Int(0)) {
                    kw.insert("padding".into(), value_json(&given[2]));
                }
                if !bias {
                    kw.insert("bias".into(), json!(false));
                }
                act(&mut kw, a);
            }
            Kind::MaxPool2d { given, .. } => {
                args = vec![value_json(&given[0])];
                if !matches!(given[1], Value::None) {
                    kw.insert("stride".into(), value_json(&given[1]));
                }
                if !matches!(given[2], Value::Int(0)) {
                    kw.insert("padding".into(), value_json(&given[2]));
                }
            }
            Kind::Flatten => {}
            Kind::Dropout { p } => args = vec![json!(p)],
            Kind::Embedding { num, dim } => args = vec![json!(num), json!(dim)],
            Kind::PositionEmbedding { max_len, dim } => args = vec![json!(max_len), json!(dim)],
            Kind::LayerNorm { dim, eps } => {
                args = vec![json!(dim)];
                if *eps != 1e-5 {
                    kw.insert("eps".into(), json!(eps));
                }
            }
            Kind::Lstm { inp, hidden, seq } => {
                args = vec![json!(inp), json!(hidden)];
                if *seq {
                    kw.insert("return_sequences".into(), json!(true));
                }
            }
            Kind::Attention {
                dim,
                heads,
                causal,
                bias,
            } => {
                args = vec![json!(dim), json!(heads)];
                if *causal {
                    kw.insert("causal".into(), json!(true));
                }
                if !bias {
                    kw.insert("bias".into(), json!(false));
                }
            }
        }
        if l.dtype != DType::F32 && !l.param_names().is_empty() {
            kw.insert("dtype".into(), json!(l.dtype.name()));
        }
        return Ok(json!({"type": l.type_name(), "args": args, "kwargs": kw}));
    }
    match v {
        Value::Struct(s) => Ok(json!({"type": "struct", "name": &*s.ty.name})),
        other => {
            let name = fn_name(other).unwrap_or_else(|| "function".into());
            if crate::act::Act::from_name(&name).is_some() {
                Ok(json!({"type": name}))
            } else {
                Ok(json!({"type": "function", "name": name}))
            }
        }
    }
}

fn value_json(v: &Value) -> Json {
    match v {
        Value::Int(n) => json!(n),
        Value::Float(f) => json!(f),
        Value::Tuple(t) => Json::Array(t.0.iter().map(value_json).collect()),
        Value::List(l) => Json::Array(l.items.read().iter().map(value_json).collect()),
        Value::Str(s) => json!(s.as_str()),
        Value::Bool(b) => json!(b),
        _ => Json::Null,
    }
}

fn json_value(j: &Json) -> Value {
    match j {
        Json::Null => Value::None,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::str(s.clone()),
        Json::Array(a) => Value::tuple(a.iter().map(json_value).collect()),
        Json::Object(_) => Value::None,
    }
}

/// Rebuilds a model from its description (parameters as zeros, nothing drawn).
fn rebuild(c: &mut dyn Caller, j: &Json, path: &str) -> VResult<Value> {
    let cannot = |what: String| {
        err(
            ErrorKind::ValueError,
            format!("load_model: {path} holds {what}, which cannot be rebuilt from the file: build the model in your program and call load_weights(model, \"{path}\")"),
        )
    };
    let ty = j.get("type").and_then(Json::as_str).unwrap_or("");
    let ctor: Option<apsi_core::api::NativeFnPtr> = match ty {
        "Dense" => Some(construct::f_dense),
        "Conv2d" => Some(construct::f_conv2d),
        "MaxPool2d" => Some(construct::f_maxpool2d),
        "Flatten" => Some(construct::f_flatten),
        "Dropout" => Some(construct::f_dropout),
        "Embedding" => Some(construct::f_embedding),
        "PositionEmbedding" => Some(construct::f_position_embedding),
        "LayerNorm" => Some(construct::f_layer_norm),
        "LSTM" => Some(construct::f_lstm),
        "MultiHeadAttention" => Some(construct::f_attention),
        _ => None,
    };
    if let Some(f) = ctor {
        let args: Vec<Value> = j
            .get("args")
            .and_then(Json::as_array)
            .map(|a| a.iter().map(json_value).collect())
            .unwrap_or_default();
        let kw: Vec<(std::sync::Arc<str>, Value)> = j
            .get("kwargs")
            .and_then(Json::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.as_str().into(), json_value(v))).collect())
            .unwrap_or_default();
        return construct::without_init(|| f(c, &args, &kw));
    }
    match ty {
        "Sequential" => {
            let items = j
                .get("layers")
                .and_then(Json::as_array)
                .ok_or_else(|| cannot("a Sequential without its layers".into()))?
                .iter()
                .map(|l| rebuild(c, l, path))
                .collect::<VResult<Vec<_>>>()?;
            construct::f_sequential(c, &[Value::list(items)], &[])
        }
        "Residual" => {
            let inner = rebuild(c, j.get("inner").unwrap_or(&Json::Null), path)?;
            construct::f_residual(c, &[inner], &[])
        }
        "relu" | "gelu" => Ok(crate::exported(ty)),
        "tanh" | "sigmoid" | "softmax" => {
            apsi_core::api::prelude_function(ty).ok_or_else(|| cannot(format!("the function {ty}")))
        }
        "struct" => Err(cannot(format!(
            "a struct model ({})",
            j.get("name").and_then(Json::as_str).unwrap_or("?")
        ))),
        "function" => Err(cannot(format!(
            "a function layer ({})",
            j.get("name").and_then(Json::as_str).unwrap_or("?")
        ))),
        other => Err(cannot(format!("an unknown layer type '{other}'"))),
    }
}

fn dtype_code(d: DType) -> VResult<&'static str> {
    match d {
        DType::F32 => Ok("F32"),
        DType::F64 => Ok("F64"),
        other => Err(err(
            ErrorKind::TypeError,
            format!("save_model: parameters are f32 or f64, found {}", other.name()),
        )),
    }
}

fn bytes_of(t: &Tensor) -> VResult<Vec<u8>> {
    Ok(match t.dtype {
        DType::F32 => t.to_vec::<f32>().iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::F64 => t.to_vec::<f64>().iter().flat_map(|x| x.to_le_bytes()).collect(),
        other => {
            return Err(err(
                ErrorKind::TypeError,
                format!("save_model: parameters are f32 or f64, found {}", other.name()),
            ))
        }
    })
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(who: &str, path: &str, bytes: &[u8]) -> VResult<()> {
    let p = Path::new(path);
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let io = |e: std::io::Error| err(ErrorKind::IOError, format!("{who}: cannot write {path}: {e}"));
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    f.sync_all().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, p).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

/// The safetensors bytes of named tensors with metadata.
pub fn encode(tensors: &[(String, Tensor)], metadata: &[(&str, String)]) -> VResult<Vec<u8>> {
    let mut header = String::from("{\"__metadata__\":{");
    for (i, (k, v)) in metadata.iter().enumerate() {
        if i > 0 {
            header.push(',');
        }
        header.push_str(&format!("{}:{}", json!(k), json!(v)));
    }
    header.push('}');
    let mut data = Vec::new();
    for (name, t) in tensors {
        let b = bytes_of(t)?;
        let (start, end) = (data.len(), data.len() + b.len());
        header.push_str(&format!(
            ",{}:{{\"dtype\":\"{}\",\"shape\":{},\"data_offsets\":[{start},{end}]}}",
            json!(name),
            dtype_code(t.dtype)?,
            json!(t.shape())
        ));
        data.extend_from_slice(&b);
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = Vec::with_capacity(8 + header.len() + data.len());
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&data);
    Ok(out)
}

/// A safetensors file, read and checked.
pub struct File {
    pub tensors: Vec<(String, Tensor)>,
    pub metadata: Map<String, Json>,
}

pub fn read(who: &str, path: &str) -> VResult<File> {
    let raw = std::fs::read(path).map_err(|e| err(ErrorKind::IOError, format!("{who}: cannot read {path}: {e}")))?;
    let bad = |what: &str| {
        err(
            ErrorKind::ValueError,
            format!("{who}: {path} is not a safetensors file ({what})"),
        )
    };
    if raw.len() < 8 {
        return Err(bad("shorter than its 8-byte header length"));
    }
    let n = u64::from_le_bytes(raw[..8].try_into().map_err(|_| bad("no header length"))?) as usize;
    if n > raw.len() - 8 {
        return Err(bad("the header is longer than the file"));
    }
    let header: Json = serde_json::from_slice(&raw[8..8 + n]).map_err(|_| bad("the header is not JSON"))?;
    let obj = header
        .as_object()
        .ok_or_else(|| bad("the header is not a JSON object"))?;
    let body = &raw[8 + n..];
    let mut tensors = Vec::new();
    let mut metadata = Map::new();
    for (name, v) in obj {
        if name == "__metadata__" {
            if let Some(m) = v.as_object() {
                metadata = m.clone();
            }
            continue;
        }
        let dtype = v
            .get("dtype")
            .and_then(Json::as_str)
            .ok_or_else(|| bad("a tensor without dtype"))?;
        let shape: Vec<usize> = v
            .get("shape")
            .and_then(Json::as_array)
            .ok_or_else(|| bad("a tensor without shape"))?
            .iter()
            .map(|d| d.as_u64().map(|d| d as usize).ok_or_else(|| bad("a bad shape")))
            .collect::<VResult<_>>()?;
        let offs = v
            .get("data_offsets")
            .and_then(Json::as_array)
            .filter(|a| a.len() == 2)
            .ok_or_else(|| bad("a tensor without data_offsets"))?;
        let (b, e) = (
            offs[0].as_u64().unwrap_or(u64::MAX) as usize,
            offs[1].as_u64().unwrap_or(u64::MAX) as usize,
        );
        let count = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| bad("a shape too large"))?;
        let width = match dtype {
            "F32" => 4,
            "F64" => 8,
            other => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("{who}: tensor '{name}' of {path} is {other}; layers reads F32 and F64 tensors"),
                ))
            }
        };
        if b > e || e > body.len() || e - b != count.saturating_mul(width) {
            return Err(bad(&format!("the bytes of '{name}' are out of place")));
        }
        let bytes = &body[b..e];
        let t = if width == 4 {
            let v: Vec<f32> = bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            Tensor::from_vec(v, shape)
        } else {
            let v: Vec<f64> = bytes
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect();
            Tensor::from_vec(v, shape)
        };
        tensors.push((name.clone(), t));
    }
    Ok(File { tensors, metadata })
}

pub fn f_save_model(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("save_model", args, kw, 2, &["model", "path"])?;
    let m = expect_model("save_model", a.req(0)?)?;
    let path = a.str(1)?;
    let params = collect(m)?;
    let mut tensors = Vec::with_capacity(params.len());
    for p in &params {
        if tensors.iter().any(|(n, _): &(String, Tensor)| *n == p.name) {
            return Err(err(
                ErrorKind::ValueError,
                format!("save_model: two parameters are named '{}'", p.name),
            ));
        }
        tensors.push((p.name.clone(), p.get()?));
    }
    let arch = spec(m)?.to_string();
    let bytes = encode(
        &tensors,
        &[
            ("format", "pt".to_string()),
            ("apsi.version", crate::VERSION.to_string()),
            ("apsi.model", arch),
        ],
    )?;
    write_atomic("save_model", path, &bytes)?;
    Ok(Value::None)
}

/// Copies the file's tensors into `m` by name after checking every one.
fn load_into(m: &Value, file: &File, path: &str, strict: bool) -> VResult<()> {
    let params = collect(m)?;
    let mut plan = Vec::with_capacity(params.len());
    for p in &params {
        let Some((_, t)) = file.tensors.iter().find(|(n, _)| *n == p.name) else {
            return Err(err(
                ErrorKind::KeyError,
                format!("load_weights: {path} has no tensor '{}'", p.name),
            ));
        };
        let cur = p.get()?;
        if cur.shape() != t.shape() {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "load_weights: '{}' is {} in the model but {} in {path}",
                    p.name,
                    shape_str(cur.shape()),
                    shape_str(t.shape())
                ),
            ));
        }
        plan.push((cur, t.clone()));
    }
    if strict {
        // The first by name (not the header's order, which serde_json
        // keeps or sorts depending on a feature another crate may enable).
        let unknown = file
            .tensors
            .iter()
            .map(|(n, _)| n)
            .filter(|n| !params.iter().any(|p| p.name == **n))
            .min();
        if let Some(n) = unknown {
            return Err(err(
                ErrorKind::ValueError,
                format!("load_weights: {path} has a tensor '{n}' that no parameter of the model takes (strict=false ignores it)"),
            ));
        }
    }
    for (dst, src) in plan {
        ops::write_into(&dst, &src)?;
    }
    Ok(())
}

pub fn f_load_weights(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("load_weights", args, kw, 2, &["model", "path", "strict"])?;
    let m = expect_model("load_weights", a.req(0)?)?;
    let path = a.str(1)?;
    let strict = a.bool_or(2, true)?;
    let file = read("load_weights", path)?;
    load_into(m, &file, path, strict)?;
    Ok(Value::None)
}

pub fn f_load_model(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("load_model", args, kw, 1, &["path"])?;
    let path = a.str(0)?;
    let file = read("load_model", path)?;
    let arch = file.metadata.get("apsi.model").and_then(Json::as_str).ok_or_else(|| {
        err(
            ErrorKind::ValueError,
            format!("load_model: {path} does not describe its model (no \"apsi.model\" metadata): build the model in your program and call load_weights(model, \"{path}\")"),
        )
    })?;
    let j: Json = serde_json::from_str(arch).map_err(|_| {
        err(
            ErrorKind::ValueError,
            format!("load_model: the \"apsi.model\" metadata of {path} is not JSON"),
        )
    })?;
    let m = rebuild(c, &j, path)?;
    load_into(&m, &file, path, true)?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> String {
        let d = std::env::temp_dir().join(format!("apsi-layers-save-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join("t.safetensors").to_string_lossy().to_string()
    }

    #[test]
    fn encoded_files_have_the_safetensors_layout_and_read_back() {
        let a = Tensor::from_vec(vec![1.5f32, -2.0, 3.25, 0.0, 7.0, 8.0], vec![2, 3]);
        let b = Tensor::from_vec(vec![0.1f64, 0.2], vec![2]);
        let c = Tensor::from_vec(Vec::<f32>::new(), vec![0, 4]);
        let bytes = encode(
            &[("w".into(), a.clone()), ("b".into(), b.clone()), ("e".into(), c)],
            &[("format", "pt".into())],
        )
        .unwrap();
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        assert_eq!(n % 8, 0);
        assert_eq!(bytes.len(), 8 + n + 6 * 4 + 2 * 8);
        let path = temp("rt");
        write_atomic("test", &path, &bytes).unwrap();
        let f = read("test", &path).unwrap();
        assert_eq!(f.metadata.get("format").and_then(Json::as_str), Some("pt"));
        let get = |k: &str| f.tensors.iter().find(|(n, _)| n == k).map(|(_, t)| t.clone()).unwrap();
        assert_eq!(get("w").to_vec::<f32>(), a.to_vec::<f32>());
        assert_eq!(get("w").shape(), &[2, 3]);
        assert_eq!(get("b").to_vec::<f64>(), b.to_vec::<f64>());
        assert_eq!(get("e").shape(), &[0, 4]);
    }

    #[test]
    fn no_damage_to_a_file_makes_reading_panic() {
        let a = Tensor::from_vec((0..24).map(|i| i as f32).collect::<Vec<_>>(), vec![4, 6]);
        let bytes = encode(&[("a".into(), a)], &[("format", "pt".into())]).unwrap();
        let path = temp("fuzz");
        let mut state = 0x1234_5678u64;
        for round in 0..400 {
            let mut b = bytes.clone();
            state = apsi_core::api::tensor::mix(state.wrapping_add(round));
            match round % 4 {
                0 => b.truncate((state as usize) % (bytes.len() + 1)),
                1 => {
                    let i = (state as usize) % b.len();
                    b[i] ^= (state >> 32) as u8 | 1;
                }
                2 => {
                    // a header length past the end, or huge
                    b[..8].copy_from_slice(&(state >> (round % 64)).to_le_bytes());
                }
                _ => {
                    let i = 8 + (state as usize) % (b.len() - 8);
                    b[i] = b"{}[]\":,0123456789e-"[(state >> 40) as usize % 19];
                }
            }
            std::fs::write(&path, &b).unwrap();
            let _ = read("fuzz", &path);
        }
    }
}
