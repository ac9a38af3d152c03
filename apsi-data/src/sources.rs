//! The streams of the sources: tensor rows and batches, ranges, lists,
//! generators.

use crate::collate;
use crate::stream::Stream;
use apsi_core::api::tensor::result_value;
use apsi_core::api::tensor::tensor_value;
use apsi_core::api::tensor::Tensor;
use apsi_core::api::{Caller, VResult, Value};
use std::sync::Arc;

/// Rows of several tensors (a tuple per row when there are several), or
/// batches of `batch` rows: consecutive rows are a view of the tensor (no
/// copy); a shuffled batch reads its rows in storage order into a new
/// tensor.
pub struct TensorRows {
    pub xs: Vec<Tensor>,
    pub n: usize,
    pub batch: Option<usize>,
    pub order: Option<Vec<usize>>,
    pub pos: usize,
}

impl TensorRows {
    fn one(&self, t: &Tensor, lo: usize, hi: usize) -> VResult<Value> {
        match (&self.order, self.batch) {
            (None, None) => Ok(result_value(collate::row(t, lo))),
            (None, Some(_)) => Ok(tensor_value(collate::rows(t, lo, hi))),
            (Some(o), None) => Ok(result_value(collate::row(t, o.get(lo).copied().unwrap_or(0)))),
            (Some(o), Some(_)) => {
                let mut idx: Vec<usize> = o.get(lo..hi).unwrap_or(&[]).to_vec();
                idx.sort_unstable();
                Ok(tensor_value(collate::take_rows(t, &idx)?))
            }
        }
    }
}

impl Stream for TensorRows {
    fn next(&mut self, _c: &mut dyn Caller) -> VResult<Option<Value>> {
        if self.pos >= self.n {
            return Ok(None);
        }
        let lo = self.pos;
        let hi = match self.batch {
            Some(b) => lo.saturating_add(b).min(self.n),
            None => lo + 1,
        };
        self.pos = hi;
        if self.xs.len() == 1 {
            return self.xs.first().map(|t| self.one(t, lo, hi)).transpose();
        }
        let parts = self
            .xs
            .iter()
            .map(|t| self.one(t, lo, hi))
            .collect::<VResult<Vec<_>>>()?;
        Ok(Some(Value::tuple(parts)))
    }
}

pub struct RangeStream {
    pub next: i64,
    pub stop: i64,
    pub step: i64,
}

impl Stream for RangeStream {
    fn next(&mut self, _c: &mut dyn Caller) -> VResult<Option<Value>> {
        let x = self.next;
        let inside = if self.step > 0 { x < self.stop } else { x > self.stop };
        if !inside {
            return Ok(None);
        }
        match x.checked_add(self.step) {
            Some(n) => self.next = n,
            None => self.next = self.stop,
        }
        Ok(Some(Value::Int(x)))
    }
}

pub struct ListStream {
    pub xs: Arc<[Value]>,
    pub pos: usize,
}

impl Stream for ListStream {
    fn next(&mut self, _c: &mut dyn Caller) -> VResult<Option<Value>> {
        let x = self.xs.get(self.pos).cloned();
        self.pos += 1;
        Ok(x)
    }
}

/// `from_generator(f)`: at the start of a pass `f()` is called; a result
/// with a `__next__` hook (a channel, a dataset) is pulled one item at a
/// time, anything else iterable is iterated.
pub struct GenStream {
    f: Value,
    state: Gen,
}

enum Gen {
    Unstarted,
    /// The iterator over what `f()` returned (a generator, a channel, a
    /// list…), pulled one item at a time.
    Pull(Value),
    Ended,
}

impl GenStream {
    pub fn new(f: Value) -> GenStream {
        GenStream {
            f,
            state: Gen::Unstarted,
        }
    }
}

impl Stream for GenStream {
    fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        if let Gen::Unstarted = self.state {
            let src = c.call(&self.f, &[], &[])?;
            self.state = Gen::Pull(apsi_core::api::get_iter(c, &src)?);
        }
        let Gen::Pull(it) = &self.state else { return Ok(None) };
        match apsi_core::api::next_item(c, it) {
            Ok(Some(x)) => Ok(Some(x)),
            Ok(None) => {
                self.state = Gen::Ended;
                Ok(None)
            }
            Err(e) => {
                self.state = Gen::Ended;
                Err(e)
            }
        }
    }
}
