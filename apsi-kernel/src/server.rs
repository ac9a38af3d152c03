//! The sockets and the message flow.
//!
//! Threads: a tokio runtime (two workers) serves heartbeat, control, shell
//! and iopub; the thread that calls [`Kernel::run`] runs the cells. Shell
//! forwards each `execute_request` to that thread through a channel and
//! answers everything else itself; everything sent on iopub goes through
//! one writer task, so a cell's messages keep their order (busy,
//! `execute_input`, streams and displays, result or error, idle).

use crate::{Bundle, Completeness, Engine, ErrorReport, Reply};
use base64::Engine as _;
use jupyter_protocol::{
    CodeMirrorMode, CommInfoReply, CompleteReply, ConnectionInfo, DisplayData, ErrorOutput, ExecuteInput, ExecuteReply,
    ExecuteResult, ExecutionCount, HistoryReply, InspectReply, InterruptReply, IsCompleteReply, IsCompleteReplyStatus,
    JupyterMessage, JupyterMessageContent, KernelInfoReply, LanguageInfo, Media, MediaType, ReplyError, ReplyStatus,
    ShutdownReply, Status, StreamContent,
};
use jupyter_zmq_client::RuntimeError;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

/// What the kernel says about itself and the hooks it calls.
pub struct KernelConfig {
    /// The product's version (`kernel_info_reply`).
    pub version: String,
    /// The banner a console shows.
    pub banner: String,
    /// Stops the running cell (an `interrupt_request`, a shutdown).
    pub interrupt: Arc<dyn Fn() + Send + Sync>,
    /// Whether code is complete (`is_complete_request`; answered while a
    /// cell runs, so it cannot use the engine).
    pub is_complete: Arc<dyn Fn(&str) -> Completeness + Send + Sync>,
}

/// Where a running cell's output goes: `stream` and `display_data`
/// messages on iopub, children of the request being run. Cheap to clone;
/// usable from any thread.
#[derive(Clone)]
pub struct Io {
    iopub: UnboundedSender<JupyterMessage>,
    parent: Arc<Mutex<Option<JupyterMessage>>>,
}

impl Io {
    /// An `Io` whose messages go into `tx` (for tests of an [`Engine`]).
    pub fn detached(tx: UnboundedSender<JupyterMessage>, parent: Option<JupyterMessage>) -> Io {
        Io {
            iopub: tx,
            parent: Arc::new(Mutex::new(parent)),
        }
    }

    fn send(&self, content: JupyterMessageContent) {
        let parent = self.parent.lock().map(|p| p.clone()).unwrap_or(None);
        // Output with no request running (a task printing late) is dropped:
        // a frontend could not place it.
        if let Some(parent) = parent {
            let _ = self.iopub.send(JupyterMessage::new(content, Some(&parent)));
        }
    }

    /// Program output (`print`): a `stream` message to stdout.
    pub fn stdout(&self, text: String) {
        if !text.is_empty() {
            self.send(StreamContent::stdout(&text).into());
        }
    }

    /// Text to the cell's stderr stream.
    pub fn stderr(&self, text: String) {
        if !text.is_empty() {
            self.send(StreamContent::stderr(&text).into());
        }
    }

    /// `display(x)`: a `display_data` message.
    pub fn display(&self, b: &Bundle) {
        self.send(DisplayData::new(media(b)).into());
    }

    fn set_parent(&self, p: Option<JupyterMessage>) {
        if let Ok(mut g) = self.parent.lock() {
            *g = p;
        }
    }
}

/// The `data` of a `display_data` or `execute_result`: `text/plain`, and
/// `text/html` and `image/png` (base64) when the bundle has them.
pub(crate) fn media(b: &Bundle) -> Media {
    let mut content = vec![MediaType::Plain(b.plain.clone())];
    if let Some(h) = &b.html {
        content.push(MediaType::Html(h.clone()));
    }
    if let Some(p) = &b.png {
        content.push(MediaType::Png(base64::engine::general_purpose::STANDARD.encode(p)));
    }
    Media::new(content)
}

