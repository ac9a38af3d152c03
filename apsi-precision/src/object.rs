//! `QTensor`: a quantized tensor as an Apsi value.

use crate::quant::Quantized;
use apsi_core::api::tensor::dtype_value;
use apsi_core::api::tensor::shape_str;
use apsi_core::api::tensor::tensor_value;
use apsi_core::api::{object, ApsiObject, VResult, Value};

pub struct QTensorObj(pub Quantized);

pub fn qtensor_value(q: Quantized) -> Value {
    object(QTensorObj(q))
}

pub fn as_qtensor(v: &Value) -> Option<&Quantized> {
    match v {
        Value::Object(o) => o.0.as_any().downcast_ref::<QTensorObj>().map(|q| &q.0),
        _ => None,
    }
}

impl ApsiObject for QTensorObj {
    fn type_name(&self) -> &str {
        "QTensor"
    }
    fn to_str(&self) -> String {
        let q = &self.0;
        let axis = q.axis.map_or("none".to_string(), |a| a.to_string());
        format!(
            "QTensor(shape={}, dtype={}, axis={axis}, nbytes={})",
            shape_str(q.codes.shape()),
            q.fmt().name(),
            q.nbytes()
        )
    }
    fn get_attr(&self, _this: &Value, name: &str) -> Option<VResult<Value>> {
        let q = &self.0;
        Some(Ok(match name {
            "codes" => tensor_value(q.codes.clone()),
            "scales" => tensor_value(q.scales.clone()),
            "zero_point" => q.zero_points.clone().map_or(Value::None, tensor_value),
            "dtype" => dtype_value(q.fmt()),
            "shape" => Value::tuple(q.codes.shape().iter().map(|&d| Value::Int(d as i64)).collect()),
            "axis" => q.axis.map_or(Value::None, |a| Value::Int(a as i64)),
            "nbytes" => Value::Int(q.nbytes() as i64),
            _ => return None,
        }))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
