//! Quantization arithmetic: scales per group, codes, and back.
//!
//! A group is the whole tensor (`axis=none`) or one slice along `axis`
//! (element `i` of a row-major tensor is in group `(i / inner) % n`, where
//! `n` is the axis length and `inner` the product of the later sizes).

use apsi_core::api::tensor::codec::{self, bulk};
use apsi_core::api::tensor::shape_str;
use apsi_core::api::tensor::Buffer;
use apsi_core::api::tensor::Tensor;
use apsi_core::api::tensor::{DType, Kind};
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, VResult};

/// Quantized codes of one format with their scales (and zero points for uint8).
#[derive(Clone)]
pub struct Quantized {
    /// The codes, of dtype `fmt`, with the shape of the quantized tensor.
    pub codes: Tensor,
    /// f32 scales: 0-d, or the input's rank with the axis length at `axis` and 1 elsewhere.
    pub scales: Tensor,
    /// uint8 zero points, shaped as `scales` (uint8 only).
    pub zero_points: Option<Tensor>,
    pub axis: Option<usize>,
}

impl Quantized {
    pub fn fmt(&self) -> DType {
        self.codes.dtype
    }

    /// Real bytes: codes + scales + zero points.
    pub fn nbytes(&self) -> usize {
        self.codes.nbytes() + self.scales.nbytes() + self.zero_points.as_ref().map_or(0, |z| z.nbytes())
    }
}

/// The formats `quantize` accepts.
pub fn check_format(fmt: DType) -> VResult<DType> {
    match fmt {
        DType::F64 | DType::F32 | DType::I64 | DType::I32 | DType::Bool => Err(err(
            ErrorKind::ValueError,
            format!(
                "quantize() takes a narrow format (bf16, f16, fp8_e4m3, fp8_e5m2, fp6_e3m2, fp6_e2m3, fp4_e2m1, int8, int4, uint8), not {}",
                fmt.name()
            ),
        )),
        d => Ok(d),
    }
}

/// (groups, inner): the group count and the run of consecutive elements sharing a group.
fn grouping(shape: &[usize], axis: Option<usize>) -> (usize, usize) {
    match axis {
        None => (1, shape.iter().product::<usize>().max(1)),
        Some(a) => (
            shape.get(a).copied().unwrap_or(1),
            shape.get(a + 1..).map_or(1, |s| s.iter().product::<usize>()).max(1),
        ),
    }
}

/// Calls `f(group, run)` for each run of consecutive elements of one group.
fn for_runs<'a>(v: &'a [f32], groups: usize, inner: usize, mut f: impl FnMut(usize, &'a [f32])) {
    if groups == 0 {
        return; // an empty axis: no elements
    }
    for (k, run) in v.chunks(inner).enumerate() {
        f(k % groups, run);
    }
}

fn for_runs_mut(v: &mut [f32], groups: usize, inner: usize, mut f: impl FnMut(usize, &mut [f32])) {
    if groups == 0 {
        return; // an empty axis: no elements
    }
    for (k, run) in v.chunks_mut(inner).enumerate() {
        f(k % groups, run);
    }
}

/// floor(log2(x)) for a positive finite f32, exactly.
fn ilog2(x: f32) -> i32 {
    let b = x.to_bits();
    let e = ((b >> 23) & 0xff) as i32;
    if e == 0 {
        // Subnormal: the position of the top set bit.
        -149 + (31 - (b & 0x7f_ffff).leading_zeros() as i32)
    } else {
        e - 127
    }
}

/// 2^k as f32 (k within f32's normal range).
fn pow2(k: i32) -> f32 {
    2f32.powi(k.clamp(-126, 127))
}

/// The axis as a dimension index (negative counts from the end).
pub fn norm_axis(axis: Option<i64>, ndim: usize) -> VResult<Option<usize>> {
    match axis {
        None => Ok(None),
        Some(a) => {
            let n = ndim as i64;
            let k = if a < 0 { a + n } else { a };
            if k < 0 || k >= n {
                Err(err(
                    ErrorKind::ValueError,
                    format!("axis {a} is out of range for a tensor of {ndim} dimension(s)"),
                ))
            } else {
                Ok(Some(k as usize))
            }
        }
    }
}

