//! Running a helper program (`python3`, `nvidia-smi`) with a time limit: the
//! child is killed when it runs past it. Its output is read on other threads
//! so a chatty child cannot block on a full pipe.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub enum Outcome {
    /// It ran: exit status (None when killed by a signal), stdout, stderr.
    Done {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    /// It was not found or could not be started.
    NotStarted(String),
    /// It ran past the limit and was killed.
    TimedOut,
}

/// Runs `program args…` with stdin closed, waiting at most `limit`.
pub fn run(program: &str, args: &[&str], limit: Duration) -> Outcome {
    let mut child = match Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Outcome::NotStarted(e.to_string()),
    };
    let out = child.stdout.take().map(reader);
    let err = child.stderr.take().map(reader);
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() >= limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Outcome::TimedOut;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => break None,
        }
    };
    let stdout = out.and_then(|h| h.join().ok()).unwrap_or_default();
    let stderr = err.and_then(|h| h.join().ok()).unwrap_or_default();
    Outcome::Done {
        code: status.and_then(|s| s.code()),
        stdout,
        stderr,
    }
}

fn reader(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.by_ref().take(1 << 20).read_to_end(&mut buf);
        // Drain the rest so the child never blocks on a full pipe.
        let _ = std::io::copy(&mut r, &mut std::io::sink());
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Whether `name` is an executable file on `PATH`.
pub fn on_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p)
            .any(|d| std::fs::metadata(d.join(name)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_and_status_come_back() {
        match run("sh", &["-c", "echo out; echo err >&2; exit 3"], Duration::from_secs(20)) {
            Outcome::Done { code, stdout, stderr } => {
                assert_eq!(code, Some(3));
                assert_eq!(stdout, "out\n");
                assert_eq!(stderr, "err\n");
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn a_child_past_its_limit_is_killed() {
        let t0 = Instant::now();
        assert!(matches!(
            run("sleep", &["600"], Duration::from_millis(100)),
            Outcome::TimedOut
        ));
        assert!(t0.elapsed() < Duration::from_secs(300));
    }

    #[test]
    fn a_missing_program_is_not_started() {
        assert!(matches!(
            run("apsi-no-such-program-xyz", &[], Duration::from_secs(5)),
            Outcome::NotStarted(_)
        ));
        assert!(!on_path("apsi-no-such-program-xyz"));
        assert!(on_path("sh"));
    }
}
