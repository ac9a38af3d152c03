//! The kernelspec: `kernel.json` and the logos, laid out as `jupyter
//! kernelspec install` lays them out (`DATA_DIR/kernels/apsi/`).

use std::path::{Path, PathBuf};

/// The logos Jupyter shows for the kernel.
pub const LOGO_32: &[u8] = include_bytes!("../logo/logo-32x32.png");
pub const LOGO_64: &[u8] = include_bytes!("../logo/logo-64x64.png");

/// `ROOT/kernels/apsi`, where `ROOT` is a Jupyter data directory
/// (`PREFIX/share/jupyter` or the user's).
pub fn kernel_dir(data_root: &Path) -> PathBuf {
    data_root.join("kernels").join("apsi")
}

/// The user's Jupyter data directory, as `jupyter --data-dir` finds it:
/// `$JUPYTER_DATA_DIR`, else `~/Library/Jupyter` on macOS,
/// `%APPDATA%\jupyter` on Windows, `$XDG_DATA_HOME/jupyter` or
/// `~/.local/share/jupyter` elsewhere.
pub fn user_data_dir() -> Result<PathBuf, String> {
    let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = var("JUPYTER_DATA_DIR") {
        return Ok(d);
    }
    if cfg!(windows) {
        return var("APPDATA")
            .map(|a| a.join("jupyter"))
            .ok_or_else(|| "APPDATA is not set".to_string());
    }
    let home = var("HOME").ok_or_else(|| "HOME is not set; name a directory with --prefix DIR".to_string())?;
    if cfg!(target_os = "macos") {
        return Ok(home.join("Library").join("Jupyter"));
    }
    Ok(var("XDG_DATA_HOME")
        .unwrap_or_else(|| home.join(".local").join("share"))
        .join("jupyter"))
}

/// The text of `kernel.json` for the executable `exe`.
pub fn kernel_json(exe: &Path, version: &str) -> String {
    let spec = serde_json::json!({
        "argv": [exe.to_string_lossy(), "kernel", "-f", "{connection_file}"],
        "display_name": "Apsi",
        "language": "apsi",
        "interrupt_mode": "signal",
        "metadata": { "apsi_version": version },
    });
    let mut text = serde_json::to_string_pretty(&spec).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes the kernelspec for `exe` into `kernel_dir(data_root)` (replacing
/// one that is there); returns that directory.
pub fn install(data_root: &Path, exe: &Path, version: &str) -> Result<PathBuf, String> {
    let dir = kernel_dir(data_root);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let json = kernel_json(exe, version);
    let files: [(&str, &[u8]); 3] = [
        ("kernel.json", json.as_bytes()),
        ("logo-32x32.png", LOGO_32),
        ("logo-64x64.png", LOGO_64),
    ];
    for (name, bytes) in files {
        let p = dir.join(name);
        std::fs::write(&p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_lays_out_the_kernelspec() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("share").join("jupyter");
        let dir = install(&root, Path::new("/opt/apsi/bin/apsi"), "9.9.9").unwrap();
        assert_eq!(dir, root.join("kernels").join("apsi"));
        let spec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("kernel.json")).unwrap()).unwrap();
        assert_eq!(
            spec["argv"],
            serde_json::json!(["/opt/apsi/bin/apsi", "kernel", "-f", "{connection_file}"])
        );
        assert_eq!(spec["language"], "apsi");
        assert_eq!(spec["interrupt_mode"], "signal");
        for (name, logo) in [("logo-32x32.png", LOGO_32), ("logo-64x64.png", LOGO_64)] {
            let b = std::fs::read(dir.join(name)).unwrap();
            assert_eq!(b, logo);
            assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n");
        }
    }

    #[test]
    fn logos_have_their_sizes() {
        // IHDR: width and height, big-endian, at bytes 16..24.
        for (logo, n) in [(LOGO_32, 32u32), (LOGO_64, 64)] {
            assert_eq!(u32::from_be_bytes(logo[16..20].try_into().unwrap()), n);
            assert_eq!(u32::from_be_bytes(logo[20..24].try_into().unwrap()), n);
        }
    }
}
