//! TUF-lite trust: ed25519 keys, a signed root (the key set and thresholds),
//! rotated by a chain of roots each signed by its predecessor's threshold and
//! its own, a signed snapshot naming the sha256 and length of every index
//! file, with a version (no rollback) and an expiry, and a short-lived signed
//! timestamp naming the current snapshot (no freeze: a mirror that keeps
//! serving an old snapshot is caught within the timestamp's lifetime, a day
//! by default, not the snapshot's).
//!
//! What is signed is the canonical JSON of the `signed` member (object keys
//! sorted, no spaces), so a document re-serialised by any tool still verifies.

use crate::digest::{from_hex, sha256_hex, to_hex};
use crate::error::{err, ErrorKind, PkgError, Result};
use ed25519_dalek::{Signer, Verifier};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Trust metadata larger than this is refused before it is parsed.
pub const MAX_METADATA_BYTES: u64 = 8 << 20;

/// `timestamp.json` is fetched on every online run before anything else it
/// vouches for, so it gets a much smaller cap: a real one is about 600 bytes.
pub const MAX_TIMESTAMP_BYTES: u64 = 16 << 10;

/// A secret signing key (32 bytes).
pub struct SecretKey(ed25519_dalek::SigningKey);

impl SecretKey {
    /// A fresh key from the operating system's random source.
    pub fn generate() -> Result<SecretKey> {
        let mut seed = [0u8; 32];
        getrandom::getrandom(&mut seed)
            .map_err(|e| PkgError::new(ErrorKind::Io, format!("cannot read random bytes for a new key: {e}")))?;
        Ok(SecretKey(ed25519_dalek::SigningKey::from_bytes(&seed)))
    }

    /// Parses the hex text of a secret key file.
    pub fn from_hex(text: &str) -> Result<SecretKey> {
        let bytes = from_hex(text.trim())
            .filter(|b| b.len() == 32)
            .ok_or_else(|| PkgError::new(ErrorKind::Usage, "a secret key file must hold 64 hex digits (32 bytes)"))?;
        let mut seed = [0u8; 32];
        seed.copy_from_slice(&bytes);
        Ok(SecretKey(ed25519_dalek::SigningKey::from_bytes(&seed)))
    }

    pub fn to_hex(&self) -> String {
        to_hex(&self.0.to_bytes())
    }

    pub fn public_hex(&self) -> String {
        to_hex(self.0.verifying_key().as_bytes())
    }

    /// The key id: sha256 of the public key bytes.
    pub fn keyid(&self) -> String {
        sha256_hex(self.0.verifying_key().as_bytes())
    }

    pub fn sign(&self, msg: &[u8]) -> String {
        to_hex(&self.0.sign(msg).to_bytes())
    }
}

/// The key id of a public key given in hex; `None` when it is not 32 bytes.
pub fn keyid_of(public_hex: &str) -> Option<String> {
    let b = from_hex(public_hex.trim())?;
    (b.len() == 32).then(|| sha256_hex(&b))
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Signature {
    pub keyid: String,
    pub sig: String,
}

/// A signed document: `{"signed": {...}, "signatures": [...]}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope {
    pub signed: Value,
    pub signatures: Vec<Signature>,
}

/// Who may sign one role and how many of them must.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Role {
    pub keyids: Vec<String>,
    pub threshold: u32,
}

/// The root: every key (id → public key hex) and the roles.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Root {
    #[serde(rename = "type")]
    pub kind: String,
    pub version: u64,
    /// Unix seconds.
    pub expires: u64,
    pub keys: BTreeMap<String, String>,
    pub root: Role,
    pub snapshot: Role,
    /// Who signs `timestamp.json`. A root that declares it makes the
    /// timestamp mandatory for every online session; a root without it
    /// (written before the role existed) is used as before, with the
    /// snapshot's expiry as the only freeze protection. Left out of the
    /// signed JSON when absent, so such roots keep their signatures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Role>,
}

