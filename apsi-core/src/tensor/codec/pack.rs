//! Real-size storage of codes: 8-bit codes one per byte, 4-bit codes two
//! per byte (element 2i in the low nibble), 6-bit codes four in three bytes
//! (element 4i+k in bits 6k..6k+6 of the little-endian 24-bit group).

use std::mem::MaybeUninit;

/// Bytes that hold `len` codes of `bits` bits.
pub fn byte_len(len: usize, bits: u8) -> usize {
    match bits {
        4 => len.div_ceil(2),
        6 => len.div_ceil(4) * 3,
        _ => len,
    }
}

/// The code of element `i` (0 when `i` is past the bytes).
#[inline]
pub fn get(bytes: &[u8], bits: u8, i: usize) -> u8 {
    match bits {
        4 => bytes
            .get(i / 2)
            .map_or(0, |b| if i.is_multiple_of(2) { b & 0xf } else { b >> 4 }),
        6 => {
            let g = (i / 4) * 3;
            let w = match bytes.get(g..g + 3) {
                Some(s) => s[0] as u32 | (s[1] as u32) << 8 | (s[2] as u32) << 16,
                None => 0,
            };
            ((w >> (6 * (i % 4))) & 0x3f) as u8
        }
        _ => bytes.get(i).copied().unwrap_or(0),
    }
}

/// Stores the code of element `i` (ignored when `i` is past the bytes).
#[inline]
pub fn set(bytes: &mut [u8], bits: u8, i: usize, code: u8) {
    match bits {
        4 => {
            if let Some(b) = bytes.get_mut(i / 2) {
                *b = if i.is_multiple_of(2) {
                    (*b & 0xf0) | (code & 0xf)
                } else {
                    (*b & 0x0f) | (code << 4)
                };
            }
        }
        6 => {
            let g = (i / 4) * 3;
            if let Some(s) = bytes.get_mut(g..g + 3) {
                let mut w = s[0] as u32 | (s[1] as u32) << 8 | (s[2] as u32) << 16;
                let sh = 6 * (i % 4);
                w = (w & !(0x3f << sh)) | (((code & 0x3f) as u32) << sh);
                s[0] = w as u8;
                s[1] = (w >> 8) as u8;
                s[2] = (w >> 16) as u8;
            }
        }
        _ => {
            if let Some(b) = bytes.get_mut(i) {
                *b = code;
            }
        }
    }
}

/// Packs whole codes into `out` (`out.len() == byte_len(codes.len(), bits)`;
/// for 4 and 6 bits `codes.len()` is padded with zero codes as needed).
/// Writes every byte of `out` (bytes past the codes become 0).
#[inline(always)]
pub fn pack(codes: &[u8], bits: u8, out: &mut [MaybeUninit<u8>]) {
    match bits {
        4 => {
            let mut pairs = codes.chunks_exact(2);
            let whole = pairs.len();
            for (o, p) in out.iter_mut().zip(pairs.by_ref()) {
                o.write((p[0] & 0xf) | (p[1] << 4));
            }
            let last = pairs.remainder().first().map_or(0, |c| c & 0xf);
            for (k, o) in out.iter_mut().enumerate().skip(whole) {
                o.write(if k == whole { last } else { 0 });
            }
        }
        6 => {
            let mut quads = codes.chunks_exact(4);
            let whole = quads.len();
            let mut outs = out.chunks_exact_mut(3);
            for (o, q) in outs.by_ref().zip(quads.by_ref()) {
                let w = (q[0] & 0x3f) as u32
                    | ((q[1] & 0x3f) as u32) << 6
                    | ((q[2] & 0x3f) as u32) << 12
                    | ((q[3] & 0x3f) as u32) << 18;
                o[0].write(w as u8);
                o[1].write((w >> 8) as u8);
                o[2].write((w >> 16) as u8);
            }
            let mut w = 0u32;
            for (k, c) in quads.remainder().iter().enumerate() {
                w |= ((c & 0x3f) as u32) << (6 * k);
            }
            for (k, o) in out.iter_mut().enumerate().skip(3 * whole) {
                let g = if k / 3 == whole { w } else { 0 };
                o.write((g >> (8 * (k % 3))) as u8);
            }
        }
        _ => {
            for (k, o) in out.iter_mut().enumerate() {
                o.write(codes.get(k).copied().unwrap_or(0));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_get_set_agree_for_every_width() {
        for bits in [4u8, 6, 8] {
            let mask = ((1u16 << bits) - 1) as u8;
            for len in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 13] {
                let codes: Vec<u8> = (0..len).map(|i| ((i * 37 + 11) as u8) & mask).collect();
                let mut raw = vec![MaybeUninit::new(0xa5u8); byte_len(len, bits)];
                pack(&codes, bits, &mut raw);
                // SAFETY: MaybeUninit<u8> has u8's layout and every byte was initialised.
                let out: Vec<u8> = raw.iter().map(|b| unsafe { b.assume_init() }).collect();
                for (i, &c) in codes.iter().enumerate() {
                    assert_eq!(get(&out, bits, i), c, "bits {bits} len {len} i {i}");
                }
                let mut again = vec![0u8; out.len()];
                for (i, &c) in codes.iter().enumerate() {
                    set(&mut again, bits, i, c);
                }
                assert_eq!(again, out);
            }
        }
        assert_eq!(byte_len(5, 4), 3);
        assert_eq!(byte_len(8, 6), 6);
        assert_eq!(byte_len(5, 6), 6);
    }
}