/// The `error` output and the error part of the `execute_reply`.
fn error_parts(e: &ErrorReport) -> (ErrorOutput, ReplyError) {
    let traceback: Vec<String> = e.traceback.iter().map(|l| crate::strip_ansi(l)).collect();
    (
        ErrorOutput {
            ename: e.ename.clone(),
            evalue: e.evalue.clone(),
            traceback: traceback.clone(),
        },
        ReplyError {
            ename: e.ename.clone(),
            evalue: e.evalue.clone(),
            traceback,
        },
    )
}

enum Job {
    Execute(Box<JupyterMessage>),
    Shutdown,
}

/// A bound kernel: its sockets are served; [`Kernel::run`] runs the cells.
pub struct Kernel {
    rt: tokio::runtime::Runtime,
    io: Io,
    shell_out: UnboundedSender<JupyterMessage>,
    jobs: mpsc::Receiver<Job>,
    config: Arc<KernelConfig>,
}

fn kernel_info(config: &KernelConfig) -> KernelInfoReply {
    KernelInfoReply {
        status: ReplyStatus::Ok,
        protocol_version: "5.3".to_string(),
        implementation: "apsi".to_string(),
        implementation_version: config.version.clone(),
        language_info: LanguageInfo {
            name: "apsi".to_string(),
            version: config.version.clone(),
            mimetype: Some("text/x-apsi".to_string()),
            file_extension: Some(".apsi".to_string()),
            pygments_lexer: Some("python".to_string()),
            codemirror_mode: Some(CodeMirrorMode::Simple("python".to_string())),
            nbconvert_exporter: None,
        },
        banner: config.banner.clone(),
        help_links: vec![],
        debugger: false,
        error: None,
    }
}

/// Reads and checks a connection file.
pub(crate) fn read_connection_file(path: &Path) -> Result<ConnectionInfo, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let info: ConnectionInfo =
        serde_json::from_str(&text).map_err(|e| format!("{} is not a Jupyter connection file: {e}", path.display()))?;
    if !info.key.is_empty() && info.signature_scheme != "hmac-sha256" {
        return Err(format!(
            "{}: signature scheme '{}' is not supported (only hmac-sha256)",
            path.display(),
            info.signature_scheme
        ));
    }
    Ok(info)
}

/// A socket that closed or failed ends its loop; a message that is bad
/// (signature, framing, JSON) is said on stderr and skipped.
fn fatal(e: &RuntimeError) -> bool {
    matches!(e, RuntimeError::ZmqError(_) | RuntimeError::IoError(_))
}

/// The next message read from a socket, inside its loop: a socket that
/// failed ends the loop (`break`), a bad message is said on stderr and
/// skipped (`continue`).
macro_rules! next_message {
    ($socket:expr, $channel:literal) => {
        match $socket.read().await {
            Ok(m) => m,
            Err(e) if fatal(&e) => {
                eprintln!("apsi kernel: {} socket: {e}", $channel);
                break;
            }
            Err(e) => {
                eprintln!("apsi kernel: ignored a bad message on {}: {}", $channel, describe(&e));
                continue;
            }
        }
    };
}

/// What was wrong with a message that was skipped.
fn describe(e: &RuntimeError) -> String {
    match e {
        RuntimeError::VerifyError(_) => "its signature does not match the connection file's key".to_string(),
        other => other.to_string(),
    }
}