/// Length and hash of one index file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileMeta {
    pub sha256: String,
    pub length: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Snapshot {
    #[serde(rename = "type")]
    pub kind: String,
    pub version: u64,
    /// Unix seconds.
    pub expires: u64,
    /// Path relative to the registry root → its meta; `config.json` included.
    pub files: BTreeMap<String, FileMeta>,
}

/// What a timestamp says about the current snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SnapshotMeta {
    pub version: u64,
    pub length: u64,
    pub sha256: String,
}

/// `timestamp.json`: re-signed often (daily) by an online key, it names the
/// one snapshot a client may accept now.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Timestamp {
    #[serde(rename = "type")]
    pub kind: String,
    pub version: u64,
    /// Unix seconds.
    pub expires: u64,
    pub snapshot: SnapshotMeta,
}

/// Canonical JSON: object keys sorted, no whitespace.
pub fn canonical(v: &Value) -> Vec<u8> {
    fn write(v: &Value, out: &mut Vec<u8>) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push(b'{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend(serde_json::to_vec(k).unwrap_or_default());
                    out.push(b':');
                    if let Some(x) = m.get(*k) {
                        write(x, out);
                    }
                }
                out.push(b'}');
            }
            Value::Array(a) => {
                out.push(b'[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write(x, out);
                }
                out.push(b']');
            }
            other => out.extend(serde_json::to_vec(other).unwrap_or_default()),
        }
    }
    let mut out = Vec::new();
    write(v, &mut out);
    out
}

/// Signs `signed` with every key given.
pub fn sign<T: Serialize>(signed: &T, keys: &[&SecretKey]) -> Result<Envelope> {
    let value = serde_json::to_value(signed)
        .map_err(|e| PkgError::new(ErrorKind::Io, format!("cannot serialise metadata: {e}")))?;
    let msg = canonical(&value);
    let signatures = keys
        .iter()
        .map(|k| Signature {
            keyid: k.keyid(),
            sig: k.sign(&msg),
        })
        .collect();
    Ok(Envelope {
        signed: value,
        signatures,
    })
}

/// Serialises an envelope for writing to disk (pretty, stable).
pub fn envelope_bytes(env: &Envelope) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(env).unwrap_or_default();
    v.push(b'\n');
    v
}

/// Parses an envelope from raw bytes, refusing oversized input first.
pub fn parse_envelope(what: &str, bytes: &[u8]) -> Result<Envelope> {
    if bytes.len() as u64 > MAX_METADATA_BYTES {
        return err(
            ErrorKind::Integrity,
            format!(
                "{what} is {} bytes, more than the {MAX_METADATA_BYTES} allowed for trust metadata",
                bytes.len()
            ),
        );
    }
    serde_json::from_slice(bytes)
        .map_err(|e| PkgError::new(ErrorKind::Trust, format!("{what} is not a signed document: {e}")))
}

/// Checks that at least `role.threshold` distinct keys of `role`, known in
/// `keys`, signed the envelope. The error lists what each signature was.
pub fn verify_role(what: &str, env: &Envelope, keys: &BTreeMap<String, String>, role: &Role) -> Result<()> {
    if role.threshold == 0 {
        return err(ErrorKind::Trust, format!("{what}: a threshold of 0 is never accepted"));
    }
    let msg = canonical(&env.signed);
    let mut good: Vec<&str> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for s in &env.signatures {
        let short = s.keyid.get(..12).unwrap_or(&s.keyid);
        if !role.keyids.contains(&s.keyid) {
            notes.push(format!("key {short} is not a key of this role"));
            continue;
        }
        let Some(pk_hex) = keys.get(&s.keyid) else {
            notes.push(format!("key {short} is unknown"));
            continue;
        };
        if good.contains(&s.keyid.as_str()) {
            continue;
        }
        if check_sig(pk_hex, &s.sig, &msg) {
            good.push(&s.keyid);
        } else {
            notes.push(format!("key {short}: bad signature"));
        }
    }
    if (good.len() as u64) < u64::from(role.threshold) {
        let detail = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        };
        return Err(PkgError::new(
            ErrorKind::Trust,
            format!(
                "{what}: signature threshold not met: expected {} valid signature(s), found {}{detail}",
                role.threshold,
                good.len()
            ),
        )
        .hint(
            "the registry's metadata is not signed by keys you trust; do not use it, and tell the registry's operator",
        ));
    }
    Ok(())
}

