//! The REPL driven through a pseudo-terminal, as a person uses it: a
//! multi-line block, an error, `:time`, `:bench` and history recall.

use rexpect::session::PtySession;

fn start(home: &std::path::Path) -> PtySession {
    let cmd = format!(
        "env NO_COLOR=1 APSI_HOME={} {} repl",
        home.display(),
        env!("CARGO_BIN_EXE_apsi")
    );
    let mut p = rexpect::spawn(&cmd, Some(10_000)).expect("cannot start the REPL");
    p.exp_string(":help").expect("banner");
    p.exp_string(">>> ").expect("first prompt");
    p
}

fn home(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("apsi-repl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn block_error_time_and_history() {
    let h = home("main");
    let mut p = start(&h);
    // A multi-line block: the prompt turns into "... " until an empty line.
    p.send_line("def sq(x):").unwrap();
    p.exp_string("... ").unwrap();
    p.send_line("    return x * x").unwrap();
    p.exp_string("... ").unwrap();
    p.send_line("").unwrap();
    p.exp_string(">>> ").unwrap();
    // Expression values are printed.
    p.send_line("sq(12)").unwrap();
    p.exp_string("144").unwrap();
    p.exp_string(">>> ").unwrap();
    // An error is reported and the session goes on.
    p.send_line("sq(1) / 0").unwrap();
    p.exp_string("ZeroDivisionError").unwrap();
    p.exp_string(">>> ").unwrap();
    p.send_line("[sq(i) for i in range(4)]").unwrap();
    p.exp_string("[0, 1, 4, 9]").unwrap();
    p.exp_string(">>> ").unwrap();
    // :time prints the value and how long it took.
    p.send_line(":time sq(3)").unwrap();
    p.exp_string("9").unwrap();
    p.exp_string("time: ").unwrap();
    p.exp_string(">>> ").unwrap();
    p.send_line(":bench sq(3)").unwrap();
    p.exp_regex("runs: best .*median .*mean .*worst").unwrap();
    p.exp_string(">>> ").unwrap();
    // History recall: the up arrow brings back the last input.
    p.send_line("40 + 2").unwrap();
    p.exp_string("42").unwrap();
    p.exp_string(">>> ").unwrap();
    p.send("\x1b[A").unwrap();
    p.send_line("").unwrap();
    p.exp_string("42").unwrap();
    p.exp_string(">>> ").unwrap();
    p.send_line(":help").unwrap();
    p.exp_string(":bench CODE").unwrap();
    p.send_line(":quit").unwrap();
    p.exp_eof().unwrap();
    // History is kept between sessions.
    let saved = std::fs::read_to_string(h.join("history")).unwrap_or_default();
    assert!(saved.contains("40 + 2"), "history file: {saved}");
}

#[test]
fn state_persists_between_inputs_and_ctrl_d_leaves() {
    let h = home("state");
    let mut p = start(&h);
    p.send_line("total = 0").unwrap();
    p.exp_string(">>> ").unwrap();
    p.send_line("for i in range(5):").unwrap();
    p.exp_string("... ").unwrap();
    p.send_line("    total += i").unwrap();
    p.exp_string("... ").unwrap();
    p.send_line("").unwrap();
    p.exp_string(">>> ").unwrap();
    p.send_line("print(f\"total={total}\")").unwrap();
    p.exp_string("total=10").unwrap();
    p.exp_string(">>> ").unwrap();
    p.send_line("undefined_thing + 1").unwrap();
    p.exp_string("NameError").unwrap();
    p.exp_string(">>> ").unwrap();
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}
