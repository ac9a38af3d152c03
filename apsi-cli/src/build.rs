//! `apsi build app.apsi -o app`: one executable that is this `apsi` with
//! the compiled program appended, so it starts without parsing, checking or
//! compiling, on a machine without the program's source.
//!
//! The file is this executable's bytes, then the payload, then a 48-byte
//! trailer:
//!
//! ```text
//! payload: magic "APSIAPP\x01", apsi version, the program's name, the
//!          permissions granted at build time, its source files (name as
//!          shown, text: error messages show their lines), the compiled
//!          program (apsi_core::serial)
//! trailer: payload length (u64 LE), SHA-256 of the payload, "APSIEXE\x01"
//! ```
//!
//! Every `apsi` start reads the last 48 bytes of its own executable; only a
//! built program has the trailer. A payload whose digest does not match
//! (changed, truncated, appended to) is refused before anything is decoded.
//! The digest detects modification; it is not a signature by a key (a
//! built program must run for users who have no key of the builder's).

use crate::args::RunOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

const TRAILER_MAGIC: &[u8; 8] = b"APSIEXE\x01";
const PAYLOAD_MAGIC: &[u8; 8] = b"APSIAPP\x01";
const TRAILER_LEN: u64 = 48;

/// A program built into this executable.
pub struct App {
    /// The program's file as it was given to `apsi build`.
    pub name: String,
    pub allowed: Vec<String>,
    /// (name as shown, text) of each source file, in the program's order.
    pub files: Vec<(String, String)>,
    pub compiled: Vec<u8>,
}

fn put(b: &mut Vec<u8>, s: &[u8]) {
    b.extend_from_slice(&(s.len() as u64).to_le_bytes());
    b.extend_from_slice(s);
}

fn encode(app: &App) -> Vec<u8> {
    let mut b = Vec::with_capacity(app.compiled.len() + 1024);
    b.extend_from_slice(PAYLOAD_MAGIC);
    put(&mut b, crate::APSI_VERSION.as_bytes());
    put(&mut b, app.name.as_bytes());
    put(&mut b, app.allowed.join(",").as_bytes());
    b.extend_from_slice(&(app.files.len() as u64).to_le_bytes());
    for (n, t) in &app.files {
        put(&mut b, n.as_bytes());
        put(&mut b, t.as_bytes());
    }
    put(&mut b, &app.compiled);
    b
}

fn take_num(r: &mut &[u8]) -> Option<usize> {
    let (n, tail) = r.split_first_chunk::<8>()?;
    *r = tail;
    usize::try_from(u64::from_le_bytes(*n)).ok()
}

fn take_text(r: &mut &[u8]) -> Option<String> {
    let n = take_num(r)?;
    if n > r.len() {
        return None;
    }
    let (a, b) = r.split_at(n);
    *r = b;
    String::from_utf8(a.to_vec()).ok()
}

fn decode(p: &[u8]) -> Option<App> {
    let mut rest = p.strip_prefix(PAYLOAD_MAGIC.as_slice())?;
    let r = &mut rest;
    if take_text(r)? != crate::APSI_VERSION {
        return None;
    }
    let name = take_text(r)?;
    let allowed: Vec<String> = take_text(r)?
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let n = take_num(r)?;
    let mut files = Vec::new();
    for _ in 0..n.min(r.len()) {
        let name = take_text(r)?;
        let t = take_text(r)?;
        files.push((name, t));
    }
    if files.len() != n {
        return None;
    }
    let n = take_num(r)?;
    if n != r.len() {
        return None;
    }
    Some(App {
        name,
        allowed,
        files,
        compiled: r.to_vec(),
    })
}

/// (length of the executable proper, payload range) of a built program's
/// file, from its trailer; `None` when it has none (plain `apsi`).
fn trailer(f: &mut std::fs::File) -> Option<(u64, [u8; 32], u64)> {
    let len = f.metadata().ok()?.len();
    if len < TRAILER_LEN {
        return None;
    }
    f.seek(SeekFrom::Start(len - TRAILER_LEN)).ok()?;
    let mut t = [0u8; TRAILER_LEN as usize];
    f.read_exact(&mut t).ok()?;
    if &t[40..] != TRAILER_MAGIC {
        return None;
    }
    let plen = u64::from_le_bytes(t[..8].try_into().ok()?);
    let sha: [u8; 32] = t[8..40].try_into().ok()?;
    Some((plen, sha, len - TRAILER_LEN))
}

/// The program built into this executable: `None` for plain `apsi`, an
/// error for a payload that was modified.
pub fn embedded() -> Option<Result<App, String>> {
    let exe = std::env::current_exe().ok()?;
    let mut f = std::fs::File::open(&exe).ok()?;
    let (plen, sha, end) = trailer(&mut f)?;
    let damaged = || {
        Err(format!(
            "{}: its built-in program was modified or damaged",
            exe.display()
        ))
    };
    let Some(start) = end.checked_sub(plen) else {
        return Some(damaged());
    };
    let mut payload = vec![0u8; plen as usize];
    if f.seek(SeekFrom::Start(start)).is_err() || f.read_exact(&mut payload).is_err() {
        return Some(damaged());
    }
    if apsi_cache::key::digest(&payload) != sha {
        return Some(damaged());
    }
    Some(decode(&payload).ok_or_else(|| {
        format!(
            "{}: its built-in program was made by another version of apsi (this is {})",
            exe.display(),
            crate::APSI_VERSION
        )
    }))
}

