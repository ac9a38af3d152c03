//! `apsi bench FILE -n N`: runs a program N times, each as a new `apsi run`
//! process (so start-up, the compile cache and the program all count, as a
//! user waits for them), after `--warmup` untimed runs, and prints best /
//! median / mean / worst (`apsi_core::measure`, which the REPL's `:bench`
//! and the prelude's `bench` use too). The program's standard output is
//! discarded; a run that fails stops the benchmark with its error output.

use crate::args::BenchOptions;
use apsi_core::measure::Summary;
use std::process::{Command, Stdio};
use std::time::Instant;

pub fn main(opts: &BenchOptions) -> u8 {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find the apsi executable to run the program with: {e}");
            return 1;
        }
    };
    let r = &opts.run;
    let mut args: Vec<String> = vec!["run".into()];
    if r.no_cache {
        args.push("--no-cache".into());
    }
    if let Some(n) = r.threads {
        args.push(format!("--threads={n}"));
    }
    for a in &r.allowed {
        args.push(format!("--allow-{a}"));
    }
    args.push("--".into());
    args.push(r.file.clone());
    args.extend(r.argv.iter().cloned());
    let mut times = Vec::with_capacity(opts.runs);
    for i in 0..opts.warmup + opts.runs {
        let t = Instant::now();
        let out = Command::new(&exe)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output();
        let took = t.elapsed().as_secs_f64();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                let which = if i < opts.warmup {
                    format!("warm-up run {}", i + 1)
                } else {
                    format!("run {}", i - opts.warmup + 1)
                };
                let status = o
                    .status
                    .code()
                    .map_or("a signal".to_string(), |c| format!("status {c}"));
                eprintln!("error: {which} of {} failed (exit {status}); its error output:", r.file);
                eprint!("{}", String::from_utf8_lossy(&o.stderr));
                return 1;
            }
            Err(e) => {
                eprintln!("error: cannot start {}: {e}", exe.display());
                return 1;
            }
        }
        if i >= opts.warmup {
            times.push(took);
        }
    }
    let Some(s) = Summary::of(&times) else { return 1 };
    if opts.json {
        let list: Vec<String> = times.iter().map(|t| format!("{t:e}")).collect();
        println!(
            "{{\"file\": {}, \"warmup\": {}, \"runs\": {}, \"best_s\": {:e}, \"median_s\": {:e}, \"mean_s\": {:e}, \"worst_s\": {:e}, \"times_s\": [{}]}}",
            json_str(&r.file),
            opts.warmup,
            s.n,
            s.best,
            s.median,
            s.mean,
            s.worst,
            list.join(", ")
        );
    } else {
        println!(
            "bench: {} ({} warm-up, then {} timed runs, each a new process)",
            r.file, opts.warmup, s.n
        );
        println!("{}", s.line());
    }
    0
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(super::json_str("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
    }
}