fn check_sig(pk_hex: &str, sig_hex: &str, msg: &[u8]) -> bool {
    let (Some(pk), Some(sig)) = (from_hex(pk_hex), from_hex(sig_hex)) else {
        return false;
    };
    let (Ok(pk), Ok(sig)) = (
        <[u8; 32]>::try_from(pk.as_slice()),
        <[u8; 64]>::try_from(sig.as_slice()),
    ) else {
        return false;
    };
    let Ok(vk) = ed25519_dalek::VerifyingKey::from_bytes(&pk) else {
        return false;
    };
    vk.verify(msg, &ed25519_dalek::Signature::from_bytes(&sig)).is_ok()
}

fn typed<T: for<'de> Deserialize<'de>>(what: &str, env: &Envelope) -> Result<T> {
    serde_json::from_value(env.signed.clone())
        .map_err(|e| PkgError::new(ErrorKind::Trust, format!("{what}: malformed signed content: {e}")))
}

/// Parses a root and checks it is self-consistent and signed by its own
/// root role (used for the pinned/configured root and each rotation step).
pub fn parse_root(what: &str, bytes: &[u8]) -> Result<(Root, Envelope)> {
    let env = parse_envelope(what, bytes)?;
    let root: Root = typed(what, &env)?;
    if root.kind != "root" {
        return err(
            ErrorKind::Trust,
            format!("{what}: expected a document of type 'root', found '{}'", root.kind),
        );
    }
    for (id, pk) in &root.keys {
        if keyid_of(pk).as_deref() != Some(id.as_str()) {
            return err(
                ErrorKind::Trust,
                format!("{what}: key id {id} does not match its public key"),
            );
        }
    }
    verify_role(what, &env, &root.keys, &root.root)?;
    Ok((root, env))
}

/// One rotation step: `next` must be version `trusted.version + 1` and be
/// signed by the threshold of the trusted root's keys and of its own.
pub fn verify_rotation(trusted: &Root, bytes: &[u8]) -> Result<(Root, Envelope)> {
    let want = trusted.version.saturating_add(1);
    let what = format!("root version {want}");
    let (next, env) = parse_root(&what, bytes)?;
    if next.version != want {
        return err(
            ErrorKind::Trust,
            format!(
                "{what}: expected version {want}, found {} (roots must not be skipped)",
                next.version
            ),
        );
    }
    verify_role(
        &format!("{what} (signed by version {})", trusted.version),
        &env,
        &trusted.keys,
        &trusted.root,
    )?;
    Ok((next, env))
}

