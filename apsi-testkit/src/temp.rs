//! Program text written to a file of its own for one run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Tells apart the directories of one process's runs, which may be on
/// several test threads at once.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// `<temp>/apsi-testkit-<pid>-<n>/<name>.apsi`; the directory is removed
/// when this is dropped.
pub(crate) struct TempProgram {
    dir: PathBuf,
    path: PathBuf,
}

impl TempProgram {
    /// Writes `src` to a fresh directory. Panics, naming the path, when the
    /// file cannot be written (a test cannot go on without it).
    pub(crate) fn write(name: &str, src: &str) -> TempProgram {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("apsi-testkit-{}-{n}", std::process::id()));
        let path = dir.join(format!("{name}.apsi"));
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, src)) {
            panic!("cannot write the program {}: {e}", path.display());
        }
        TempProgram { dir, path }
    }

    /// The program file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempProgram {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_program_has_its_own_directory_removed_on_drop() {
        let a = TempProgram::write("main", "print(1)\n");
        let b = TempProgram::write("main", "print(2)\n");
        assert_ne!(a.path(), b.path());
        assert_eq!(a.path().file_name().and_then(|n| n.to_str()), Some("main.apsi"));
        assert_eq!(std::fs::read_to_string(a.path()).unwrap(), "print(1)\n");
        assert_eq!(std::fs::read_to_string(b.path()).unwrap(), "print(2)\n");
        let dir = a.path().parent().unwrap().to_path_buf();
        drop(a);
        assert!(!dir.exists(), "{} is left behind", dir.display());
        assert!(b.path().exists());
    }
}
