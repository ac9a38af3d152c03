//! Model checks of the channel and atomic cores with loom: every
//! interleaving of a few threads is explored.
//!
//! Run with:
//!   RUSTFLAGS="--cfg loom" cargo test -p apsi-parallel --test loom --release
//! (without `--cfg loom` this file is empty).

#![cfg(loom)]

use apsi_parallel::atomic::{AtomicNum, Num};
use apsi_parallel::chan::Chan;
use loom::sync::Arc;
use loom::thread;

#[test]
fn channel_delivers_everything_once_in_order_per_sender() {
    loom::model(|| {
        let ch = Arc::new(Chan::new(1));
        let a = {
            let ch = ch.clone();
            thread::spawn(move || {
                ch.send(1).unwrap();
                ch.send(2).unwrap();
            })
        };
        let b = {
            let ch = ch.clone();
            thread::spawn(move || {
                ch.send(10).unwrap();
            })
        };
        let mut got = vec![ch.recv().unwrap(), ch.recv().unwrap(), ch.recv().unwrap()];
        a.join().unwrap();
        b.join().unwrap();
        let pos1 = got.iter().position(|&x| x == 1).unwrap();
        let pos2 = got.iter().position(|&x| x == 2).unwrap();
        assert!(pos1 < pos2, "one sender's items stay in order");
        got.sort();
        assert_eq!(got, vec![1, 2, 10]);
    });
}

#[test]
fn close_wakes_a_waiting_receiver_and_refuses_sends() {
    loom::model(|| {
        let ch: Arc<Chan<i32>> = Arc::new(Chan::new(1));
        let r = {
            let ch = ch.clone();
            thread::spawn(move || ch.recv())
        };
        ch.close();
        assert_eq!(r.join().unwrap(), None);
        assert!(ch.send(1).is_err());
    });
}

#[test]
fn send_after_close_never_is_received() {
    loom::model(|| {
        let ch: Arc<Chan<i32>> = Arc::new(Chan::new(2));
        let s = {
            let ch = ch.clone();
            thread::spawn(move || ch.send(5).is_ok())
        };
        ch.close();
        let sent = s.join().unwrap();
        let got = ch.recv();
        assert_eq!(got.is_some(), sent);
        assert_eq!(ch.recv(), None);
    });
}

#[test]
fn atomic_adds_and_cas_are_not_lost() {
    loom::model(|| {
        let a = Arc::new(AtomicNum::new(Num::Float(0.0)));
        let i = Arc::new(AtomicNum::new(Num::Int(0)));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (a, i) = (a.clone(), i.clone());
                thread::spawn(move || {
                    a.fetch_add(Num::Float(1.5)).unwrap();
                    loop {
                        let Num::Int(old) = i.load() else { unreachable!() };
                        if i.compare_exchange(Num::Int(old), Num::Int(old + 1)).unwrap() {
                            break;
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(a.load(), Num::Float(3.0));
        assert_eq!(i.load(), Num::Int(2));
    });
}
