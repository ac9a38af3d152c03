//! The typed protocol hooks of module objects (docs/MODULES.md), exercised
//! as a module crate would use them: through `apsi_core::api` only.

use apsi_core::api::{
    binary, get_index, get_iter, iterate, len_with, next_item, object, set_index, ApsiObject, BinOp, Caller, ErrorKind,
    NoCaller, Protocols, VResult, Value,
};
use std::sync::Mutex;

/// An amount of cents with `+` (with ints and with itself, both ways),
/// `cents[k]` (the k-th digit) and `cents[k] = d`, and `len` (digits).
struct Cents(Mutex<i64>);

fn cents(v: i64) -> Value {
    object(Cents(Mutex::new(v)))
}

fn amount(v: &Value) -> Option<i64> {
    match v {
        Value::Object(o) => o.0.as_any().downcast_ref::<Cents>().map(|c| *c.0.lock().unwrap()),
        _ => None,
    }
}

impl ApsiObject for Cents {
    fn type_name(&self) -> &str {
        "Cents"
    }
    fn to_str(&self) -> String {
        format!("{}c", self.0.lock().unwrap())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn protocols(&self) -> Protocols {
        Protocols {
            arith: true,
            item: true,
            len: true,
            ..Protocols::NONE
        }
    }
    fn binary(&self, _this: &Value, op: BinOp, other: &Value, reflected: bool) -> VResult<Option<Value>> {
        let me = *self.0.lock().unwrap();
        let them = match other {
            Value::Int(n) => *n,
            v => match amount(v) {
                Some(n) => n,
                None => return Ok(None),
            },
        };
        Ok(match op {
            BinOp::Add => Some(cents(me + them)),
            BinOp::Sub if reflected => Some(cents(them - me)),
            BinOp::Sub => Some(cents(me - them)),
            _ => None,
        })
    }
    fn get_item(&self, _this: &Value, key: &Value) -> VResult<Value> {
        let digits = self.0.lock().unwrap().to_string();
        match key {
            Value::Int(k) if (*k as usize) < digits.len() => {
                Ok(Value::Int(digits.as_bytes()[*k as usize] as i64 - b'0' as i64))
            }
            _ => Err(apsi_core::api::err(ErrorKind::IndexError, "digit index out of range")),
        }
    }
    fn set_item(&self, _this: &Value, key: &Value, value: Value) -> VResult<()> {
        let (Value::Int(k), Value::Int(d)) = (key, value) else {
            return Err(apsi_core::api::err(ErrorKind::TypeError, "ints only"));
        };
        let mut n = self.0.lock().unwrap();
        let mut digits: Vec<u8> = n.to_string().into_bytes();
        digits[*k as usize] = b'0' + d as u8;
        *n = String::from_utf8(digits).unwrap().parse().unwrap();
        Ok(())
    }
    fn len(&self, _this: &Value) -> VResult<i64> {
        Ok(self.0.lock().unwrap().to_string().len() as i64)
    }
}

/// Counts down from n: an iterator through the `next` hook only.
struct Countdown(Mutex<i64>);

impl ApsiObject for Countdown {
    fn type_name(&self) -> &str {
        "Countdown"
    }
    fn to_str(&self) -> String {
        "<Countdown>".into()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn protocols(&self) -> Protocols {
        Protocols {
            next: true,
            ..Protocols::NONE
        }
    }
    fn next(&self, _this: &Value, _c: &mut dyn Caller) -> VResult<Option<Value>> {
        let mut n = self.0.lock().unwrap();
        if *n == 0 {
            return Ok(None);
        }
        *n -= 1;
        Ok(Some(Value::Int(*n + 1)))
    }
}

#[test]
fn arithmetic_goes_through_the_typed_hook_both_ways() {
    let a = cents(250);
    assert_eq!(amount(&binary(BinOp::Add, &a, &Value::Int(5)).unwrap()), Some(255));
    assert_eq!(amount(&binary(BinOp::Add, &Value::Int(5), &a).unwrap()), Some(255));
    assert_eq!(amount(&binary(BinOp::Sub, &Value::Int(1000), &a).unwrap()), Some(750));
    assert_eq!(amount(&binary(BinOp::Add, &a, &cents(1)).unwrap()), Some(251));
    // Not handled by either side: Python's TypeError for the operator.
    let e = binary(BinOp::Mul, &a, &Value::Float(2.0)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::TypeError);
    let e = binary(BinOp::Add, &a, &Value::str("x")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::TypeError);
}

#[test]
fn items_and_len_go_through_the_typed_hooks() {
    let a = cents(250);
    assert!(matches!(get_index(&a, &Value::Int(1)).unwrap(), Value::Int(5)));
    assert_eq!(get_index(&a, &Value::Int(7)).unwrap_err().kind, ErrorKind::IndexError);
    set_index(&a, &Value::Int(0), Value::Int(9)).unwrap();
    assert_eq!(amount(&a), Some(950));
    assert_eq!(len_with(&mut NoCaller, &a).unwrap(), 3);
    // The dunder names are answered from the same hooks.
    let f = apsi_core::ops::get_attr(&a, "__getitem__").unwrap();
    assert!(matches!(
        NoCaller.call(&f, &[Value::Int(2)], &[]).unwrap(),
        Value::Int(0)
    ));
    let f = apsi_core::ops::get_attr(&a, "__len__").unwrap();
    assert!(matches!(NoCaller.call(&f, &[], &[]).unwrap(), Value::Int(3)));
    // An object without the hook is not subscriptable.
    let c = object(Countdown(Mutex::new(2)));
    assert_eq!(get_index(&c, &Value::Int(0)).unwrap_err().kind, ErrorKind::TypeError);
}

#[test]
fn an_object_with_next_is_an_iterator() {
    let c = object(Countdown(Mutex::new(3)));
    let items: Vec<i64> = iterate(&mut NoCaller, &c)
        .unwrap()
        .iter()
        .map(|v| match v {
            Value::Int(n) => *n,
            _ => -1,
        })
        .collect();
    assert_eq!(items, [3, 2, 1]);
    let c = object(Countdown(Mutex::new(1)));
    let it = get_iter(&mut NoCaller, &c).unwrap();
    assert!(matches!(next_item(&mut NoCaller, &it).unwrap(), Some(Value::Int(1))));
    assert!(next_item(&mut NoCaller, &it).unwrap().is_none());
    // `next` raised as Python does at the end, through `__next__`.
    let f = apsi_core::ops::get_attr(&it, "__next__").unwrap();
    assert_eq!(NoCaller.call(&f, &[], &[]).unwrap_err().kind, ErrorKind::StopIteration);
}