/// A unix time as a UTC date and time, `2026-12-03 14:39:42 UTC`, for
/// messages (the proleptic Gregorian calendar; days from 1970-01-01).
pub fn utc_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from a day count (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Verifies a snapshot against the root. Expiry is returned, not judged,
/// since offline use only warns about it.
pub fn verify_snapshot(root: &Root, bytes: &[u8]) -> Result<Snapshot> {
    let env = parse_envelope("snapshot.json", bytes)?;
    verify_role("snapshot.json", &env, &root.keys, &root.snapshot)?;
    let snap: Snapshot = typed("snapshot.json", &env)?;
    if snap.kind != "snapshot" {
        return err(
            ErrorKind::Trust,
            format!("snapshot.json: expected type 'snapshot', found '{}'", snap.kind),
        );
    }
    Ok(snap)
}

/// Verifies `timestamp.json` against the root's timestamp role: size (at
/// most [`MAX_TIMESTAMP_BYTES`]), signatures, type. Like [`verify_snapshot`],
/// expiry and version are the caller's to judge. `what` names the file and
/// where it came from, for messages.
pub fn verify_timestamp(what: &str, root: &Root, bytes: &[u8]) -> Result<Timestamp> {
    let Some(role) = &root.timestamp else {
        return err(
            ErrorKind::Trust,
            format!(
                "{what}: root version {} declares no timestamp role, so no timestamp can be trusted",
                root.version
            ),
        );
    };
    if bytes.len() as u64 > MAX_TIMESTAMP_BYTES {
        return Err(PkgError::new(
            ErrorKind::Integrity,
            format!(
                "{what}: expected at most {MAX_TIMESTAMP_BYTES} bytes, found {}",
                bytes.len()
            ),
        )
        .hint("a timestamp is a few hundred bytes; this one was not made by `apsi-registry`: do not use this registry or mirror, and tell its operator"));
    }
    let env = parse_envelope(what, bytes)?;
    verify_role(what, &env, &root.keys, role)?;
    let ts: Timestamp = typed(what, &env)?;
    if ts.kind != "timestamp" {
        return err(
            ErrorKind::Trust,
            format!("{what}: expected type 'timestamp', found '{}'", ts.kind),
        );
    }
    Ok(ts)
}

/// Checks the bytes of `snapshot.json` against what a verified timestamp
/// names (length first, then sha256), before the snapshot is parsed.
pub fn check_snapshot_meta(what: &str, ts: &Timestamp, bytes: &[u8]) -> Result<()> {
    let m = &ts.snapshot;
    let got_len = bytes.len() as u64;
    let got = if got_len == m.length {
        sha256_hex(bytes)
    } else {
        String::new()
    };
    if got_len != m.length || got != m.sha256 {
        let found = if got_len != m.length {
            format!("{got_len} bytes")
        } else {
            format!("sha256 {got}")
        };
        return err(
            ErrorKind::Integrity,
            format!(
                "{what} does not match timestamp version {}: expected snapshot version {} ({} bytes, sha256 {}), found {found}",
                ts.version, m.version, m.length, m.sha256
            ),
        );
    }
    Ok(())
}

/// Checks bytes against a declared length and hash, length first.
pub fn check_meta(what: &str, meta: &FileMeta, bytes: &[u8]) -> Result<()> {
    if bytes.len() as u64 != meta.length {
        return err(
            ErrorKind::Integrity,
            format!(
                "{what}: expected {} bytes as the snapshot declares, found {}",
                meta.length,
                bytes.len()
            ),
        );
    }
    let got = sha256_hex(bytes);
    if got != meta.sha256 {
        return err(
            ErrorKind::Integrity,
            format!("{what}: sha256 mismatch: expected {}, found {got}", meta.sha256),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_with(keys: &[&SecretKey], threshold: u32, version: u64) -> Root {
        let map: BTreeMap<String, String> = keys.iter().map(|k| (k.keyid(), k.public_hex())).collect();
        let ids: Vec<String> = map.keys().cloned().collect();
        Root {
            kind: "root".into(),
            version,
            expires: now_secs() + 1000,
            keys: map,
            root: Role {
                keyids: ids.clone(),
                threshold,
            },
            snapshot: Role { keyids: ids, threshold },
            timestamp: None,
        }
    }

    fn timestamp_for(snapshot: &[u8], version: u64) -> Timestamp {
        Timestamp {
            kind: "timestamp".into(),
            version,
            expires: now_secs() + 86_400,
            snapshot: SnapshotMeta {
                version: 1,
                length: snapshot.len() as u64,
                sha256: sha256_hex(snapshot),
            },
        }
    }

    #[test]
    fn root_without_timestamp_role_keeps_its_signature() {
        // Roots signed before the role existed have no "timestamp" member;
        // parsing and re-serialising one must not add it (the signature is
        // over the canonical JSON).
        let a = SecretKey::generate().unwrap();
        let root = root_with(&[&a], 1, 1);
        let env = sign(&root, &[&a]).unwrap();
        assert!(env.signed.get("timestamp").is_none(), "{}", env.signed);
        let (parsed, _) = parse_root("r", &envelope_bytes(&env)).unwrap();
        assert_eq!(parsed.timestamp, None);
        let again = sign(&parsed, &[&a]).unwrap();
        assert_eq!(canonical(&again.signed), canonical(&env.signed));
        // A timestamp cannot be trusted under such a root.
        let ts = envelope_bytes(&sign(&timestamp_for(b"s", 1), &[&a]).unwrap());
        let e = verify_timestamp("timestamp.json", &parsed, &ts).unwrap_err();
        assert!(e.message.contains("declares no timestamp role"), "{e}");
    }

    /// `root` with `t` as its one timestamp key.
    fn with_timestamp_key(mut root: Root, t: &SecretKey) -> Root {
        root.keys.insert(t.keyid(), t.public_hex());
        root.timestamp = Some(Role {
            keyids: vec![t.keyid()],
            threshold: 1,
        });
        root
    }

    #[test]
    fn timestamp_is_signed_by_its_own_role() {
        let (r, t, stranger) = (
            SecretKey::generate().unwrap(),
            SecretKey::generate().unwrap(),
            SecretKey::generate().unwrap(),
        );
        let root = with_timestamp_key(root_with(&[&r], 1, 1), &t);
        let ts = timestamp_for(b"snapshot bytes", 3);
        let good = envelope_bytes(&sign(&ts, &[&t]).unwrap());
        assert_eq!(verify_timestamp("timestamp.json", &root, &good).unwrap(), ts);
        // The root key is not a timestamp key, nor is a stranger's.
        for k in [&r, &stranger] {
            let bad = envelope_bytes(&sign(&ts, &[k]).unwrap());
            let e = verify_timestamp("timestamp.json", &root, &bad).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Trust);
            assert!(e.message.contains("not a key of this role"), "{e}");
        }
        // A snapshot signed by the timestamp key is not a timestamp.
        let mut other = serde_json::to_value(&ts).unwrap();
        other["type"] = Value::from("snapshot");
        let env = sign(&other, &[&t]).unwrap();
        let e = verify_timestamp("timestamp.json", &root, &envelope_bytes(&env)).unwrap_err();
        assert!(e.message.contains("expected type 'timestamp'"), "{e}");
    }

    #[test]
    fn oversize_timestamp_is_refused_unparsed() {
        let t = SecretKey::generate().unwrap();
        let mut root = root_with(&[&t], 1, 1);
        root.timestamp = Some(root.snapshot.clone());
        let mut big = envelope_bytes(&sign(&timestamp_for(b"s", 1), &[&t]).unwrap());
        big.extend(std::iter::repeat_n(b' ', MAX_TIMESTAMP_BYTES as usize));
        let e = verify_timestamp("timestamp.json", &root, &big).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Integrity);
        assert!(
            e.message
                .contains(&format!("expected at most {MAX_TIMESTAMP_BYTES} bytes")),
            "{e}"
        );
    }

    #[test]
    fn rotated_timestamp_key_refuses_the_old_one() {
        let (r, old_t, new_t) = (
            SecretKey::generate().unwrap(),
            SecretKey::generate().unwrap(),
            SecretKey::generate().unwrap(),
        );
        let r1 = with_timestamp_key(root_with(&[&r], 1, 1), &old_t);
        let r2 = with_timestamp_key(root_with(&[&r], 1, 2), &new_t);
        let (r2, _) = verify_rotation(&r1, &envelope_bytes(&sign(&r2, &[&r]).unwrap())).unwrap();
        let ts = timestamp_for(b"s", 2);
        let by_old = envelope_bytes(&sign(&ts, &[&old_t]).unwrap());
        let by_new = envelope_bytes(&sign(&ts, &[&new_t]).unwrap());
        assert!(verify_timestamp("t", &r1, &by_old).is_ok());
        let e = verify_timestamp("t", &r2, &by_old).unwrap_err();
        assert!(e.message.contains("not a key of this role"), "{e}");
        assert!(verify_timestamp("t", &r2, &by_new).is_ok());
    }

    #[test]
    fn snapshot_must_be_the_one_the_timestamp_names() {
        let ts = timestamp_for(b"new snapshot", 5);
        assert!(check_snapshot_meta("snapshot.json", &ts, b"new snapshot").is_ok());
        let e = check_snapshot_meta("snapshot.json", &ts, b"old snapshot").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Integrity);
        assert!(e.message.contains("does not match timestamp version 5"), "{e}");
        assert!(e.message.contains("found sha256 "), "{e}");
        let e = check_snapshot_meta("snapshot.json", &ts, b"old").unwrap_err();
        assert!(e.message.contains("found 3 bytes"), "{e}");
    }

    #[test]
    fn canonical_sorts_keys() {
        let v: Value = serde_json::from_str(r#"{"b":1,"a":{"d":[1,2],"c":"x"}}"#).unwrap();
        assert_eq!(
            String::from_utf8(canonical(&v)).unwrap(),
            r#"{"a":{"c":"x","d":[1,2]},"b":1}"#
        );
    }

    #[test]
    fn threshold_and_bad_signatures() {
        let (a, b) = (SecretKey::generate().unwrap(), SecretKey::generate().unwrap());
        let root = root_with(&[&a, &b], 2, 1);
        let one = sign(&root, &[&a]).unwrap();
        let e = verify_role("t", &one, &root.keys, &root.root).unwrap_err();
        assert!(e.message.contains("expected 2 valid signature(s), found 1"), "{e}");
        let mut both = sign(&root, &[&a, &b]).unwrap();
        assert!(verify_role("t", &both, &root.keys, &root.root).is_ok());
        // The same key twice does not count twice.
        let twice = sign(&root, &[&a, &a]).unwrap();
        assert!(verify_role("t", &twice, &root.keys, &root.root).is_err());
        // A tampered payload fails.
        both.signed["version"] = Value::from(7);
        let e = verify_role("t", &both, &root.keys, &root.root).unwrap_err();
        assert!(e.message.contains("bad signature"), "{e}");
    }

    #[test]
    fn unknown_key_does_not_count() {
        let (a, stranger) = (SecretKey::generate().unwrap(), SecretKey::generate().unwrap());
        let root = root_with(&[&a], 1, 1);
        let env = sign(&root, &[&stranger]).unwrap();
        let e = verify_role("t", &env, &root.keys, &root.root).unwrap_err();
        assert!(e.message.contains("not a key of this role"), "{e}");
    }

    #[test]
    fn rotation_chain() {
        let (a, b) = (SecretKey::generate().unwrap(), SecretKey::generate().unwrap());
        let r1 = root_with(&[&a], 1, 1);
        let r2 = root_with(&[&b], 1, 2);
        // Signed only by the new key: refused.
        let only_new = envelope_bytes(&sign(&r2, &[&b]).unwrap());
        assert!(verify_rotation(&r1, &only_new).is_err());
        let good = envelope_bytes(&sign(&r2, &[&a, &b]).unwrap());
        assert_eq!(verify_rotation(&r1, &good).unwrap().0.version, 2);
        // Skipping a version: refused.
        let r3 = root_with(&[&b], 1, 3);
        let skip = envelope_bytes(&sign(&r3, &[&a, &b]).unwrap());
        let e = verify_rotation(&r1, &skip).unwrap_err();
        assert!(e.message.contains("must not be skipped"), "{e}");
    }

    #[test]
    fn meta_checks_length_then_hash() {
        let m = FileMeta {
            sha256: sha256_hex(b"abc"),
            length: 3,
        };
        assert!(check_meta("f", &m, b"abc").is_ok());
        assert!(check_meta("f", &m, b"abcd")
            .unwrap_err()
            .message
            .contains("expected 3 bytes"));
        assert!(check_meta("f", &m, b"abd")
            .unwrap_err()
            .message
            .contains("sha256 mismatch"));
    }

    #[test]
    fn dates_are_shown_in_utc() {
        assert_eq!(utc_date(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_date(1_796_309_982), "2026-12-03 14:59:42 UTC");
    }
}