/// The build's permissions as the flags that grant them
/// (`--allow-net --allow-python`); `None` when there are none.
fn permission_flags(allowed: &[String]) -> Option<String> {
    if allowed.is_empty() {
        return None;
    }
    Some(
        allowed
            .iter()
            .map(|a| format!("--allow-{a}"))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Runs the program built into this executable with `args` (all of them
/// the program's, except `--help` alone, and a leading `--` is dropped).
pub fn run_embedded(app: App, args: &[String]) -> u8 {
    if args.first().map(String::as_str) == Some("--help") {
        let exe = std::env::args().next().unwrap_or_else(|| "app".into());
        let perms = permission_flags(&app.allowed).unwrap_or_else(|| "none".to_string());
        println!(
            "{exe}: {} built with apsi {} (the program is compiled in; no source is needed)\n\nUsage: {exe} [ARGS…]   (ARGS are the program's argv; `{exe} -- --help` passes --help to it)\n\nPermissions granted at build time: {perms}",
            app.name,
            crate::APSI_VERSION
        );
        return 0;
    }
    let argv = match args.first().map(String::as_str) {
        Some("--") => args[1..].to_vec(),
        _ => args.to_vec(),
    };
    let opts = RunOptions {
        file: app.name.clone(),
        argv,
        allowed: app.allowed.clone(),
        ..RunOptions::default()
    };
    crate::run::run_program(&opts, Some(app))
}

/// `apsi build FILE -o OUT`: checks and compiles FILE (every error reported),
/// then writes OUT.
pub fn build(file: &str, out: &str, allowed: &[String]) -> u8 {
    use apsi_core::diagnostic::{FileId, SourceMap};
    let env = crate::run::check_env(allowed);
    let Some(runtime) = crate::run::checking_runtime() else {
        return 1;
    };
    let sources = Arc::new(SourceMap::new());
    let compiled =
        match apsi_core::check::load(Path::new(file), file, &env, sources.clone()).and_then(|p| runtime.compile(&p)) {
            Ok(c) => c,
            Err(diags) => {
                crate::run::report(&diags, &sources);
                return 1;
            }
        };
    let compiled = match runtime.encode_compiled(&compiled) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: cannot build {file}: its compiled form cannot be stored ({e})");
            return 1;
        }
    };
    let mut files = Vec::new();
    let mut id = 0;
    while let Some(f) = sources.get(FileId(id)) {
        files.push((f.name.clone(), f.text.to_string()));
        id += 1;
    }
    let mut allowed = allowed.to_vec();
    allowed.sort();
    allowed.dedup();
    let app = App {
        name: file.to_string(),
        allowed,
        files,
        compiled,
    };
    match write_executable(&app, Path::new(out)) {
        Ok(size) => {
            println!(
                "built {out} ({:.1} MB): {file} compiled in, with {}",
                size as f64 / 1e6,
                permission_flags(&app.allowed).unwrap_or_else(|| "no extra permissions".to_string())
            );
            0
        }
        Err(e) => {
            eprintln!("error: cannot write {out}: {e}");
            1
        }
    }
}

/// This executable (without a payload of its own), the payload, the trailer;
/// written to a temporary file beside `out`, then renamed. Returns the size.
fn write_executable(app: &App, out: &Path) -> std::io::Result<u64> {
    use std::os::unix::fs::OpenOptionsExt;
    let exe = std::env::current_exe()?;
    let mut src = std::fs::File::open(&exe)?;
    let exe_len = match trailer(&mut src) {
        Some((plen, _, end)) => end.saturating_sub(plen),
        None => src.metadata()?.len(),
    };
    src.seek(SeekFrom::Start(0))?;
    let payload = encode(app);
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        out.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let mut write = || -> std::io::Result<u64> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o755)
            .open(&tmp)?;
        let copied = std::io::copy(&mut (&mut src).take(exe_len), &mut f)?;
        if copied != exe_len {
            return Err(std::io::Error::other("the apsi executable changed while it was copied"));
        }
        f.write_all(&payload)?;
        f.write_all(&(payload.len() as u64).to_le_bytes())?;
        f.write_all(&apsi_cache::key::digest(&payload))?;
        f.write_all(TRAILER_MAGIC)?;
        f.sync_all()?;
        std::fs::rename(&tmp, out)?;
        Ok(copied + payload.len() as u64 + TRAILER_LEN)
    };
    let r = write();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_damage_is_refused() {
        let app = App {
            name: "a.apsi".into(),
            allowed: vec!["net".into()],
            files: vec![("a.apsi".into(), "print(1)\n".into())],
            compiled: vec![1, 2, 3],
        };
        let p = encode(&app);
        let back = decode(&p).unwrap();
        assert_eq!(
            (back.name, back.allowed, back.files, back.compiled),
            (app.name, app.allowed, app.files, app.compiled)
        );
        for n in 0..p.len() {
            assert!(decode(&p[..n]).is_none(), "truncated to {n}");
        }
    }
}
