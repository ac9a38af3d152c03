//! Fuzzing the `.npy` reader and the tensor constructors (issue 17): valid
//! files mutated at random (bytes flipped, cut short, headers rewritten
//! with odd shapes, dtypes and orders) and constructors called with odd
//! arguments must give a tensor or an error with a kind, never a panic or
//! a tensor whose size disagrees with its shape.
//!
//! The suite runs a few hundred cases per property. A long run:
//! `APSI_FUZZ_CASES=200000 cargo test --release -p apsi-data --test npy_fuzz`
//! (about ten minutes on two cores).

use apsi_core::api::tensor::{DType, Tensor};
use apsi_core::api::Caller;
use apsi_core::api::{prelude_function, NoCaller, Value};
use apsi_data::files;
use proptest::prelude::*;
use std::path::Path;

fn cases(default: u32) -> u32 {
    std::env::var("APSI_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small valid `.npy` file of `shape` and `dtype`, as bytes.
fn valid_file(dir: &Path, shape: &[usize], dtype: DType) -> Vec<u8> {
    let n: usize = shape.iter().product();
    let t = Tensor::from_vec(
        (0..n).map(|i| i as f64 * 0.5 - 3.0).collect::<Vec<f64>>(),
        shape.to_vec(),
    )
    .cast(dtype)
    .unwrap();
    let p = dir.join("valid.npy");
    files::save(&p, &t).unwrap();
    std::fs::read(&p).unwrap()
}

/// Loading `bytes` either fails with an error or gives a consistent tensor.
fn load_is_sound(dir: &Path, bytes: &[u8]) {
    let p = dir.join("case.npy");
    std::fs::write(&p, bytes).unwrap();
    for mmap in [false, true] {
        if let Ok(t) = files::load(&p, mmap) {
            assert_eq!(t.size(), t.shape().iter().product::<usize>(), "size and shape disagree");
            // Reading every element must not fault.
            let _ = t.to_vec::<f64>();
        }
    }
}

const DTYPES: [DType; 6] = [DType::F64, DType::F32, DType::F16, DType::I64, DType::I32, DType::Bool];

/// Header texts a hostile or careless writer could produce.
fn header_text() -> impl Strategy<Value = String> {
    let descr = prop_oneof![
        Just("'<f8'".to_string()),
        Just("'>f8'".to_string()),
        Just("'<i4'".to_string()),
        Just("'|b1'".to_string()),
        Just("'<f2'".to_string()),
        Just("'<c16'".to_string()),
        Just("'|O'".to_string()),
        Just("'<U3'".to_string()),
        Just("[('a', '<f8')]".to_string()),
        "[a-z<>|0-9']{0,6}",
    ];
    let dim = prop_oneof![
        0i128..5,
        Just(-1i128),
        Just(1i128 << 40),
        Just(i64::MAX as i128),
        Just(u64::MAX as i128 + 1),
    ];
    let shape = proptest::collection::vec(dim, 0..5);
    let order = prop_oneof![Just("False"), Just("True"), Just("0"), Just("None")];
    (descr, shape, order, any::<bool>()).prop_map(|(d, s, o, trailing_comma)| {
        let dims: Vec<String> = s.iter().map(|x| x.to_string()).collect();
        let shape = match (dims.len(), trailing_comma) {
            (1, _) => format!("({},)", dims[0]),
            (_, true) => format!("({},)", dims.join(", ")),
            _ => format!("({})", dims.join(", ")),
        };
        format!("{{'descr': {d}, 'fortran_order': {o}, 'shape': {shape}, }}")
    })
}

/// A file with `header` as its header text (a valid preamble around it).
fn with_header(header: &str, data: &[u8], version: u8) -> Vec<u8> {
    let mut h = header.as_bytes().to_vec();
    let pre = if version == 1 { 10 } else { 12 };
    while !(pre + h.len() + 1).is_multiple_of(64) {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.push(version);
    out.push(0);
    if version == 1 {
        out.extend_from_slice(&(h.len().min(u16::MAX as usize) as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(h.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(&h);
    out.extend_from_slice(data);
    out
}

/// Found by `odd_headers_load_or_fail_cleanly`: a file of no elements
/// whose leading axis is huge loads (it needs no bytes), and reading it
/// walked 2**40 empty rows.
#[test]
fn an_empty_tensor_with_a_huge_leading_axis_reads_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for version in 1..4 {
        let header = "{'descr': '|b1', 'fortran_order': False, 'shape': (1099511627776, 0,), }";
        let t0 = std::time::Instant::now();
        load_is_sound(dir.path(), &with_header(header, &[0; 76], version));
        assert!(t0.elapsed().as_secs() < 60, "reading took {:?}", t0.elapsed());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(150), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_files_load_or_fail_cleanly(
        shape in proptest::collection::vec(0usize..4, 0..4),
        which in 0usize..6,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in proptest::option::of(any::<usize>()),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = valid_file(dir.path(), &shape, DTYPES[which]);
        for (at, b) in flips {
            let i = at % bytes.len();
            bytes[i] = b;
        }
        if let Some(c) = cut {
            bytes.truncate(c % (bytes.len() + 1));
        }
        load_is_sound(dir.path(), &bytes);
    }

    #[test]
    fn odd_headers_load_or_fail_cleanly(
        header in header_text(),
        data in proptest::collection::vec(any::<u8>(), 0..96),
        version in 1u8..4,
    ) {
        let dir = tempfile::tempdir().unwrap();
        load_is_sound(dir.path(), &with_header(&header, &data, version));
    }

    #[test]
    fn random_bytes_load_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let dir = tempfile::tempdir().unwrap();
        let mut b = bytes.clone();
        if b.len() > 8 && b[0] % 2 == 0 {
            // Half of them start like a real file, to get past the magic.
            b[..6].copy_from_slice(b"\x93NUMPY");
        }
        load_is_sound(dir.path(), &b);
    }
}

/// Arguments a constructor might be handed.
fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-3i64..6).prop_map(Value::Int),
        Just(Value::Int(1 << 40)),
        Just(Value::Int(i64::MAX)),
        Just(Value::Int(i64::MIN)),
        (-4.0f64..6.0).prop_map(Value::Float),
        Just(Value::Float(f64::NAN)),
        Just(Value::Float(f64::INFINITY)),
        Just(Value::Float(1e300)),
        Just(Value::None),
        Just(Value::Bool(true)),
        Just(Value::str("f32")),
        (-2i64..4, -2i64..4).prop_map(|(a, b)| Value::tuple(vec![Value::Int(a), Value::Int(b)])),
        Just(Value::tuple(vec![
            Value::Int(1 << 31),
            Value::Int(1 << 31),
            Value::Int(1 << 31)
        ])),
        proptest::collection::vec(-3i64..3, 0..4).prop_map(|v| Value::list(v.into_iter().map(Value::Int).collect())),
        Just(Value::list(vec![Value::list(vec![Value::Int(1)]), Value::Int(2)])),
    ]
}

const CONSTRUCTORS: [&str; 9] = [
    "tensor", "zeros", "ones", "full", "arange", "linspace", "eye", "rand", "randn",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(300), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn constructors_give_a_tensor_or_an_error(
        which in 0usize..CONSTRUCTORS.len(),
        args in proptest::collection::vec(odd_value(), 0..4),
    ) {
        let f = prelude_function(CONSTRUCTORS[which]).unwrap();
        if let Ok(v) = NoCaller.call(&f, &args, &[]) {
            if let Some(t) = apsi_core::api::tensor::as_tensor(&v) {
                prop_assert_eq!(t.size(), t.shape().iter().product::<usize>());
            }
        }
    }
}
