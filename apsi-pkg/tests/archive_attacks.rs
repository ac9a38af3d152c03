//! Hostile archives, each published (validly signed) and installed through
//! the real client: every one is refused, nothing is written outside the
//! package's folder, and nothing is linked or kept extracted.

mod common;
use apsi_pkg::ErrorKind;
use common::*;
use tar::EntryType;

const OUT: &str = "p-1.0.0/../../../../../outside/pwned";

fn attack(build: impl FnOnce(&mut RawTar), unpacked: u64) -> apsi_pkg::PkgError {
    let reg = Reg::new();
    let mut t = RawTar::new();
    t.manifest("p", "1.0.0");
    build(&mut t);
    reg.publish_raw("p", "1.0.0", &t.gz(), unpacked);
    reg.sign();
    let env = Env::new();
    let e = env
        .ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&["p".into()], None)
        .expect_err("must be refused");
    env.assert_clean("p");
    e
}

fn refused(e: &apsi_pkg::PkgError, why: &str) {
    assert_eq!(e.kind, ErrorKind::Archive, "{e}");
    assert!(e.message.contains(why), "expected '{why}' in: {e}");
}

#[test]
fn dotdot_path() {
    refused(
        &attack(
            |t| {
                t.file(OUT, b"x");
            },
            100,
        ),
        "'..'",
    );
}

#[test]
fn absolute_path() {
    let target = std::env::temp_dir().join(format!("apsi-abs-{}", std::process::id()));
    let p = target.display().to_string();
    refused(
        &attack(
            |t| {
                t.file(&p, b"x");
            },
            100,
        ),
        "absolute path",
    );
    assert!(!target.exists());
}

#[test]
fn outside_the_package_prefix() {
    refused(
        &attack(
            |t| {
                t.file("other-1.0.0/x.apsi", b"x");
            },
            100,
        ),
        "outside the package folder",
    );
}

#[test]
fn symlink_escape_then_write_through_it() {
    // `x -> ..` stays inside only lexically at one level; `p-1.0.0/x/../..` leaves.
    let e = attack(
        |t| {
            t.entry("p-1.0.0/x", EntryType::Symlink, 0o777, "..", b"");
            t.file("p-1.0.0/x/y", b"x");
        },
        100,
    );
    refused(&e, "leaves the package");
    // A link that stays inside must still not be written through.
    let e = attack(
        |t| {
            t.entry("p-1.0.0/d", EntryType::Directory, 0o755, "", b"");
            t.entry("p-1.0.0/x", EntryType::Symlink, 0o777, "d", b"");
            t.file("p-1.0.0/x/y", b"x");
        },
        100,
    );
    refused(&e, "goes through a symlink");
}

#[test]
fn absolute_symlink_target() {
    refused(
        &attack(
            |t| {
                t.entry("p-1.0.0/l", EntryType::Symlink, 0o777, "/etc/passwd", b"");
            },
            100,
        ),
        "absolute symlink",
    );
}

#[test]
fn symlink_then_directory_chmod() {
    let e = attack(
        |t| {
            t.entry("p-1.0.0/d", EntryType::Directory, 0o755, "", b"");
            t.entry("p-1.0.0/l", EntryType::Symlink, 0o777, "d", b"");
            t.entry("p-1.0.0/l", EntryType::Directory, 0o777, "", b"");
        },
        100,
    );
    refused(&e, "appears twice");
}

#[test]
fn hardlink() {
    refused(
        &attack(
            |t| {
                t.entry("p-1.0.0/h", EntryType::Link, 0o644, "p-1.0.0/apsi-package.toml", b"");
            },
            100,
        ),
        "hard links",
    );
}

#[test]
fn device_and_fifo() {
    refused(
        &attack(
            |t| {
                t.entry("p-1.0.0/dev", EntryType::Char, 0o644, "", b"");
            },
            100,
        ),
        "device",
    );
    refused(
        &attack(
            |t| {
                t.entry("p-1.0.0/blk", EntryType::Block, 0o644, "", b"");
            },
            100,
        ),
        "device",
    );
    refused(
        &attack(
            |t| {
                t.entry("p-1.0.0/fifo", EntryType::Fifo, 0o644, "", b"");
            },
            100,
        ),
        "FIFO",
    );
}

#[test]
fn setuid_bits() {
    refused(
        &attack(
            |t| {
                t.entry("p-1.0.0/su", EntryType::Regular, 0o4755, "", b"x");
            },
            100,
        ),
        "set-user-id",
    );
    refused(
        &attack(
            |t| {
                t.entry("p-1.0.0/sg", EntryType::Regular, 0o2755, "", b"x");
            },
            100,
        ),
        "set-user-id",
    );
}

#[test]
fn decompression_bomb() {
    // 8 MiB of zeros compresses to a few KiB; the index declares 1 KiB unpacked.
    let big = vec![0u8; 8 << 20];
    refused(
        &attack(
            |t| {
                t.file("p-1.0.0/bomb", &big);
            },
            1024,
        ),
        "decompression bomb",
    );
}

#[test]
fn too_many_entries() {
    let reg = Reg::new();
    let mut t = RawTar::new();
    t.manifest("p", "1.0.0");
    for i in 0..50 {
        t.file(&format!("p-1.0.0/f{i}"), b"");
    }
    reg.publish_raw("p", "1.0.0", &t.gz(), 1000);
    reg.sign();
    let env = Env::new();
    let mut o = opts();
    o.limits.max_entries = 20;
    let e = env
        .ctx(&reg.url(), reg.root_bytes(), o)
        .install(&["p".into()], None)
        .unwrap_err();
    refused(&e, "more than 20 entries");
    env.assert_clean("p");
}

#[test]
fn marker_inside_the_archive() {
    refused(
        &attack(
            |t| {
                t.file("p-1.0.0/.apsi-complete", b"fake");
            },
            100,
        ),
        "completion marker",
    );
}

#[test]
fn case_colliding_names() {
    refused(
        &attack(
            |t| {
                t.file("p-1.0.0/Readme", b"a");
                t.file("p-1.0.0/README", b"b");
            },
            100,
        ),
        "letter case",
    );
}

#[test]
fn soname_symlink_is_allowed() {
    let reg = Reg::new();
    let mut t = RawTar::new();
    t.manifest("p", "1.0.0");
    t.entry("p-1.0.0/lib", EntryType::Directory, 0o755, "", b"");
    t.file("p-1.0.0/lib/libx.so.12", b"\x7fELF");
    t.entry("p-1.0.0/lib/libx.so", EntryType::Symlink, 0o777, "libx.so.12", b"");
    reg.publish_raw("p", "1.0.0", &t.gz(), 1000);
    reg.sign();
    let env = Env::new();
    env.ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&["p".into()], None)
        .unwrap();
    let link = env.home.packages().join("p").join("lib").join("libx.so");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        std::path::PathBuf::from("libx.so.12")
    );
    assert_eq!(std::fs::read(&link).unwrap(), b"\x7fELF");
    assert!(std::fs::read_dir(env.outside()).unwrap().next().is_none());
}
