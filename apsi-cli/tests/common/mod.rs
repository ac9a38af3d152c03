//! A signed registry for end-to-end tests, made with the registry tool's
//! own code (`apsi_registry::run`) and served over HTTP on 127.0.0.1.

#![allow(dead_code)] // each test file uses part of it

use std::path::Path;

/// Runs one `apsi-registry` command line; panics with its error.
pub fn reg_tool(args: &[&str]) {
    let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    if let Err(e) = apsi_registry::run(&a) {
        panic!("apsi-registry {args:?}: {e}");
    }
}

/// A root key `keys/root.{key,pub}` and the first root of the registry `reg`.
pub fn new_registry(keys: &Path, reg: &Path) {
    reg_tool(&["keygen", "--dir", keys.to_str().unwrap(), "--name", "root"]);
    reg_tool(&[
        "root",
        reg.to_str().unwrap(),
        "--root-key",
        keys.join("root.pub").to_str().unwrap(),
        "--sign",
        keys.join("root.key").to_str().unwrap(),
    ]);
}

/// Signs a new snapshot of `reg` with `keys/root.key`.
pub fn sign(keys: &Path, reg: &Path) {
    reg_tool(&[
        "sign",
        reg.to_str().unwrap(),
        "--key",
        keys.join("root.key").to_str().unwrap(),
    ]);
}

/// Serves `reg` on a free loopback port for the rest of the test; its URL.
pub fn serve(reg: &Path) -> String {
    let (server, addr) = apsi_registry::serve::bind("127.0.0.1:0").unwrap();
    let reg = reg.to_path_buf();
    std::thread::spawn(move || apsi_registry::serve::run(server, &reg, 4));
    format!("http://{addr}")
}
