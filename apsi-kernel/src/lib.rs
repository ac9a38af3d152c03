//! A Jupyter kernel server: the messaging protocol over ZeroMQ
//! (`jupyter-zmq-client`, pure-Rust ZeroMQ, HMAC-SHA256 signing and
//! checking with the connection file's key), and the kernelspec that
//! `apsi kernel install` writes.
//!
//! This crate knows nothing of the interpreter: whoever runs cells
//! implements [`Engine`] (apsi-cli does, over its REPL session), and the
//! kernel hands it each `execute_request` on the thread that called
//! [`Kernel::run`]. The sockets are served by a small tokio runtime on other
//! threads, so heartbeat, control (interrupt, shutdown) and `kernel_info`
//! keep answering while a cell runs.

/// This crate's version (`apsi --version` lists it).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

mod server;
mod spec;
mod text;

pub use server::{Io, Kernel, KernelConfig};
pub use spec::{install, kernel_dir, user_data_dir, LOGO_32, LOGO_64};
pub use text::{strip_ansi, StreamWriter};

/// What a value shows as: plain text always, HTML and a PNG image when it
/// has them (`text/plain`, `text/html`, `image/png`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bundle {
    pub plain: String,
    pub html: Option<String>,
    pub png: Option<Vec<u8>>,
}

/// An error as a notebook shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorReport {
    /// The error kind's name (`ValueError`).
    pub ename: String,
    /// Its message.
    pub evalue: String,
    /// The diagnostic text as the command line prints it, one line each,
    /// without colour codes.
    pub traceback: Vec<String>,
}

/// How a cell ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// It ran; what its last expression shows as (none: nothing).
    Ok(Option<Bundle>),
    /// It failed.
    Error(ErrorReport),
    /// The code called `exit(code)`: the kernel stops after replying.
    Exit(i32),
}

/// Whether a cell's code is complete (`is_complete_request`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completeness {
    Complete,
    Incomplete,
}

/// Runs cells. Called on the thread that called [`Kernel::run`], one cell
/// at a time; what the cell prints and displays goes out through `io`.
pub trait Engine {
    fn execute(&mut self, code: &str, io: &Io) -> Reply;
}