impl Kernel {
    /// Reads the connection file and binds the five sockets.
    pub fn bind(connection_file: &Path, config: KernelConfig) -> Result<Kernel, String> {
        let info = read_connection_file(connection_file)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("apsi-kernel-io")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the kernel's I/O threads: {e}"))?;
        let session = uuid::Uuid::new_v4().to_string();
        let bound = rt.block_on(async {
            use jupyter_zmq_client as z;
            let hb = z::create_kernel_heartbeat_connection(&info).await?;
            let shell = z::create_kernel_shell_connection(&info, &session).await?;
            let control = z::create_kernel_control_connection(&info, &session).await?;
            let stdin = z::create_kernel_stdin_connection(&info, &session).await?;
            let iopub = z::create_kernel_iopub_connection(&info, &session).await?;
            Ok::<_, RuntimeError>((hb, shell, control, stdin, iopub))
        });
        let (mut hb, shell, mut control, stdin, mut iopub) =
            bound.map_err(|e| format!("cannot bind the kernel's sockets ({}): {e}", info.ip))?;
        let config = Arc::new(config);
        let (iopub_tx, mut iopub_rx) = unbounded_channel::<JupyterMessage>();
        let (shell_tx, mut shell_rx) = unbounded_channel::<JupyterMessage>();
        let (jobs_tx, jobs) = mpsc::channel::<Job>();

        rt.spawn(async move { while hb.single_heartbeat().await.is_ok() {} });
        rt.spawn(async move {
            while let Some(m) = iopub_rx.recv().await {
                if let Err(e) = iopub.send(m).await {
                    eprintln!("apsi kernel: cannot send on iopub: {e}");
                }
            }
        });
        let (mut shell_w, mut shell_r) = shell.split();
        rt.spawn(async move {
            while let Some(m) = shell_rx.recv().await {
                if let Err(e) = shell_w.send(m).await {
                    eprintln!("apsi kernel: cannot send on shell: {e}");
                }
            }
        });
        // The stdin channel is bound (clients connect to it) but not used:
        // `input()` in a cell reads the kernel's own standard input.
        rt.spawn(async move {
            let _keep = stdin;
            std::future::pending::<()>().await
        });

        let (cfg, iopub_c, shell_c, jobs_c) = (config.clone(), iopub_tx.clone(), shell_tx.clone(), jobs_tx.clone());
        rt.spawn(async move {
            loop {
                let msg = next_message!(shell_r, "shell");
                if let JupyterMessageContent::ExecuteRequest(_) = &msg.content {
                    if jobs_c.send(Job::Execute(Box::new(msg))).is_err() {
                        break;
                    }
                    continue;
                }
                if let JupyterMessageContent::ShutdownRequest(req) = &msg.content {
                    let reply = ShutdownReply {
                        restart: req.restart,
                        status: ReplyStatus::Ok,
                        error: None,
                    };
                    let _ = shell_c.send(reply.as_child_of(&msg));
                    (cfg.interrupt)();
                    let _ = jobs_c.send(Job::Shutdown);
                    continue;
                }
                let _ = iopub_c.send(Status::busy().as_child_of(&msg));
                if let Some(reply) = answer(&cfg, &msg) {
                    let _ = shell_c.send(reply);
                }
                let _ = iopub_c.send(Status::idle().as_child_of(&msg));
            }
        });

        let (cfg, jobs_c) = (config.clone(), jobs_tx);
        rt.spawn(async move {
            loop {
                let msg = next_message!(control, "control");
                let reply = match &msg.content {
                    JupyterMessageContent::InterruptRequest(_) => {
                        (cfg.interrupt)();
                        Some(InterruptReply::new().as_child_of(&msg))
                    }
                    JupyterMessageContent::ShutdownRequest(req) => {
                        let reply = ShutdownReply {
                            restart: req.restart,
                            status: ReplyStatus::Ok,
                            error: None,
                        }
                        .as_child_of(&msg);
                        if let Err(e) = control.send(reply).await {
                            eprintln!("apsi kernel: cannot send on control: {e}");
                        }
                        (cfg.interrupt)();
                        let _ = jobs_c.send(Job::Shutdown);
                        continue;
                    }
                    _ => answer(&cfg, &msg),
                };
                if let Some(reply) = reply {
                    if let Err(e) = control.send(reply).await {
                        eprintln!("apsi kernel: cannot send on control: {e}");
                    }
                }
            }
        });

        Ok(Kernel {
            rt,
            io: Io {
                iopub: iopub_tx,
                parent: Arc::new(Mutex::new(None)),
            },
            shell_out: shell_tx,
            jobs,
            config,
        })
    }

    /// Where cells' output goes (to build the engine's output with).
    pub fn io(&self) -> Io {
        self.io.clone()
    }

