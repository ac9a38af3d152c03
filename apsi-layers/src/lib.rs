//! `use layers` (LAYERS.md): neural networks on Apsi's own tensors — layers,
//! losses, optimizers, `fit`/`predict`/`evaluate`, and models on disk as
//! safetensors. See docs/LAYERS.md.
//!
//! - [`layer`]: the layer value (parameters, forward, shapes, printing);
//!   [`construct`]: the constructors and initial values;
//!   [`act`], [`recurrent`], [`attention`]: what layers compute (convolution
//!   and pooling are the core's tensor operations).
//! - [`graph`]: `scatter_reduce` (`index_add` is the prelude's).
//! - [`model`]: parameters of whole models, by order and name.
//! - [`loss`], [`optim`]: losses; optimizers and schedules.
//! - [`fit`], [`train`], [`progress`], [`backend`]: training.
//! - [`save`]: safetensors files; [`export`]: `torch_module` (the model as
//!   PyTorch source beside its safetensors weights).
//! - [`ops`]: the tensor operations layers are written with.

pub mod act;
pub mod attention;
pub mod backend;
pub mod construct;
pub mod export;
pub mod fit;
pub mod graph;
pub mod layer;
pub mod loss;
pub mod model;
pub mod ops;
pub mod optim;
pub mod progress;
pub mod recurrent;
pub mod save;
pub mod table;
pub(crate) mod torch;
pub mod torch_check;
pub mod train;

use apsi_core::api::tensor::tensor_value;
use apsi_core::api::{native, Args, Caller, Kwargs, ModuleBuilder, ModuleDescriptor, VResult, Value};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the command line allowed (the driver calls this once).
pub fn allow(python: bool) {
    backend::allow_python(python);
}

fn f_relu(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("relu", args, kw, 1, &["x"])?;
    let x = layer::tensor_arg(c, "relu", a.req(0)?)?;
    Ok(tensor_value(ops::relu(&x)?))
}

fn f_gelu(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("gelu", args, kw, 1, &["x", "approximate"])?;
    let x = layer::tensor_arg(c, "gelu", a.req(0)?)?;
    let approximate = match a.opt(1) {
        None => false,
        Some(Value::Str(s)) if s.as_str() == "none" => false,
        Some(Value::Str(s)) if s.as_str() == "tanh" => true,
        Some(other) => return Err(a.wrong(1, "\"none\" or \"tanh\"", other)),
    };
    let x = if x.dtype.is_float() {
        x
    } else {
        ops::cast(&x, apsi_core::api::tensor::DType::F32)?
    };
    Ok(tensor_value(act::gelu(&x, approximate)?))
}

/// `Module` (LAYERS.md §2, "Your own models"): an empty struct whose
/// `__call__(self, *args)` is `self.forward(*args)`, so `struct
/// Net(Module):` makes `net(x)` work as in PyTorch.
fn module_type() -> std::sync::Arc<apsi_core::api::StructType> {
    static T: std::sync::OnceLock<std::sync::Arc<apsi_core::api::StructType>> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut t = apsi_core::api::StructType::plain("Module", vec![], Default::default());
        t.methods.insert("__call__".into(), native("__call__", module_call));
        std::sync::Arc::new(t)
    })
    .clone()
}

fn module_call(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let forward = match args.first() {
        Some(Value::Struct(s)) => match s.ty.method("forward") {
            Some(f) => f.clone(),
            None => {
                return Err(apsi_core::api::err(
                    apsi_core::api::ErrorKind::NotImplementedError,
                    format!(
                        "{} is a Module without forward(self, x): define it for {}(x) to run",
                        s.ty.name,
                        s.ty.name.to_lowercase()
                    ),
                ))
            }
        },
        _ => {
            return Err(apsi_core::api::err(
                apsi_core::api::ErrorKind::TypeError,
                "Module.__call__ needs an instance (self)",
            ))
        }
    };
    c.call(&forward, args, kw)
}

/// This module's own function values (`relu`, `gelu`), for rebuilding models.
pub fn exported(name: &str) -> Value {
    match name {
        "gelu" => native("gelu", f_gelu),
        _ => native("relu", f_relu),
    }
}

/// The `layers` module, ready to install into a runtime.
pub fn module() -> ModuleDescriptor {
    ModuleBuilder::new("layers", VERSION, "^2.9")
        .function("Dense", construct::f_dense)
        .function("Conv2d", construct::f_conv2d)
        .function("MaxPool2d", construct::f_maxpool2d)
        .function("Flatten", construct::f_flatten)
        .function("Dropout", construct::f_dropout)
        .function("Embedding", construct::f_embedding)
        .function("PositionEmbedding", construct::f_position_embedding)
        .function("LayerNorm", construct::f_layer_norm)
        .function("LSTM", construct::f_lstm)
        .function("MultiHeadAttention", construct::f_attention)
        .function("Attention", construct::f_attention)
        .function("Residual", construct::f_residual)
        .function("Sequential", construct::f_sequential)
        .function("relu", f_relu)
        .function("gelu", f_gelu)
        .function("params", model::f_params)
        .function("named_params", model::f_named_params)
        .function("num_params", model::f_num_params)
        .function("set_params", model::f_set_params)
        .function("apply", model::f_apply)
        .function("output_shape", model::f_output_shape)
        .function("summary", model::f_summary)
        .function("mse", loss::f_mse)
        .function("cross_entropy", loss::f_cross_entropy)
        .function("bce", loss::f_bce)
        .function("bce_logits", loss::f_bce_logits)
        .function("SGD", optim::f_sgd)
        .function("Adam", optim::f_adam)
        .function("AdamW", optim::f_adamw)
        .function("cosine_lr", optim::f_cosine_lr)
        .function("step_lr", optim::f_step_lr)
        .function("fit", fit::f_fit)
        .function("predict", fit::f_predict)
        .function("evaluate", fit::f_evaluate)
        .function("training", train::f_training)
        .function("scatter_reduce", graph::f_scatter_reduce)
        .function("save_model", save::f_save_model)
        .function("load_model", save::f_load_model)
        .function("load_weights", save::f_load_weights)
        .function("torch_module", export::f_torch_module)
        .function("check_torch", torch_check::f_check_torch)
        .constant("Module", Value::StructType(module_type()))
        .build()
}
