//! Links the `apsi` executable at a fixed address instead of as a
//! position-independent one. A PIE `apsi` spends a quarter of a
//! millisecond of every start in the dynamic loader: about 10,800
//! relative relocations, written into some 50 pages of `.data.rel.ro`
//! that each fault and are copied (measured for `hello.apsi`: 1.90 ms of
//! CPU and 329 page faults as a PIE, 1.62 ms and 280 faults without).
//! Debian builds its `python3` the same way for the same reason. Only the
//! executable is affected: the plugins `apsi` loads stay shared objects.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=apsi=-no-pie");
    }
}