    /// Runs cells until a shutdown request (`Ok(None)`) or `exit(code)` in
    /// a cell (`Ok(Some(code))`).
    pub fn run(self, engine: &mut dyn Engine) -> Option<i32> {
        let _ = &self.config;
        let mut count = 0usize;
        let mut exit = None;
        while let Ok(job) = self.jobs.recv() {
            let msg = match job {
                Job::Execute(m) => *m,
                Job::Shutdown => break,
            };
            let JupyterMessageContent::ExecuteRequest(req) = &msg.content else {
                continue;
            };
            let iopub = &self.io.iopub;
            let _ = iopub.send(Status::busy().as_child_of(&msg));
            if !req.silent {
                count += 1;
            }
            let n = ExecutionCount::new(count.max(1));
            let _ = iopub.send(
                ExecuteInput {
                    code: req.code.clone(),
                    execution_count: n,
                }
                .as_child_of(&msg),
            );
            self.io.set_parent(Some(msg.clone()));
            let reply = engine.execute(&req.code, &self.io);
            self.io.set_parent(None);
            let (status, error) = match &reply {
                Reply::Ok(Some(b)) if !req.silent => {
                    let result = ExecuteResult {
                        execution_count: n,
                        data: media(b),
                        metadata: Default::default(),
                        transient: None,
                    };
                    let _ = iopub.send(result.as_child_of(&msg));
                    (ReplyStatus::Ok, None)
                }
                Reply::Ok(_) => (ReplyStatus::Ok, None),
                Reply::Error(e) => {
                    let (out, rep) = error_parts(e);
                    let _ = iopub.send(out.as_child_of(&msg));
                    (ReplyStatus::Error, Some(Box::new(rep)))
                }
                Reply::Exit(code) => {
                    exit = Some(*code);
                    (ReplyStatus::Ok, None)
                }
            };
            let reply_msg = ExecuteReply {
                status,
                execution_count: n,
                payload: vec![],
                user_expressions: None,
                error,
            }
            .as_child_of(&msg);
            let _ = self.shell_out.send(reply_msg);
            let _ = iopub.send(Status::idle().as_child_of(&msg));
            if exit.is_some() {
                break;
            }
        }
        // Let the writers send what is queued (the last replies) before the
        // sockets close.
        std::thread::sleep(std::time::Duration::from_millis(200));
        self.rt.shutdown_timeout(std::time::Duration::from_millis(500));
        exit
    }
}