/// Quantizes `x` (any dtype; values are taken as f32) to `fmt`.
pub fn quantize(x: &Tensor, fmt: DType, axis: Option<usize>) -> VResult<Quantized> {
    let fmt = check_format(fmt)?;
    let shape = x.shape().to_vec();
    let mut v: Vec<f32> = x.to_vec();
    let (groups, inner) = grouping(&shape, axis);
    let mut amax = vec![0f32; groups];
    let mut lo = vec![0f32; groups];
    let mut hi = vec![0f32; groups];
    for_runs(&v, groups, inner, |g, run| {
        for &y in run {
            if y.is_finite() {
                amax[g] = amax[g].max(y.abs());
                lo[g] = lo[g].min(y);
                hi[g] = hi[g].max(y);
            }
        }
    });
    let info = codec::info(fmt);
    let max = info.max as f32;
    let mut zps: Option<Vec<f32>> = None;
    let scales: Vec<f32> = match fmt {
        DType::UInt8 => {
            let s: Vec<f32> = lo
                .iter()
                .zip(&hi)
                .map(|(&l, &h)| if h > l { (h - l) / 255.0 } else { 1.0 })
                .collect();
            zps = Some(
                lo.iter()
                    .zip(&s)
                    .map(|(&l, &s)| (-l / s).round_ties_even().clamp(0.0, 255.0))
                    .collect(),
            );
            s
        }
        _ if fmt.kind() == Kind::Int => amax.iter().map(|&a| if a > 0.0 { a / max } else { 1.0 }).collect(),
        _ => {
            // OCP MX: 2^(floor(log2(amax)) - emax), emax the exponent of the format's max.
            let emax = ilog2(max);
            amax.iter()
                .map(|&a| if a > 0.0 { pow2(ilog2(a) - emax) } else { 1.0 })
                .collect()
        }
    };
    match (fmt, &zps) {
        (DType::UInt8, Some(z)) => for_runs_mut(&mut v, groups, inner, |g, run| {
            let (s, zp) = (scales[g], z[g]);
            for y in run {
                *y = ((*y / s).round_ties_even() + zp).clamp(0.0, 255.0);
            }
        }),
        _ if fmt.kind() == Kind::Int => for_runs_mut(&mut v, groups, inner, |g, run| {
            let s = scales[g];
            for y in run {
                *y = (*y / s).round_ties_even().clamp(-max, max);
            }
        }),
        _ => for_runs_mut(&mut v, groups, inner, |g, run| {
            let s = scales[g];
            for y in run {
                *y = (*y / s).clamp(-max, max);
            }
        }),
    }
    let codes = Tensor::from_buffer(bulk::encode_f32(fmt, &v), shape.clone(), fmt);
    let sshape: Vec<usize> = match axis {
        None => vec![],
        Some(a) => shape
            .iter()
            .enumerate()
            .map(|(i, &d)| if i == a { d } else { 1 })
            .collect(),
    };
    let scales_t = Tensor::from_vec(scales, sshape.clone());
    let zero_points = zps.map(|z| Tensor::from_buffer(bulk::encode_f32(DType::UInt8, &z), sshape, DType::UInt8));
    Ok(Quantized {
        codes,
        scales: scales_t,
        zero_points,
        axis,
    })
}

/// The f32 values a quantized tensor stands for: (code − zero point) × scale.
pub fn dequantize(q: &Quantized) -> Tensor {
    let shape = q.codes.shape().to_vec();
    let mut v: Vec<f32> = q.codes.to_vec();
    let scales: Vec<f32> = q.scales.to_vec();
    let zps: Vec<f32> = q.zero_points.as_ref().map(|z| z.to_vec()).unwrap_or_default();
    let (groups, inner) = grouping(&shape, q.axis);
    for_runs_mut(&mut v, groups, inner, |g, run| {
        let s = scales.get(g).copied().unwrap_or(1.0);
        let z = zps.get(g).copied().unwrap_or(0.0);
        for y in run {
            *y = (*y - z) * s;
        }
    });
    Tensor::from_vec(v, shape)
}

/// The codes as f32 values (no scale), for `qmatmul`.
pub fn code_values(q: &Quantized) -> Tensor {
    let v: Vec<f32> = q.codes.to_vec();
    Tensor::from_vec(v, q.codes.shape().to_vec())
}

/// The quantization error of `x` in `fmt`: (max_abs, rms, rel_rms, sqnr_db).
pub fn error_stats(x: &Tensor, fmt: DType, axis: Option<usize>) -> VResult<(f64, f64, f64, f64)> {
    let q = quantize(x, fmt, axis)?;
    let d: Vec<f32> = dequantize(&q).to_vec();
    let xs: Vec<f64> = x.to_vec();
    if xs.is_empty() {
        return Err(err(
            ErrorKind::ValueError,
            format!("quant_error() of an empty tensor (shape {})", shape_str(x.shape())),
        ));
    }
    let (mut max_abs, mut se, mut sx) = (0f64, 0f64, 0f64);
    for (&a, &b) in xs.iter().zip(&d) {
        let e = b as f64 - a;
        max_abs = max_abs.max(e.abs());
        se += e * e;
        sx += a * a;
    }
    let n = xs.len() as f64;
    let rms = (se / n).sqrt();
    let xrms = (sx / n).sqrt();
    let rel = if xrms > 0.0 { rms / xrms } else { 0.0 };
    let sqnr = if se > 0.0 {
        10.0 * (sx / se).log10()
    } else {
        f64::INFINITY
    };
    Ok((max_abs, rms, rel, sqnr))
}

