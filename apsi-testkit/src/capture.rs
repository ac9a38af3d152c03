//! A writer that collects what a program prints.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};

/// Collects everything written to it; clones share one buffer, so a clone
/// can go to the runtime as its output while the test keeps the other.
#[derive(Clone, Debug, Default)]
pub struct Capture(Arc<Mutex<Vec<u8>>>);

impl Capture {
    /// Everything written so far, as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }

    /// The buffer, also after a writer panicked while holding it: the bytes
    /// written before are still the output.
    fn bytes(&self) -> MutexGuard<'_, Vec<u8>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_buffer() {
        let c = Capture::default();
        let mut w = c.clone();
        write!(w, "a{}", 1).unwrap();
        w.write_all(b"\n\xffz").unwrap();
        assert_eq!(c.text(), "a1\n\u{fffd}z");
    }

    #[test]
    fn output_written_before_a_panic_is_kept() {
        let c = Capture::default();
        let mut w = c.clone();
        let poisoner = c.clone();
        w.write_all(b"kept").unwrap();
        let _ = std::thread::spawn(move || {
            let _guard = poisoner.0.lock();
            panic!("poison the buffer");
        })
        .join();
        assert!(c.0.is_poisoned());
        w.write_all(b" and more").unwrap();
        assert_eq!(c.text(), "kept and more");
    }
}
