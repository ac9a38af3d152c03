//! The Python worker process: finding the interpreter, starting it with the
//! embedded `worker.py`, and one request/reply exchange at a time.
//!
//! The worker reads requests and writes replies on two pipes made here,
//! whose descriptor numbers it gets as its arguments, and inherits stdin,
//! stdout and stderr, so what Python code prints goes straight where Apsi's
//! output goes. It exits when its request pipe reaches end-of-file, which
//! happens when this process ends, however it ends.

use crate::frame::{read_frame, write_frame};
use crate::wire::Reader;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, ErrorObj, Exc, Value};
use std::fs::File;
use std::io::{self, BufReader};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The worker's source, passed with `-c` (written to no file).
pub const SOURCE: &str = include_str!("worker.py");

/// The protocol version `worker.py` announces.
pub const PROTOCOL: i64 = 1;

/// Which interpreter to start: `$APSI_PYTHON` when set and not empty, else
/// `python3` on `PATH`.
pub fn interpreter() -> (String, bool) {
    match std::env::var("APSI_PYTHON") {
        Ok(p) if !p.trim().is_empty() => (p, true),
        _ => ("python3".to_string(), false),
    }
}

/// A running worker.
pub struct Worker {
    child: Child,
    /// `None` once closed (in `drop`).
    requests: Option<File>,
    replies: BufReader<File>,
    /// The interpreter as the worker reports it (`sys.executable`).
    pub executable: String,
    /// Python's version (`3.11.7`).
    pub version: String,
}

/// The error for an interpreter that is not there: what was missing, and
/// how to get it.
#[derive(Debug, Clone)]
pub struct Missing {
    pub message: String,
    pub hint: String,
}

/// Why an exchange failed: the worker is gone (it crashed, was killed, or
/// closed its pipes), with what is known about how it ended.
#[derive(Debug)]
pub struct Lost(pub String);

/// A pipe whose two ends are close-on-exec and numbered 10 or above (out of
/// the way of the standard descriptors).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [libc::c_int; 2] = [-1, -1];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let high = |fd: RawFd| -> io::Result<OwnedFd> {
        // SAFETY: `fd` is open and owned here; the duplicate is owned by the result.
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
        // SAFETY: `fd` came from pipe2 above and nothing else owns it.
        unsafe { libc::close(fd) };
        if dup < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `dup` is a fresh descriptor owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(dup) })
    };
    let r = high(fds[0]);
    let w = high(fds[1]);
    Ok((r?, w?))
}

/// How long a new worker may take to say hello (a cold start that imports
/// from a slow disk takes seconds; a program that is not Python never answers).
const HELLO_TIMEOUT_MS: i32 = 60_000;

/// Whether `f` has something to read (or was closed) within `ms` milliseconds.
fn readable_within(f: &File, ms: i32) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: f.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let deadline = Instant::now() + Duration::from_millis(ms as u64);
    loop {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .as_millis()
            .min(i32::MAX as u128) as i32;
        // SAFETY: `p` is one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut p, 1, left) };
        if n > 0 {
            return true;
        }
        if n == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            // Timed out, or poll failed: let the read below report what it finds.
            return n != 0;
        }
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        // A wrapper script (pyenv's shims) reports a signal as 128 + N.
        (Some(c), _) if (129..=128 + 64).contains(&c) => {
            format!("exited with status {c} (killed by signal {})", c - 128)
        }
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => "ended".to_string(),
    }
}

impl Worker {
    /// Starts the worker on [`interpreter`] and reads its hello.
    pub fn start() -> Result<Worker, Exc> {
        let (program, from_env) = interpreter();
        let what = if from_env {
            format!("APSI_PYTHON={program} was not found")
        } else {
            "python3 is not on PATH".to_string()
        };
        let missing = Missing {
            message: format!("`use python` needs a Python 3 interpreter, and none was found: {what}"),
            hint: "install Python 3 (for example: apt-get install python3) or set APSI_PYTHON to an interpreter's path"
                .into(),
        };
        Worker::start_with(program, &missing)
    }