/// Whether `b` holds exactly `len` codes of `bits` bits (for tests of real size).
pub fn packed_len(b: &Buffer) -> Option<usize> {
    match b {
        Buffer::Packed { bytes, .. } => Some(bytes.len()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f32>, shape: Vec<usize>) -> Tensor {
        Tensor::from_vec(v, shape)
    }

    #[test]
    fn fp8_power_of_two_scales_keep_representable_values_exact() {
        let q = quantize(&t(vec![1.0, 2.0, 3.0, 4.0], vec![2, 2]), DType::Fp8E4M3, None).unwrap();
        assert_eq!(q.scales.to_vec::<f32>(), vec![2f32.powi(-6)]);
        assert_eq!(dequantize(&q).to_vec::<f32>(), vec![1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn int8_per_row_is_symmetric_and_bounded() {
        let x = t(vec![1.0, -0.5, 0.25, 100.0, -50.0, 3.0], vec![2, 3]);
        let q = quantize(&x, DType::Int8, Some(0)).unwrap();
        assert_eq!(q.scales.shape(), &[2, 1]);
        assert_eq!(q.codes.to_vec::<f32>(), vec![127.0, -64.0, 32.0, 127.0, -64.0, 4.0]);
        let d = dequantize(&q).to_vec::<f32>();
        for (a, b) in d.iter().zip(x.to_vec::<f32>()) {
            assert!((a - b).abs() <= 100.0 / 127.0 / 2.0 + 1e-6);
        }
    }

    #[test]
    fn int4_is_minus_seven_to_seven_and_uint8_has_a_zero_point() {
        let q = quantize(&t(vec![-1.0, 1.0, 0.6], vec![3]), DType::Int4, None).unwrap();
        assert_eq!(q.codes.to_vec::<f32>(), vec![-7.0, 7.0, 4.0]);
        let u = quantize(&t(vec![-1.0, 3.0, 0.0], vec![3]), DType::UInt8, None).unwrap();
        let d = dequantize(&u).to_vec::<f32>();
        assert!(
            (d[0] + 1.0).abs() < 0.01 && (d[1] - 3.0).abs() < 0.01 && d[2].abs() < 0.01,
            "{d:?}"
        );
    }

    #[test]
    fn empty_tensors_and_empty_axes_quantize() {
        let q = quantize(&t(vec![], vec![0, 3]), DType::Int8, Some(0)).unwrap();
        assert_eq!(
            (q.scales.shape().to_vec(), dequantize(&q).shape().to_vec()),
            (vec![0, 1], vec![0, 3])
        );
        let q = quantize(&t(vec![], vec![0]), DType::Fp4E2M1, None).unwrap();
        assert_eq!(q.nbytes(), 4);
    }

    #[test]
    fn saturates_at_the_format_max() {
        // amax 7.9 → scale 2^(2-8); 7.9 / scale = 505.6 saturates to 448.
        let q = quantize(&t(vec![7.9, 0.0], vec![2]), DType::Fp8E4M3, None).unwrap();
        assert_eq!(dequantize(&q).to_vec::<f32>()[0], 7.0);
    }

    #[test]
    fn real_size_memory_bars() {
        // 1M fp4 elements: 512 KiB of codes.
        let x = Tensor::from_vec(vec![0.5f32; 1 << 20], vec![1 << 20]);
        let f = x.astype(DType::Fp4E2M1).unwrap();
        assert_eq!(f.nbytes(), 512 * 1024);
        assert_eq!(f.storage.read(packed_len), Some(512 * 1024));
        // 4096×4096 f32 → int4 with per-row scales: ≤ 8.1 MiB.
        let n = 4096usize;
        let w = Tensor::from_vec(
            (0..n * n).map(|i| ((i % 97) as f32 - 48.0) / 7.0).collect::<Vec<f32>>(),
            vec![n, n],
        );
        let q = quantize(&w, DType::Int4, Some(0)).unwrap();
        let real = q.codes.storage.read(packed_len).unwrap_or(usize::MAX) + q.scales.nbytes();
        assert_eq!(q.nbytes(), real);
        assert!(q.nbytes() as f64 <= 8.1 * 1024.0 * 1024.0, "{} bytes", q.nbytes());
        assert_eq!(q.nbytes(), 8 * 1024 * 1024 + 4096 * 4);
    }
}
