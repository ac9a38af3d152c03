//! Runs probes in parallel, each on its own thread with its own deadline. A
//! probe that has not answered by its deadline is reported as a warning and
//! left behind: its thread is detached, and the process does not wait for it.

use crate::check::Check;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A read-only probe: an id, a time limit, and the work.
pub struct Probe {
    pub id: &'static str,
    pub timeout: Duration,
    pub run: Box<dyn FnOnce() -> Check + Send + 'static>,
}

impl Probe {
    pub fn new(id: &'static str, timeout: Duration, run: impl FnOnce() -> Check + Send + 'static) -> Probe {
        Probe {
            id,
            timeout,
            run: Box::new(run),
        }
    }
}

/// Why doctor itself could not run (exit status 2).
#[derive(Debug, Clone, PartialEq)]
pub struct DoctorFailed(pub String);

impl std::fmt::Display for DoctorFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Runs every probe at once and returns their checks in the order given.
/// A probe past its timeout becomes a `warn` check saying so; a probe that
/// panicked becomes an `error` check.
pub fn run_all(probes: Vec<Probe>) -> Result<Vec<Check>, DoctorFailed> {
    let start = Instant::now();
    let (tx, rx) = mpsc::channel::<(usize, Check)>();
    let mut meta = Vec::with_capacity(probes.len());
    for (i, p) in probes.into_iter().enumerate() {
        meta.push((p.id, start + p.timeout, p.timeout));
        let tx = tx.clone();
        let id = p.id;
        let run = p.run;
        std::thread::Builder::new()
            .name(format!("doctor-{id}"))
            .spawn(move || {
                let check = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
                    Ok(c) => c,
                    Err(_) => Check::error(id, "the probe failed (a bug in apsi doctor)")
                        .fix("report it with the output of `apsi doctor --json`"),
                };
                let _ = tx.send((i, check));
            })
            .map_err(|e| DoctorFailed(format!("cannot start the probe thread for '{id}': {e}")))?;
    }
    drop(tx);
    let mut out: Vec<Option<Check>> = vec![None; meta.len()];
    let mut pending = meta.len();
    while pending > 0 {
        // The nearest deadline among probes still running.
        let next = meta
            .iter()
            .enumerate()
            .filter(|(i, _)| out[*i].is_none())
            .map(|(_, m)| m.1)
            .min();
        let Some(next) = next else { break };
        let wait = next.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok((i, c)) => {
                if let Some(slot) = out.get_mut(i) {
                    if slot.is_none() {
                        *slot = Some(c);
                        pending -= 1;
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                for (i, (id, deadline, limit)) in meta.iter().enumerate() {
                    if out[i].is_none() && *deadline <= now {
                        out[i] = Some(timed_out(id, *limit));
                        pending -= 1;
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    Ok(out
        .into_iter()
        .zip(meta.iter())
        .map(|(c, (id, _, limit))| c.unwrap_or_else(|| timed_out(id, *limit)))
        .collect())
}

fn timed_out(id: &str, limit: Duration) -> Check {
    Check::warn(id, format!("the probe did not answer within {:.1} s and was stopped waiting for", limit.as_secs_f64()))
        .detail("timed_out", true)
        .detail("timeout_s", limit.as_secs_f64())
        .fix("something on this machine is very slow to answer (a hung driver or network mount?); run `apsi doctor` again, and if it persists, check that component by hand")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Status;

    #[test]
    fn a_hanging_probe_is_cut_at_its_timeout() {
        let t0 = Instant::now();
        let probes = vec![
            Probe::new("quick", Duration::from_secs(5), || Check::ok("quick", "fine")),
            Probe::new("hangs", Duration::from_millis(200), || {
                // Never answers within any test's lifetime.
                std::thread::sleep(Duration::from_secs(3600));
                Check::ok("hangs", "unreachable")
            }),
            Probe::new("slowish", Duration::from_secs(5), || {
                std::thread::sleep(Duration::from_millis(50));
                Check::error("slowish", "broken")
            }),
        ];
        let checks = run_all(probes).unwrap();
        let took = t0.elapsed();
        assert_eq!(
            checks.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["quick", "hangs", "slowish"]
        );
        assert_eq!(checks[0].status, Status::Ok);
        assert_eq!(checks[1].status, Status::Warn);
        assert_eq!(checks[1].details["timed_out"], true);
        assert!(checks[1].summary.contains("0.2 s"), "{}", checks[1].summary);
        assert_eq!(checks[2].status, Status::Error);
        // Cut at 0.2 s, not after the hour: any bound far below 3600 s shows it.
        assert!(took >= Duration::from_millis(200), "{took:?}");
        assert!(took < Duration::from_secs(60), "{took:?}");
    }

    #[test]
    fn probes_run_in_parallel() {
        // Each probe waits until all four are running: run one after
        // another, the first would wait forever and be cut at its timeout.
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
        let probes = (0..4)
            .map(|_| {
                let b = barrier.clone();
                Probe::new("p", Duration::from_secs(30), move || {
                    b.wait();
                    Check::ok("p", "ok")
                })
            })
            .collect();
        let checks = run_all(probes).unwrap();
        assert_eq!(checks.len(), 4);
        assert!(checks.iter().all(|c| c.status == Status::Ok), "{checks:?}");
    }
}
