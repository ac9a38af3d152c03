//! `use layers` programs run by the real interpreter (apsi-testkit), output
//! captured: training determinism across thread counts, files on disk and
//! what a damaged file does, errors a user meets, the torch backend's
//! refusals.

use apsi_testkit::Program;
use std::sync::{Mutex, MutexGuard};

/// The prelude generator (`seed`, `randn`, initial weights) is one per
/// process: tests that compare runs hold this so that no other test draws
/// from it meanwhile.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn run_ok(name: &str, src: &str) -> String {
    let o = Program::new(name, src).modules(vec![apsi_layers::module()]).run();
    assert!(o.result.is_ok(), "{name}: {:?}\n{}", o.rendered_error(), o.out);
    o.out
}

fn error_of(name: &str, src: &str) -> String {
    let o = Program::new(name, src).modules(vec![apsi_layers::module()]).run();
    o.rendered_error()
        .unwrap_or_else(|| panic!("{name} should fail; printed {}", o.out))
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("apsi-layers-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Training prints every loss and weight bit for bit (a float prints as
/// the shortest text that reads back to it).
const TRAIN: &str = "use layers\n\
seed(5)\n\
X = randn((37, 6))\n\
y = tensor([i % 3 for i in range(37)])\n\
m = Sequential([Dense(6, 32, activation=relu), Dropout(0.2), LayerNorm(32), Dense(32, 3)])\n\
h = fit(m, (X, y), loss=\"cross_entropy\", optimizer=AdamW(lr=0.01, schedule=cosine_lr(4)), epochs=4, batch=8, seed=3)\n\
print(h.loss)\n\
print([p.flatten().to_list() for p in params(m)])\n\
print(predict(m, X).flatten().to_list())\n";

#[test]
fn training_is_bit_identical_with_one_and_two_threads_and_across_runs() {
    let _serial = serial();
    let one = Program::new("t1", TRAIN)
        .modules(vec![apsi_layers::module()])
        .threads(1)
        .run();
    let two = Program::new("t2", TRAIN)
        .modules(vec![apsi_layers::module()])
        .threads(2)
        .run();
    let again = Program::new("t2b", TRAIN)
        .modules(vec![apsi_layers::module()])
        .threads(2)
        .run();
    assert!(one.result.is_ok(), "{:?}", one.rendered_error());
    assert!(two.result.is_ok(), "{:?}", two.rendered_error());
    assert_eq!(one.out, two.out);
    assert_eq!(two.out, again.out);
    // and a different fit seed gives a different run (the seed is used)
    let other = run_ok("t3", &TRAIN.replace("seed=3)", "seed=4)"));
    assert_ne!(other, one.out);
}

#[test]
fn the_loss_falls_and_the_model_learns() {
    let _serial = serial();
    let out = run_ok(
        "xor",
        "use layers\n\
seed(1)\n\
X = tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])\n\
y = tensor([[0.0], [1.0], [1.0], [0.0]])\n\
model = Sequential([Dense(2, 8, activation=tanh), Dense(8, 1)])\n\
h = fit(model, (X, y), loss=\"mse\", optimizer=Adam(lr=0.05), epochs=300, batch=4, seed=0)\n\
print(h.loss[-1] < h.loss[0] / 10, [round(v) for v in predict(model, X).flatten().to_list()])\n",
    );
    assert_eq!(out, "true [0, 1, 1, 0]\n");
}

#[test]
fn models_round_trip_through_safetensors_and_damaged_files_are_refused() {
    let _serial = serial();
    let d = temp_dir("files");
    let p = d.join("m.safetensors");
    let ps = p.to_string_lossy().to_string();
    let src = format!(
        "use layers\n\
seed(2)\n\
m = Sequential([Embedding(5, 4), LSTM(4, 6, return_sequences=true), Residual(Sequential([LayerNorm(6), Dense(6, 6, activation=gelu)])), MultiHeadAttention(6, 2, causal=true), Dense(6, 3, dtype=f64)])\n\
x = tensor([[1, 2, 3], [4, 0, 1]])\n\
save_model(m, \"{ps}\")\n\
m2 = load_model(\"{ps}\")\n\
print(m2)\n\
print((m2(x) == m(x)).all(), [n for n, p in named_params(m2)] == [n for n, p in named_params(m)])\n"
    );
    let out = run_ok("roundtrip", &src);
    assert!(out.ends_with("true true\n"), "{out}");
    assert!(out.starts_with("Sequential([Embedding(5, 4), LSTM(4, 6, return_sequences=true), Residual(Sequential([LayerNorm(6), Dense(6, 6, activation=gelu)])), MultiHeadAttention(6, 2, causal=true), Dense(6, 3, dtype=f64)])"), "{out}");

    // Every truncation and a flipped header byte: an error, never a crash.
    let bytes = std::fs::read(&p).expect("saved file");
    let bad = d.join("bad.safetensors");
    let bs = bad.to_string_lossy().to_string();
    for cut in [0, 3, 8, 20, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&bad, &bytes[..cut]).expect("write");
        let e = error_of("cut", &format!("use layers\nload_model(\"{bs}\")\n"));
        assert!(
            e.contains("ValueError") && e.contains("not a safetensors file"),
            "cut {cut}: {e}"
        );
    }
    let mut flipped = bytes.clone();
    flipped[12] ^= 0x5a;
    std::fs::write(&bad, &flipped).expect("write");
    let e = error_of("flip", &format!("use layers\nload_model(\"{bs}\")\n"));
    assert!(e.contains("Error"), "{e}");
    let e = error_of(
        "missing",
        &format!("use layers\nload_model(\"{}\")\n", d.join("none.safetensors").display()),
    );
    assert!(e.contains("IOError") && e.contains("cannot read"), "{e}");

    // load_weights: strict refuses a tensor no parameter takes; strict=false ignores it.
    let src = format!(
        "use layers\n\
m = Sequential([Embedding(5, 4), LSTM(4, 6, return_sequences=true)])\n\
try:\n    load_weights(m, \"{ps}\")\nexcept ValueError as e:\n    print(e.message)\n\
load_weights(m, \"{ps}\", strict=false)\nprint(\"ok\")\n"
    );
    let out = run_ok("strict", &src);
    assert!(
        out.contains("has a tensor '2.inner.0.bias' that no parameter of the model takes"),
        "{out}"
    );
    assert!(out.ends_with("ok\n"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn errors_say_what_was_expected_and_what_was_found() {
    let _serial = serial();
    let cases: &[(&str, &str)] = &[
        (
            "Dense(2, 3, dtype=bf16)",
            "TypeError: Dense: parameters are f32 or f64, not bf16",
        ),
        ("Dropout(1.5)", "ValueError: Dropout: p must be in [0, 1), not 1.5"),
        (
            "Dense(4, 8)(zeros((2, 5)))",
            "Dense(4, 8): expected input shape (*, 4), got (2, 5)",
        ),
        (
            "LSTM(3, 4)(zeros((2, 3)))",
            "LSTM(3, 4): expected input shape (N, T, 3), got (2, 3)",
        ),
        (
            "PositionEmbedding(4, 2)(zeros((1, 5, 2)))",
            "sequence length 5 is longer than max_len 4",
        ),
        (
            "Embedding(3, 2)(zeros((2,)))",
            "expected an integer tensor of indices, got f64",
        ),
        (
            "mse(zeros((4, 2)), zeros((4,)))",
            "mse: prediction (4, 2) and target (4,) differ",
        ),
        (
            "cross_entropy(zeros((2, 3)), tensor([0, 3]))",
            "cross_entropy: label 3 is out of range for 3 classes",
        ),
        (
            "fit(Dense(2, 1), (zeros((4, 2)), zeros((5, 1))), loss=\"mse\")",
            "fit: data X (4, 2) and y (5, 1) need equal first axes",
        ),
        (
            "fit(Dense(2, 1), (zeros((4, 2)), zeros((4, 1))), loss=\"l2\")",
            "fit: unknown loss \"l2\"",
        ),
        (
            "fit(Dense(2, 1), (zeros((4, 2)), zeros((4, 1))))",
            "fit() missing required argument 'loss'",
        ),
        (
            "fit(Dense(2, 1), (zeros((4, 2)), zeros((4, 1))), loss=\"mse\", device=\"cuda\")",
            "the cpu backend runs on device \"cpu\"",
        ),
        (
            "fit(Flatten(), (zeros((4, 2)), zeros((4, 2))), loss=\"mse\")",
            "fit: the model has no parameters to train",
        ),
        (
            "Residual(Dense(2, 3))(zeros((1, 2)))",
            "the inner layer changes the shape (1, 2) to (1, 3)",
        ),
        (
            "Sequential([1, 2])",
            "Sequential: a layer, a model or a function of one tensor was expected, not int",
        ),
        ("Adam(betas=(0.9, 1.0))", "Adam: betas must be in [0, 1)"),
        ("cosine_lr(0)", "cosine_lr: total must be >= 1, not 0"),
        ("MaxPool2d(2, padding=2)", "padding must be at most half the kernel"),
    ];
    for (code, want) in cases {
        let e = error_of("err", &format!("use layers\n{code}\n"));
        assert!(e.contains(want), "{code}:\n{e}\nshould contain: {want}");
    }
    // an optimizer belongs to one list of parameters
    let e = error_of(
        "opt",
        "use layers\no = SGD(lr=0.1)\no.step([zeros((2,))], [ones((2,))])\no.step([zeros((3,))], [ones((3,))])\n",
    );
    assert!(e.contains("belongs to another list of parameters"), "{e}");
}

#[test]
fn a_backend_chosen_at_run_time_is_checked_before_anything_runs() {
    let _serial = serial();
    let src = "use layers\nb = \"tor\" + \"ch\"\nprint(\"before\")\nfit(Dense(2, 1), (ones((4, 2)), ones((4, 1))), loss=\"mse\", backend=b)\n";
    std::env::remove_var("APSI_TORCH_PYTHON");
    std::env::set_var("APSI_HOME", temp_dir("home"));
    apsi_layers::allow(false);
    let o = Program::new("guard", src).modules(vec![apsi_layers::module()]).run();
    assert_eq!(o.out, "before\n");
    let e = o.rendered_error().expect("should fail");
    assert!(e.contains("PermissionError") && e.contains("--allow-python"), "{e}");
    apsi_layers::allow(true);
    let o = Program::new("missing", src).modules(vec![apsi_layers::module()]).run();
    let e = o.rendered_error().expect("should fail");
    assert!(
        e.contains("ModuleNotFoundError: the PyTorch backend is not installed"),
        "{e}"
    );
    assert!(e.contains("apsi pkg install torch"), "{e}");
    apsi_layers::allow(false);
}

#[test]
fn fit_takes_struct_models_datasets_of_batches_and_custom_losses() {
    let _serial = serial();
    let out = run_ok(
        "struct",
        "use layers\n\
struct Net:\n    body: Sequential\n    scale: Tensor\n    def forward(self, x):\n        return self.body(x) * self.scale\n\
seed(0)\n\
net = Net(Sequential([Dense(3, 8, activation=relu), Dense(8, 1)]), ones((1,), dtype=f32))\n\
print([n for n, p in named_params(net)])\n\
X = randn((16, 3))\ny = X.sum(axis=1, keepdims=true)\n\
batches = [(X[:8], y[:8]), (X[8:], y[8:])]\n\
h = fit(net, batches, loss=lambda p, t: ((p - t) ** 2).mean(), optimizer=SGD(lr=0.05), epochs=30)\n\
print(h.loss[-1] < h.loss[0], net.scale.item() != 1.0)\n",
    );
    assert_eq!(
        out,
        "['body.0.weight', 'body.0.bias', 'body.1.weight', 'body.1.bias', 'scale']\ntrue true\n"
    );
}

#[test]
fn fit_writes_nothing_to_standard_output() {
    let _serial = serial();
    let out = run_ok(
        "quiet",
        "use layers\nm = Dense(2, 1)\nfit(m, (ones((8, 2)), ones((8, 1))), loss=\"mse\", epochs=3, progress=true)\nevaluate(m, (ones((8, 2)), ones((8, 1))), loss=\"mse\")\npredict(m, ones((3, 2)))\n",
    );
    assert_eq!(out, "");
}

#[test]
fn torch_module_writes_python_and_weights_that_load_back() {
    let _serial = serial();
    let d = temp_dir("torch-module");
    let stem = d.join("net").to_string_lossy().to_string();
    let src = format!(
        "use layers\n\
seed(4)\n\
arch = lambda: Sequential([Embedding(6, 4), LSTM(4, 5, return_sequences=true), Residual(Sequential([LayerNorm(5), Dense(5, 5, activation=gelu)])), MultiHeadAttention(5, 1, causal=true), Flatten(), Dense(15, 2, dtype=f64), softmax])\n\
m = arch()\n\
x = tensor([[1, 2, 3], [5, 0, 4]])\n\
print(torch_module(m, \"{stem}\") == \"{stem}.py\")\n\
m2 = arch()\n\
load_weights(m2, \"{stem}.safetensors\")\n\
print((m2(x) == m(x)).all(), (load_model(\"{stem}.safetensors\")(x) == m(x)).all())\n\
doubled = [p * 2 for p in params(m)]\n\
print(torch_module(m, \"{stem}2.py\", params=doubled))\n\
load_weights(m2, \"{stem}2.safetensors\")\n\
print(all([(a == b).all() for a, b in zip(params(m2), doubled)]), all([(a == b).all() for a, b in zip(params(m2), params(m))]))\n"
    );
    let out = run_ok("torch_module", &src);
    assert_eq!(out, format!("true\ntrue true\n{stem}2.py\ntrue false\n"));
    let py = std::fs::read_to_string(format!("{stem}.py")).expect("the .py file");
    assert!(py.contains("WEIGHTS = _beside(\"net.safetensors\")"), "{py}");
    assert!(py.contains("def build():") && py.contains("def load(weights=WEIGHTS, device=\"cpu\"):"));
    for class in [
        "class Embedding(nn.Embedding)",
        "class LSTM(nn.LSTM)",
        "class Residual(nn.Module)",
        "class LayerNorm(nn.LayerNorm)",
        "class Dense(nn.Linear)",
        "class GELU(nn.GELU)",
        "class MultiHeadAttention(nn.MultiheadAttention)",
        "class Flatten(nn.Flatten)",
        "class Softmax(nn.Softmax)",
        "class Sequential(nn.Sequential)",
    ] {
        assert!(py.contains(class), "{class} missing:\n{py}");
    }
    assert!(!py.contains("class Conv2d"), "{py}");
    assert!(py.contains(
        "    return Sequential(\n        Embedding(6, 4),\n        LSTM(4, 5, return_sequences=True),\n        Residual(Sequential(\n            LayerNorm(5),\n            Dense(5, 5, activation=GELU()),\n        )),\n        MultiHeadAttention(5, 1, causal=True),\n        Flatten(),\n        Dense(15, 2, dtype=torch.float64),\n        Softmax(),\n    )\n"
    ), "{py}");
    // no temporary files are left beside them
    let mut names: Vec<String> = std::fs::read_dir(&d)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["net.py", "net.safetensors", "net2.py", "net2.safetensors"]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn torch_module_refuses_what_pytorch_cannot_run_and_writes_nothing() {
    let _serial = serial();
    let d = temp_dir("torch-module-errors");
    let stem = d.join("bad").to_string_lossy().to_string();
    let cases: &[(&str, &str)] = &[
        (
            "torch_module(Sequential([Dense(2, 2), lambda x: x * 2]), P)",
            "NotImplementedError: torch_module supports the layers, Sequential and Residual, and the functions relu, gelu, tanh, sigmoid and softmax in a Sequential; layer 1 is the function <lambda>",
        ),
        (
            "def relu(x):\n    return x\ntorch_module(Sequential([Dense(2, 2), Residual(relu)]), P)",
            "NotImplementedError: torch_module supports the layers, Sequential and Residual, and the functions relu, gelu, tanh, sigmoid and softmax in a Sequential; layer 1.inner is the function relu",
        ),
        (
            "struct Net:\n    d: Dense\n    def forward(self, x):\n        return self.d(x)\ntorch_module(Sequential([Net(Dense(2, 2))]), P)",
            "NotImplementedError: torch_module supports the layers, Sequential and Residual; layer 0 is a Net, which defines its own forward",
        ),
        (
            "torch_module(Dense(2, 3), P, params=[zeros((3, 2))])",
            "ValueError: torch_module(): the model has 2 parameters, 1 tensors were given",
        ),
        (
            "torch_module(Dense(2, 3), P, params=[zeros((2, 3)), zeros((3,))])",
            "ShapeError: torch_module(): 'weight' is (3, 2) in the model but the tensor given is (2, 3)",
        ),
        ("torch_module(Dense(2, 3), 7)", "TypeError"),
        ("torch_module(Dense(2, 3), P + \"/\")", "ValueError: torch_module: path must name a file"),
        (
            "torch_module([Dense(2, 3)], P)",
            "TypeError: torch_module() needs a model (a layer, a Sequential, or a struct with forward(self, x)), not list",
        ),
    ];
    for (code, want) in cases {
        let src = format!("use layers\nP = \"{stem}\"\n{code}\n");
        let e = error_of("torch_module_err", &src);
        assert!(e.contains(want), "{code}:\n{e}\nshould contain: {want}");
    }
    let e = error_of(
        "torch_module_missing_dir",
        &format!(
            "use layers\ntorch_module(Dense(2, 3), \"{}\")\n",
            d.join("no/such/dir/m").display()
        ),
    );
    assert!(e.contains("IOError: torch_module: cannot write"), "{e}");
    assert_eq!(
        std::fs::read_dir(&d).expect("dir").count(),
        0,
        "a refused model wrote files"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The error a user meets exporting a struct model, as rendered (pinned).
#[test]
fn torch_module_of_a_struct_model_is_not_implemented() {
    let _serial = serial();
    let e = error_of(
        "struct_model",
        "use layers\n\
struct Net:\n    body: Sequential\n    head: Dense\n\n    def forward(self, x):\n        return self.head(self.body(x))\n\n\
net = Net(Sequential([Dense(4, 8, activation=relu)]), Dense(8, 2))\n\
torch_module(net, \"net\")\n",
    );
    insta::assert_snapshot!(e);
}

/// Mixed precision on the cpu backend (LAYERS.md §5): matmul and
/// convolution operands rounded to bf16/fp16 with f32 accumulation, master
/// weights in f32; the same bits at 1 and 2 threads; fp16's loss scaling
/// skips a step whose gradients overflow; tf32 is fp32 here.
#[test]
fn mixed_precision_rounds_operands_and_fp16_scales_the_loss() {
    let _serial = serial();
    for prec in ["bf16", "fp16"] {
        let src = TRAIN.replace("seed=3)", &format!("seed=3, precision=\"{prec}\")"))
            + "print(h.precision, params(m)[0].dtype)\n";
        let one = Program::new("mp1", &src)
            .modules(vec![apsi_layers::module()])
            .threads(1)
            .run();
        let two = Program::new("mp2", &src)
            .modules(vec![apsi_layers::module()])
            .threads(2)
            .run();
        assert!(one.result.is_ok(), "{:?}", one.rendered_error());
        assert_eq!(one.out, two.out, "{prec}");
        assert!(one.out.ends_with(&format!("{prec} f32\n")), "{}", one.out);
        // Rounding happened: not the fp32 run's bits.
        assert_ne!(one.out.lines().next(), run_ok("fp32", TRAIN).lines().next(), "{prec}");
    }
    // tf32 computes in fp32 on the cpu backend (one warning on stderr).
    let tf32 = run_ok("tf32", &TRAIN.replace("seed=3)", "seed=3, precision=\"tf32\")"));
    assert_eq!(tf32.lines().next(), run_ok("fp32b", TRAIN).lines().next());
    // Operands past fp16's range are inf: every step is skipped, the weights stay.
    let out = run_ok(
        "overflow",
        "use layers\n\
m = Sequential([Dense(2, 1)])\n\
set_params(m, [tensor([[1.0, 1.0]]), tensor([0.0])])\n\
X = tensor([[1e5, 1e5], [2e5, 1e5]])\n\
y = tensor([[1.0], [2.0]])\n\
h = fit(m, (X, y), loss=\"mse\", optimizer=SGD(lr=0.1), epochs=3, batch=1, seed=0, precision=\"fp16\")\n\
print(h.loss, params(m)[0].to_list())\n\
h = fit(m, (X / 1e6, y), loss=\"mse\", optimizer=SGD(lr=0.1), epochs=1, batch=1, seed=0, precision=\"fp16\")\n\
print(params(m)[0].to_list() != [[1.0, 1.0]])\n",
    );
    assert_eq!(out, "[inf, inf, inf] [[1.0, 1.0]]\ntrue\n");
    // The cpu backend does not compute an f32 model in f64.
    let e = error_of(
        "fp64",
        "use layers\nfit(Dense(2, 1), (ones((4, 2)), ones((4, 1))), loss=\"mse\", precision=\"fp64\")\n",
    );
    assert!(
        e.contains("NotImplementedError") && e.contains("backend=\"torch\""),
        "{e}"
    );
}

/// `struct Net(Module):` makes `net(x)` run `forward`, as in PyTorch.
#[test]
fn a_module_struct_is_callable() {
    let _serial = serial();
    let out = run_ok(
        "module",
        "use layers\n\
struct Net(Module):\n    body: Dense\n    def forward(self, x):\n        return relu(self.body(x))\n\
n = Net(Dense(2, 3))\n\
x = ones((4, 2))\n\
print(n(x).shape, (n(x) == n.forward(x)).all(), num_params(n))\n\
h = fit(n, (x, ones((4, 3))), loss=\"mse\", epochs=2, seed=0)\n\
print(len(h.loss))\n",
    );
    assert_eq!(out, "(4, 3) true 9\n2\n");
    let e = error_of("no-forward", "use layers\nstruct Bad(Module):\n    a: int\nBad(1)(2)\n");
    assert!(
        e.contains("NotImplementedError: Bad is a Module without forward(self, x)"),
        "{e}"
    );
}
