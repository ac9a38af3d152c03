//! `prefetch(n)`: the parent pipeline runs ahead on its own thread into a
//! bounded queue of `n` items, so producing the next items overlaps with
//! the consumer's work. Items and errors arrive in order; dropping the pass
//! stops the producer at its next item.

use crate::stream::{BoxStream, Node, Stream};
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Caller, VResult, Value};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

/// Stack of the producer thread (native callbacks nest on it, as on pool workers).
const STACK: usize = 64 << 20;

pub fn open(node: Arc<Node>, n: usize) -> BoxStream {
    Box::new(Prefetch {
        node,
        n: n.max(1),
        rx: None,
        inline: None,
        ended: false,
    })
}

struct Prefetch {
    node: Arc<Node>,
    n: usize,
    rx: Option<Receiver<VResult<Value>>>,
    /// Where the caller cannot run Apsi code on another thread: no prefetch.
    inline: Option<BoxStream>,
    ended: bool,
}

impl Stream for Prefetch {
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        if self.ended {
            return Ok(None);
        }
        if let Some(s) = self.inline.as_mut() {
            return s.next(c);
        }
        if self.rx.is_none() {
            let Some(mut exec) = c.new_thread_caller() else {
                let mut s = self.node.open();
                let r = s.next(c);
                self.inline = Some(s);
                return r;
            };
            let (tx, rx) = sync_channel::<VResult<Value>>(self.n);
            let node = self.node.clone();
            let spawned = std::thread::Builder::new()
                .name("apsi-prefetch".into())
                .stack_size(STACK)
                .spawn(move || {
                    let mut s = node.open();
                    loop {
                        let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.next(&mut *exec))) {
                            Ok(r) => r,
                            Err(_) => Err(err(ErrorKind::Error, "internal error: the prefetch thread panicked")),
                        };
                        let (item, stop) = match r {
                            Ok(Some(x)) => (Ok(x), false),
                            Ok(None) => break,
                            Err(e) => (Err(e), true),
                        };
                        if tx.send(item).is_err() || stop {
                            break;
                        }
                    }
                });
            if let Err(e) = spawned {
                return Err(err(
                    ErrorKind::Error,
                    format!("prefetch() cannot start its thread: {e}"),
                ));
            }
            self.rx = Some(rx);
        }
        let got = match &self.rx {
            Some(rx) => apsi_core::api::par::blocking(|| rx.recv()),
            None => return Ok(None),
        };
        match got {
            Ok(Ok(x)) => Ok(Some(x)),
            Ok(Err(e)) => {
                self.ended = true;
                Err(e)
            }
            Err(_) => {
                self.ended = true;
                Ok(None)
            }
        }
    }
}
