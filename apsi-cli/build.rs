//! Link settings of the `apsi` executable that make every start cheaper.
//! Only the executable is affected: the plugins `apsi` loads stay shared
//! objects with their own settings.
//!
//! - A fixed address instead of a position-independent executable. A PIE
//!   `apsi` spends a quarter of a millisecond of every start in the
//!   dynamic loader: about 10,800 relative relocations, written into some
//!   50 pages of `.data.rel.ro` that each fault and are copied (measured
//!   for `hello.apsi`: 1.90 ms of CPU and 329 page faults as a PIE,
//!   1.62 ms and 280 faults without). Debian builds its `python3` the same
//!   way for the same reason.
//! - The unwinder linked in (`libgcc_eh.a`, what `gcc -static-libgcc`
//!   links) instead of loaded from `libgcc_s.so.1`. Loading that library
//!   runs its constructor, which asks the processor about itself with
//!   about a dozen `cpuid` instructions; in a virtual machine each one
//!   traps to the hypervisor (4 us apiece on the VMs measured), and with
//!   the library's own loading it cost 70 us of every start (4% of
//!   `hello.apsi`). The standard library names `gcc_s` for its unwinder;
//!   a folder holding `libgcc_s.a` (the static unwinder under that name),
//!   searched before the system's, makes the linker take the archive.
//!   Where the compiler has no `libgcc_eh.a`, or in a cross build, nothing
//!   changes.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    println!("cargo:rustc-link-arg-bin=apsi=-no-pie");
    // The host's C compiler names the host's archive: not for a cross build.
    let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
    if native && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu") {
        if let Some(dir) = static_unwinder_dir() {
            println!("cargo:rustc-link-search=native={}", dir.display());
        }
    }
}

/// A folder in `OUT_DIR` whose `libgcc_s.a` is the C compiler's
/// `libgcc_eh.a`; `None` when the compiler has none.
fn static_unwinder_dir() -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = std::process::Command::new(&cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let found = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    // The compiler echoes the bare name when it has no such file.
    if !found.is_absolute() || !found.is_file() {
        return None;
    }
    let dir = PathBuf::from(std::env::var_os("OUT_DIR")?).join("static-unwinder");
    std::fs::create_dir_all(&dir).ok()?;
    let lib = dir.join("libgcc_s.a");
    let _ = std::fs::remove_file(&lib);
    std::fs::copy(&found, &lib).ok()?;
    Some(dir)
}
