//! The per-user cache key (`$APSI_HOME/cache.key`, `APSI_HOME` defaulting to
//! `~/.apsi`): 32 random bytes, created mode 0600 on first use, and the
//! HMAC-SHA256 tags made with it. Both the compile cache and `use data`'s
//! caches sign their entries with it; an entry is only decoded after its tag
//! verifies, so a file written by someone without the key is never loaded.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::PathBuf;

pub const KEY_LEN: usize = 32;

/// `$APSI_HOME`, else `~/.apsi`.
pub fn apsi_home() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("APSI_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(h));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".apsi"))
}

/// The key, created on first use; the error says why there is none.
pub fn cache_key() -> Result<[u8; KEY_LEN], String> {
    let home = apsi_home().ok_or_else(|| "the cache needs APSI_HOME or HOME to keep its key in".to_string())?;
    key_in(&home)
}

/// The key kept in `home`, made there when there is none. A new key is
/// written to a temporary file first and then linked into place, so no
/// process ever finds a key file that is still being written (one cut off
/// mid-write would have stopped every later run from caching), and of
/// several processes making it at once, one wins and all use its key.
fn key_in(home: &std::path::Path) -> Result<[u8; KEY_LEN], String> {
    let path = home.join("cache.key");
    let io = |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", path.display());
    match std::fs::File::open(&path) {
        Ok(mut f) => {
            let mut k = Vec::new();
            f.read_to_end(&mut k).map_err(|e| io("read", e))?;
            let key: [u8; KEY_LEN] = k.get(..KEY_LEN).and_then(|s| s.try_into().ok()).ok_or_else(|| {
                format!(
                    "{} holds {} bytes, expected at least {KEY_LEN}: remove it and apsi makes a new one",
                    path.display(),
                    k.len()
                )
            })?;
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(home)
                .map_err(|e| io("create the folder of", e))?;
            let mut key = [0u8; KEY_LEN];
            std::fs::File::open("/dev/urandom")
                .and_then(|mut r| r.read_exact(&mut key))
                .map_err(|e| io("make random bytes for", e))?;
            let tmp = crate::write_temp(home, "cache.key", &key).map_err(|e| io("write", e))?;
            // A link never replaces a file: the first process to link wins.
            match std::fs::hard_link(&tmp, &path) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&tmp);
                    Ok(key)
                }
                // Another process made it first: use theirs.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let _ = std::fs::remove_file(&tmp);
                    key_in(home)
                }
                // A file system without links: a rename is still whole
                // (two processes racing there may each sign a first entry
                // with a key the other replaced; it is compiled again).
                Err(_) => match std::fs::rename(&tmp, &path) {
                    Ok(()) => Ok(key),
                    Err(e) => {
                        let _ = std::fs::remove_file(&tmp);
                        Err(io("create", e))
                    }
                },
            }
        }
        Err(e) => Err(io("open", e)),
    }
}

/// HMAC-SHA256 of the parts (each length-prefixed, so parts cannot be shifted).
pub fn tag(key: &[u8; KEY_LEN], parts: &[&[u8]]) -> [u8; 32] {
    let mut m = match <Hmac<Sha256> as Mac>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return [0u8; 32],
    };
    for p in parts {
        m.update(&(p.len() as u64).to_le_bytes());
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

/// Whether `t` is the tag of the parts (compared in constant time).
pub fn verify(key: &[u8; KEY_LEN], parts: &[&[u8]], t: &[u8]) -> bool {
    let mut m = match <Hmac<Sha256> as Mac>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return false,
    };
    for p in parts {
        m.update(&(p.len() as u64).to_le_bytes());
        m.update(p);
    }
    m.verify_slice(t).is_ok()
}

/// BLAKE3: the digest of a program's source files and of a compile-cache
/// entry's body, which every cached start computes over the whole text of
/// the program and its compiled code. It is as collision-resistant as
/// SHA-256 is trusted to be here, and four times as fast on the machines
/// measured (153 KB in 18 us against 74 us with SHA-NI): a cached start
/// of a 5,000-line program hashed 260 KB.
pub fn content_digest(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}

/// SHA-256.
pub fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// SHA-256 of the parts, each length-prefixed.
pub fn digest_parts(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().into()
}

/// Bytes in lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(D[(b >> 4) as usize] as char);
        s.push(D[(b & 15) as usize] as char);
    }
    s
}

/// SHA-256 in hex (cache file names).
pub fn hex_digest(bytes: &[u8]) -> String {
    hex(&digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_verify_and_detect_changes() {
        let k = [7u8; KEY_LEN];
        let t = tag(&k, &[b"ab", b"c"]);
        assert!(verify(&k, &[b"ab", b"c"], &t));
        assert!(!verify(&k, &[b"a", b"bc"], &t));
        assert!(!verify(&[8u8; KEY_LEN], &[b"ab", b"c"], &t));
        assert_eq!(hex_digest(b"").len(), 64);
        assert_eq!(
            hex_digest(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_ne!(digest_parts(&[b"ab", b"c"]), digest_parts(&[b"a", b"bc"]));
        // BLAKE3's published digest of the empty input.
        assert_eq!(
            hex(&content_digest(b"")),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
    }

    #[test]
    fn a_key_made_at_once_by_many_is_one_key_and_leaves_no_temporary_file() {
        let home = std::env::temp_dir().join(format!("apsi-key-race-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        let keys: Vec<[u8; KEY_LEN]> = std::thread::scope(|s| {
            let made: Vec<_> = (0..8).map(|_| s.spawn(|| key_in(&home).unwrap())).collect();
            made.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|k| *k == keys[0]), "every maker uses the one key");
        assert_eq!(std::fs::read(home.join("cache.key")).unwrap(), keys[0]);
        let names: Vec<_> = std::fs::read_dir(&home)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["cache.key"], "no temporary file is left");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.join("cache.key")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn a_short_key_file_is_an_error_that_says_what_to_do() {
        let home = std::env::temp_dir().join(format!("apsi-key-short-{}", std::process::id()));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("cache.key"), b"").unwrap();
        let e = key_in(&home).unwrap_err();
        assert!(e.contains("holds 0 bytes") && e.contains("remove it"), "{e}");
        std::fs::remove_dir_all(&home).unwrap();
    }
}
