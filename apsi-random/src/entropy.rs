//! Seeds from the operating system: `/dev/urandom` where there is one (as
//! CPython's `os.urandom`); elsewhere the standard library's per-process
//! random hash keys (themselves drawn from the OS), mixed with a counter.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

/// `n` words of OS entropy.
pub fn words(n: usize) -> Vec<u32> {
    let mut bytes = vec![0u8; n * 4];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        fallback(&mut bytes);
    }
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn fallback(bytes: &mut [u8]) {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let keys = RandomState::new();
    for chunk in bytes.chunks_mut(8) {
        let mut h = keys.build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            h.write_u128(t.as_nanos());
        }
        h.write_u32(std::process::id());
        let v = h.finish().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_draws_differ() {
        assert_ne!(super::words(8), super::words(8));
        let mut b = [0u8; 13];
        super::fallback(&mut b);
        assert_ne!(b, [0u8; 13]);
    }
}
