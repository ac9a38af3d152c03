//! `fit`'s progress on stderr (LAYERS.md §5 "Progress"): a bar redrawn in
//! place at most ten times a second on a terminal, and one line per
//! finished epoch; nothing at all when stderr is not a terminal (unless
//! `progress=true`, which writes the epoch lines anywhere).

use apsi_core::api::{err, ErrorKind, VResult, Value};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

#[derive(Clone, Copy)]
pub struct Progress {
    bar: bool,
    lines: bool,
}

impl Progress {
    pub fn from_arg(who: &str, v: Option<&Value>) -> VResult<Progress> {
        let tty = std::io::stderr().is_terminal();
        match v {
            None => Ok(Progress { bar: tty, lines: tty }),
            Some(Value::Str(s)) if s.as_str() == "auto" => Ok(Progress { bar: tty, lines: tty }),
            Some(Value::Bool(true)) => Ok(Progress { bar: tty, lines: true }),
            Some(Value::Bool(false)) | Some(Value::None) => Ok(Progress {
                bar: false,
                lines: false,
            }),
            Some(other) => Err(err(
                ErrorKind::TypeError,
                format!(
                    "{who}: progress must be \"auto\", true or false, not {}",
                    other.type_name()
                ),
            )),
        }
    }

    pub fn start(self, epochs: usize, steps: Option<usize>) -> Bar {
        Bar {
            p: self,
            epochs,
            steps: steps.unwrap_or(0),
            epoch: 0,
            started: Instant::now(),
            last_draw: None,
            drawn: false,
            colour: std::env::var_os("NO_COLOR").is_none(),
        }
    }
}

pub struct Bar {
    p: Progress,
    epochs: usize,
    steps: usize,
    epoch: usize,
    started: Instant,
    last_draw: Option<Instant>,
    drawn: bool,
    colour: bool,
}

fn clock(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn grouped(n: f64) -> String {
    let s = format!("{}", n.round() as u64);
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

impl Bar {
    pub fn epoch(&mut self, epoch: usize, steps: usize) {
        self.epoch = epoch;
        self.steps = steps;
    }

    pub fn step(&mut self, done: usize, loss: f64, rows: usize, secs: f64) {
        if !self.p.bar {
            return;
        }
        let now = Instant::now();
        if let Some(t) = self.last_draw {
            if now.duration_since(t) < Duration::from_millis(100) && done < self.steps {
                return;
            }
        }
        self.last_draw = Some(now);
        let width = 20usize;
        let frac = if self.steps > 0 {
            done as f64 / self.steps as f64
        } else {
            0.0
        };
        let full = (frac * width as f64).floor() as usize;
        let mut bar = "━".repeat(full.min(width));
        if full < width {
            bar.push('╸');
            bar.push_str(&" ".repeat(width - full - 1));
        }
        let total = self.started.elapsed().as_secs_f64();
        let units_done = self.epoch as f64 + frac;
        let eta = if units_done > 0.0 {
            total / units_done * (self.epochs as f64 - units_done)
        } else {
            0.0
        };
        let rps = if secs > 0.0 { rows as f64 / secs } else { 0.0 };
        let (on, off) = if self.colour { ("\x1b[36m", "\x1b[0m") } else { ("", "") };
        let line = format!(
            "\repoch {}/{} {on}{bar}{off} {done}/{}  loss {loss:.4}  {} rows/s  ETA {}\x1b[K",
            self.epoch + 1,
            self.epochs,
            self.steps,
            grouped(rps),
            clock(eta)
        );
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(line.as_bytes());
        let _ = e.flush();
        self.drawn = true;
    }

    pub fn end_epoch(&mut self, epoch: usize, loss: f64, val: &str, secs: f64) {
        if !self.p.lines {
            return;
        }
        let mut e = std::io::stderr().lock();
        if self.drawn {
            let _ = e.write_all(b"\r\x1b[K");
            self.drawn = false;
        }
        let _ = writeln!(
            e,
            "epoch {}/{}  loss {loss:.4}{val}  {secs:.2}s",
            epoch + 1,
            self.epochs
        );
        self.last_draw = None;
    }

    pub fn finish(&mut self) {
        if self.drawn {
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(b"\r\x1b[K");
            let _ = e.flush();
        }
    }
}