/// The reply to a request other than execute and shutdown (`None`: none).
fn answer(config: &KernelConfig, msg: &JupyterMessage) -> Option<JupyterMessage> {
    Some(match &msg.content {
        JupyterMessageContent::KernelInfoRequest(_) => kernel_info(config).as_child_of(msg),
        JupyterMessageContent::IsCompleteRequest(req) => IsCompleteReply {
            status: match (config.is_complete)(&req.code) {
                Completeness::Complete => IsCompleteReplyStatus::Complete,
                Completeness::Incomplete => IsCompleteReplyStatus::Incomplete,
            },
            indent: String::new(),
        }
        .as_child_of(msg),
        JupyterMessageContent::CompleteRequest(req) => CompleteReply {
            matches: vec![],
            cursor_start: req.cursor_pos,
            cursor_end: req.cursor_pos,
            metadata: Default::default(),
            status: ReplyStatus::Ok,
            error: None,
        }
        .as_child_of(msg),
        JupyterMessageContent::InspectRequest(_) => InspectReply {
            found: false,
            data: Media::default(),
            metadata: Default::default(),
            status: ReplyStatus::Ok,
            error: None,
        }
        .as_child_of(msg),
        JupyterMessageContent::HistoryRequest(_) => HistoryReply {
            history: vec![],
            status: ReplyStatus::Ok,
            error: None,
        }
        .as_child_of(msg),
        JupyterMessageContent::CommInfoRequest(_) => CommInfoReply {
            status: ReplyStatus::Ok,
            comms: Default::default(),
            error: None,
        }
        .as_child_of(msg),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> KernelConfig {
        KernelConfig {
            version: "1.2.3".into(),
            banner: "Apsi".into(),
            interrupt: Arc::new(|| {}),
            is_complete: Arc::new(|c: &str| {
                if c.trim_end().ends_with(':') {
                    Completeness::Incomplete
                } else {
                    Completeness::Complete
                }
            }),
        }
    }

    fn wire(m: &JupyterMessage) -> serde_json::Value {
        serde_json::to_value(&m.content).unwrap()
    }

    #[test]
    fn a_bundle_becomes_plain_html_and_base64_png() {
        let b = Bundle {
            plain: "tensor([1.0])".into(),
            html: Some("<table></table>".into()),
            png: Some(vec![0x89, b'P', b'N', b'G']),
        };
        let v = serde_json::to_value(media(&b)).unwrap();
        assert_eq!(v["text/plain"], "tensor([1.0])");
        assert_eq!(v["text/html"], "<table></table>");
        assert_eq!(v["image/png"], "iVBORw==");
        let plain = serde_json::to_value(media(&Bundle {
            plain: "1".into(),
            ..Bundle::default()
        }))
        .unwrap();
        assert_eq!(plain.as_object().unwrap().len(), 1);
    }

    #[test]
    fn kernel_info_names_the_language() {
        let parent: JupyterMessage = jupyter_protocol::KernelInfoRequest {}.into();
        let reply = answer(&config(), &parent).unwrap();
        assert_eq!(reply.header.msg_type, "kernel_info_reply");
        assert_eq!(reply.parent_header.as_ref().unwrap().msg_id, parent.header.msg_id);
        let v = wire(&reply);
        assert_eq!(v["language_info"]["name"], "apsi");
        assert_eq!(v["language_info"]["file_extension"], ".apsi");
        assert_eq!(v["language_info"]["mimetype"], "text/x-apsi");
        assert_eq!(v["language_info"]["version"], "1.2.3");
        assert_eq!(v["status"], "ok");
    }

    #[test]
    fn is_complete_asks_the_hook() {
        let req: JupyterMessage = jupyter_protocol::IsCompleteRequest { code: "if x:".into() }.into();
        assert_eq!(wire(&answer(&config(), &req).unwrap())["status"], "incomplete");
    }

    #[test]
    fn errors_keep_their_lines_without_colour() {
        let e = ErrorReport {
            ename: "ValueError".into(),
            evalue: "bad".into(),
            traceback: vec![
                "\u{1b}[31merror\u{1b}[0m[ValueError]: bad".into(),
                "  --> <cell:1>:1:1".into(),
            ],
        };
        let (out, rep) = error_parts(&e);
        assert_eq!(out.traceback, vec!["error[ValueError]: bad", "  --> <cell:1>:1:1"]);
        assert_eq!(rep.ename, "ValueError");
        let reply = ExecuteReply {
            status: ReplyStatus::Error,
            execution_count: ExecutionCount::new(3),
            payload: vec![],
            user_expressions: None,
            error: Some(Box::new(rep)),
        };
        let v = serde_json::to_value(&reply).unwrap();
        assert_eq!(v["status"], "error");
        assert_eq!(v["ename"], "ValueError");
        assert_eq!(v["execution_count"], 3);
    }

    #[test]
    fn io_sends_children_of_the_running_request_only() {
        let (tx, mut rx) = unbounded_channel();
        let io = Io::detached(tx, None);
        io.stdout("lost\n".into());
        assert!(rx.try_recv().is_err());
        let parent: JupyterMessage = jupyter_protocol::ExecuteRequest::new("print(1)".into()).into();
        io.set_parent(Some(parent.clone()));
        io.stdout("1\n".into());
        io.display(&Bundle {
            plain: "p".into(),
            ..Bundle::default()
        });
        let s = rx.try_recv().unwrap();
        assert_eq!(s.header.msg_type, "stream");
        assert_eq!(s.parent_header.as_ref().unwrap().msg_id, parent.header.msg_id);
        assert_eq!(wire(&s)["text"], "1\n");
        assert_eq!(wire(&s)["name"], "stdout");
        assert_eq!(rx.try_recv().unwrap().header.msg_type, "display_data");
    }

    #[test]
    fn a_bad_connection_file_is_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("c.json");
        assert!(read_connection_file(&p).unwrap_err().contains("cannot read"));
        std::fs::write(&p, "{not json").unwrap();
        assert!(read_connection_file(&p)
            .unwrap_err()
            .contains("not a Jupyter connection file"));
        std::fs::write(
            &p,
            r#"{"ip":"127.0.0.1","transport":"tcp","shell_port":1,"iopub_port":2,"stdin_port":3,
               "control_port":4,"hb_port":5,"key":"k","signature_scheme":"hmac-md5"}"#,
        )
        .unwrap();
        assert!(read_connection_file(&p).unwrap_err().contains("not supported"));
    }
}