    /// Starts the worker on the interpreter `program` (a backend's own
    /// virtual environment) and reads its hello; `missing` is the error
    /// when there is no such program.
    pub fn start_with(program: String, missing: &Missing) -> Result<Worker, Exc> {
        let started = |e: io::Error| -> Exc {
            if e.kind() == io::ErrorKind::NotFound {
                ErrorObj::with_hint(
                    ErrorKind::ModuleNotFoundError,
                    missing.message.clone(),
                    missing.hint.clone(),
                )
            } else {
                err(
                    ErrorKind::PythonError,
                    format!("cannot start the Python worker with '{program}': {e}"),
                )
            }
        };
        let (req_r, req_w) = pipe().map_err(started)?;
        let (rep_r, rep_w) = pipe().map_err(started)?;
        let (child_in, child_out) = {
            use std::os::fd::AsRawFd;
            (req_r.as_raw_fd(), rep_w.as_raw_fd())
        };
        let mut cmd = Command::new(&program);
        cmd.arg("-c")
            .arg(SOURCE)
            .arg(child_in.to_string())
            .arg(child_out.to_string());
        cmd.stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit());
        // SAFETY: the closure only calls fcntl, which is async-signal-safe, on
        // descriptors that stay open until after spawn returns. It clears
        // close-on-exec on the child's two ends and touches no other
        // descriptor (spawn's own error pipe among them).
        unsafe {
            cmd.pre_exec(move || {
                for fd in [child_in, child_out] {
                    if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(started)?;
        drop(req_r);
        drop(rep_w);
        let mut w = Worker {
            child,
            requests: Some(File::from(req_w)),
            replies: BufReader::new(File::from(rep_r)),
            executable: program.clone(),
            version: String::new(),
        };
        if !readable_within(w.replies.get_ref(), HELLO_TIMEOUT_MS) {
            let _ = w.child.kill();
            let how = w.reap();
            return Err(err(
                ErrorKind::PythonError,
                format!(
                    "the Python worker did not start: '{program}' did not answer within {} s and was stopped (it {how})",
                    HELLO_TIMEOUT_MS / 1000
                ),
            ));
        }
        let hello = match read_frame(&mut w.replies) {
            Ok(Some(h)) => h,
            Ok(None) | Err(_) => {
                let how = w.reap();
                return Err(ErrorObj::with_hint(
                    ErrorKind::PythonError,
                    format!("the Python worker did not start: '{program}' {how}"),
                    "its own message, if any, is printed above; `use python` needs Python 3.6 or newer (set APSI_PYTHON to choose the interpreter)",
                ));
            }
        };
        w.check_hello(&hello, &program)?;
        Ok(w)
    }

    fn check_hello(&mut self, hello: &[u8], program: &str) -> Result<(), Exc> {
        let mut r = Reader::new(hello);
        let fields = match (r.u8(), r.value()) {
            (Ok(b'r'), Ok(Value::Tuple(t))) => t.0.to_vec(),
            _ => Vec::new(),
        };
        match fields.as_slice() {
            [Value::Str(name), Value::Int(PROTOCOL), Value::Str(version), Value::Str(exe)] if name.as_str() == "apsi-python-worker" => {
                self.version = version.as_str().to_string();
                self.executable = exe.as_str().to_string();
                Ok(())
            }
            _ => Err(err(
                ErrorKind::PythonError,
                format!("'{program}' did not answer as an Apsi Python worker of protocol {PROTOCOL} (a different apsi-python version?)"),
            )),
        }
    }

    /// One request and its reply.
    pub fn exchange(&mut self, request: &[u8]) -> Result<Vec<u8>, Lost> {
        let sent = match self.requests.as_mut() {
            Some(f) => write_frame(f, request),
            None => Err(io::Error::new(io::ErrorKind::BrokenPipe, "closed")),
        };
        let reply = match sent {
            Ok(()) => read_frame(&mut self.replies),
            Err(e) => Err(e),
        };
        match reply {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(Lost(self.reap())),
            Err(e) if e.kind() == io::ErrorKind::OutOfMemory => {
                let how = self.reap();
                Err(Lost(format!(
                    "sent a reply too large for this process ({e}) and was stopped; it {how}"
                )))
            }
            Err(_) => Err(Lost(self.reap())),
        }
    }

    /// Waits for a worker that closed its pipe (killing it if it is still
    /// running after a moment) and says how it ended.
    fn reap(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => return describe(s),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
                Ok(None) => {
                    let _ = self.child.kill();
                    return match self.child.wait() {
                        Ok(_) => "closed its pipe and was stopped".to_string(),
                        Err(e) => format!("closed its pipe and could not be waited for: {e}"),
                    };
                }
                Err(e) => return format!("could not be waited for: {e}"),
            }
        }
    }

    /// The worker's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the request pipe ends the worker's loop; reap it when it is
        // quick, else leave it to finish the call it is in and exit on its own.
        drop(self.requests.take());
        let deadline = Instant::now() + Duration::from_millis(200);
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                _ => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_read_plainly() {
        // Raw wait statuses: exit code in the high byte, signal in the low bits.
        assert_eq!(describe(ExitStatus::from_raw(3 << 8)), "exited with status 3");
        assert_eq!(describe(ExitStatus::from_raw(9)), "was killed by signal 9");
        assert_eq!(
            describe(ExitStatus::from_raw(137 << 8)),
            "exited with status 137 (killed by signal 9)"
        );
    }

    #[test]
    fn the_embedded_worker_speaks_this_protocol() {
        assert!(SOURCE.contains(&format!("PROTOCOL = {PROTOCOL}\n")));
        assert!(SOURCE.contains("MAX_DEPTH = 200\n") && crate::wire::MAX_DEPTH == 200);
    }
}
