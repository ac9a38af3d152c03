//! `apsi repl`: the interactive prompt, with history, multi-line blocks,
//! expression values printed, `:time`, `:bench`, `:help` and `:quit`.

use crate::args::RunOptions;
use crate::session::{fmt_duration, Outcome, Session};
use crate::term;
use apsi_core::{format, syntax};
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::Editor;
use std::path::PathBuf;

const HELP: &str = "\
Type Apsi code; a block (a line ending in ':') continues until an empty line.
  :time CODE     run CODE once and print how long it took
  :bench CODE    run CODE repeatedly and print best/median/mean/worst
  :help          this text
  :quit          leave (also Ctrl-D)";

fn history_path() -> Option<PathBuf> {
    let home = std::env::var_os("APSI_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".apsi")))?;
    std::fs::create_dir_all(&home).ok()?;
    Some(home.join("history"))
}

/// Prints a value (when asked) or reports an error; `false` when it failed.
fn show(session: &Session, outcome: Outcome, print_value: bool) -> bool {
    match outcome {
        Outcome::Value(Some(v)) => {
            if print_value {
                println!("{}", format::repr_of(&v));
            }
            true
        }
        Outcome::Value(None) => true,
        Outcome::Failed(ds) => {
            let text = session.render(&ds, term::stderr_color());
            eprint!("{text}");
            if !text.ends_with('\n') {
                eprintln!();
            }
            false
        }
        Outcome::Exit(code) => std::process::exit(code),
    }
}

pub fn start(opts: &RunOptions) -> u8 {
    let mut session = match Session::new(opts, "repl", Vec::new(), None, false) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let mut editor: Editor<(), FileHistory> = match Editor::new() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot start the line editor: {e}");
            return 1;
        }
    };
    let history = history_path();
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    println!("Apsi {} — :help for help, :quit to leave", crate::APSI_VERSION);
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() { ">>> " } else { "... " };
        let line = match editor.readline(prompt) {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                println!("(interrupted; :quit to leave)");
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("error: cannot read input: {e}");
                return 1;
            }
        };
        if buffer.is_empty() {
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            if let Some(cmd) = trimmed.strip_prefix(':') {
                let _ = editor.add_history_entry(line.as_str());
                let (name, rest) = cmd.split_once(char::is_whitespace).unwrap_or((cmd, ""));
                match name {
                    "quit" | "q" | "exit" => break,
                    "help" | "h" => println!("{HELP}"),
                    "time" if !rest.trim().is_empty() => {
                        let (outcome, took) = session.time(rest.trim());
                        if show(&session, outcome, true) {
                            println!("time: {}", fmt_duration(took));
                        }
                    }
                    "bench" if !rest.trim().is_empty() => match session.bench(rest.trim()) {
                        Ok(line) => println!("{line}"),
                        Err(failed) => {
                            show(&session, failed, false);
                        }
                    },
                    "time" | "bench" => println!("usage: :{name} CODE"),
                    other => println!("unknown command ':{other}' — :help lists the commands"),
                }
                continue;
            }
        }
        buffer.push_str(&line);
        buffer.push('\n');
        // A block ends with an empty line; anything else that is complete runs now.
        let block_open = buffer.lines().next().is_some_and(|l| l.trim_end().ends_with(':'));
        if syntax::is_incomplete(&buffer) || (block_open && !line.trim().is_empty()) {
            continue;
        }
        let code = std::mem::take(&mut buffer);
        let _ = editor.add_history_entry(code.trim_end());
        let outcome = session.eval(&code);
        show(&session, outcome, true);
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    0
}
