//! `torch_module` against PyTorch itself. These tests need a Python with
//! `torch` and `safetensors`, named by `APSI_TORCH_PYTHON`
//! (`APSI_TORCH_PYTHON=/path/to/python cargo test -p apsi-layers --test
//! torch_export -- --nocapture`); without one they print why and pass.
//!
//! An Apsi program builds a model of every layer kind with a seed, gives it
//! random weights (so biases and LayerNorm's affine part are not their
//! trivial initial values), computes `predict` on fixed inputs and saves
//! inputs and outputs as `.npy` (`use data`), the model with
//! `torch_module` and with `save_model`. A Python script then imports each
//! generated `.py`, calls `load()`, runs the inputs and compares: max
//! absolute difference below 1e-5 for f32 models, 1e-10 for f64 ones.

use apsi_testkit::Program;
use std::path::Path;
use std::process::Command;

/// The Python to use, or `None` (with a line saying why) to skip when
/// `APSI_TORCH_PYTHON` is not set.
fn torch_python() -> Option<String> {
    let py = match std::env::var("APSI_TORCH_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => {
            eprintln!(
                "skipped: APSI_TORCH_PYTHON is not set; set it to a Python with torch and safetensors to compare torch_module with PyTorch"
            );
            return None;
        }
    };
    match Command::new(&py)
        .args(["-c", "import torch, safetensors.torch"])
        .output()
    {
        Ok(o) if o.status.success() => Some(py),
        // Named but unusable: a failure, not a skip (CI names it after
        // installing PyTorch, and a broken install must not pass).
        Ok(o) => {
            let why = String::from_utf8_lossy(&o.stderr);
            panic!(
                "APSI_TORCH_PYTHON={py} cannot import torch and safetensors: {}",
                why.trim().lines().last().unwrap_or("")
            );
        }
        Err(e) => panic!("APSI_TORCH_PYTHON={py} does not run: {e}"),
    }
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("apsi-torch-export-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// One model: its name, the Apsi expression that builds it, the input
/// expressions (several for `mha(q, k, v)`), and whether it computes in f64.
struct Case {
    name: &'static str,
    model: &'static str,
    inputs: &'static [&'static str],
    f64: bool,
}

const X45: &[&str] = &["randn((4, 5), dtype=f32)"];
const SEQ: &[&str] = &["randn((3, 6, 4), dtype=f32)"];
const TOKENS: &[&str] = &["tensor([[1, 2, 3, 0, 9], [4, 4, 7, 8, 5], [0, 1, 2, 3, 4]])"];

const CASES: &[Case] = &[
    Case {
        name: "dense",
        model: "Dense(5, 7)",
        inputs: X45,
        f64: false,
    },
    Case {
        name: "dense_relu",
        model: "Dense(5, 7, activation=relu)",
        inputs: X45,
        f64: false,
    },
    Case {
        name: "dense_gelu",
        model: "Dense(5, 7, activation=gelu)",
        inputs: X45,
        f64: false,
    },
    Case {
        name: "dense_tanh",
        model: "Dense(5, 7, activation=\"tanh\")",
        inputs: X45,
        f64: false,
    },
    Case {
        name: "dense_sigmoid",
        model: "Dense(5, 7, activation=sigmoid)",
        inputs: X45,
        f64: false,
    },
    Case {
        name: "dense_softmax",
        model: "Dense(5, 7, activation=softmax, bias=false)",
        inputs: X45,
        f64: false,
    },
    Case {
        name: "dense_f64_input_3d",
        model: "Dense(5, 3)",
        inputs: &["randn((2, 3, 5))"],
        f64: false,
    },
    Case {
        name: "functions",
        model: "Sequential([Dense(5, 6), relu, Dense(6, 6), gelu, Dense(6, 6), tanh, Dense(6, 6), sigmoid, Dense(6, 3), softmax])",
        inputs: X45,
        f64: false,
    },
    Case {
        name: "conv_pool_flatten",
        model: "Sequential([Conv2d(2, 4, 3, padding=1, activation=relu), MaxPool2d(2), Conv2d(4, 3, (3, 2), stride=(2, 1), padding=(1, 0), activation=gelu), MaxPool2d(3, stride=1, padding=1), Conv2d(3, 2, 1, bias=false), Flatten(), Dense(12, 5)])",
        inputs: &["randn((2, 2, 8, 8), dtype=f32)"],
        f64: false,
    },
    Case {
        name: "maxpool_strided",
        model: "Sequential([MaxPool2d((3, 2), stride=(2, 1)), Flatten()])",
        inputs: &["randn((2, 3, 7, 5), dtype=f32)"],
        f64: false,
    },
    Case {
        name: "dropout",
        model: "Sequential([Dense(5, 8), Dropout(0.5), Dense(8, 2)])",
        inputs: X45,
        f64: false,
    },
    Case {
        name: "embedding",
        model: "Sequential([Embedding(10, 6), Flatten(), Dense(30, 2)])",
        inputs: TOKENS,
        f64: false,
    },
    Case {
        name: "position_embedding_layer_norm",
        model: "Sequential([PositionEmbedding(8, 6), LayerNorm(6), LayerNorm(6, eps=0.001)])",
        inputs: &["randn((2, 5, 6), dtype=f32)"],
        f64: false,
    },
    Case {
        name: "lstm_last",
        model: "LSTM(4, 5)",
        inputs: SEQ,
        f64: false,
    },
    Case {
        name: "lstm_sequences",
        model: "LSTM(4, 5, return_sequences=true)",
        inputs: SEQ,
        f64: false,
    },
    Case {
        name: "attention",
        model: "MultiHeadAttention(8, 2)",
        inputs: &["randn((2, 5, 8), dtype=f32)"],
        f64: false,
    },
    Case {
        name: "attention_causal",
        model: "MultiHeadAttention(8, 4, causal=true)",
        inputs: &["randn((2, 5, 8), dtype=f32)"],
        f64: false,
    },
    Case {
        name: "attention_no_bias",
        model: "Attention(6, 3, bias=false)",
        inputs: &["randn((3, 4, 6), dtype=f32)"],
        f64: false,
    },
    Case {
        name: "attention_qkv_causal",
        model: "MultiHeadAttention(8, 2, causal=true)",
        inputs: &[
            "randn((2, 3, 8), dtype=f32)",
            "randn((2, 5, 8), dtype=f32)",
            "randn((2, 5, 8), dtype=f32)",
        ],
        f64: false,
    },
    Case {
        name: "residual",
        model: "Residual(Sequential([LayerNorm(6), Dense(6, 6, activation=gelu)]))",
        inputs: &["randn((3, 4, 6), dtype=f32)"],
        f64: false,
    },
    Case {
        name: "transformer",
        model: "Sequential([Embedding(10, 8), PositionEmbedding(6, 8), Residual(Sequential([LayerNorm(8), MultiHeadAttention(8, 2, causal=true)])), Residual(Sequential([LayerNorm(8), Dense(8, 16, activation=gelu), Dropout(0.1), Dense(16, 8)])), LSTM(8, 6, return_sequences=true), Residual(relu), Flatten(), Dense(30, 3, dtype=f64), softmax])",
        inputs: TOKENS,
        f64: false,
    },
    Case {
        name: "all_f64",
        model: "Sequential([LSTM(3, 5, return_sequences=true, dtype=f64), MultiHeadAttention(5, 1, causal=true, dtype=f64), LayerNorm(5, dtype=f64), PositionEmbedding(4, 5, dtype=f64), Flatten(), Dense(20, 4, activation=gelu, dtype=f64)])",
        inputs: &["randn((2, 4, 3))"],
        f64: true,
    },
    Case {
        name: "conv_f64",
        model: "Sequential([Conv2d(1, 3, 3, stride=2, dtype=f64, activation=tanh), MaxPool2d(2), Flatten(), Dense(12, 2, dtype=f64)])",
        inputs: &["randn((2, 1, 9, 9))"],
        f64: true,
    },
];

/// The start of the program: `case(name, m, xs)` writes one model's files.
const PROGRAM: &str = r#"use layers
use data
D = "{DIR}/"

# N(0, 1/fan_in) weights (outputs of order one) and N(0, 1) biases
def case(name, m, xs):
    set_params(m, [randn(p.shape) / sqrt(p.size // p.shape[0]) for p in params(m)])
    y = predict(m, xs[0]) if len(xs) == 1 else m(xs[0], xs[1], xs[2])
    for i, x in enumerate(xs):
        save_tensor(D + name + "_x" + str(i) + ".npy", x)
    save_tensor(D + name + "_y.npy", y)
    save_model(m, D + name + "_saved.safetensors")
    assert torch_module(m, D + name) == D + name + ".py"
    if len(xs) == 1:
        ps = [p * -1.5 + 0.25 for p in params(m)]
        torch_module(m, D + name + "_other.py", params=ps)
        save_tensor(D + name + "_other_y.npy", apply(m, ps, xs[0]))

"#;

/// The Apsi program that writes every case's files into `dir`.
fn program(dir: &Path) -> String {
    let d = dir.to_string_lossy();
    let mut src = PROGRAM.replace("{DIR}", &d);
    for (i, c) in CASES.iter().enumerate() {
        let inputs: Vec<String> = c.inputs.iter().map(|s| s.to_string()).collect();
        src.push_str(&format!(
            "seed({i})\ncase(\"{}\", {}, [{}])\n",
            c.name,
            c.model,
            inputs.join(", ")
        ));
    }
    src.push_str("print(\"written\")\n");
    src
}

/// Compares every case with PyTorch; prints `name max_diff tol` lines.
const CHECK: &str = r#"
import ast, importlib.util, sys
import torch, safetensors.torch

torch.manual_seed(0)
D = sys.argv[1]
failed = []


def npy(path):
    raw = open(path, "rb").read()
    assert raw[:6] == b"\x93NUMPY", path
    if raw[6] == 1:
        n, start = int.from_bytes(raw[8:10], "little"), 10
    else:
        n, start = int.from_bytes(raw[8:12], "little"), 12
    header = ast.literal_eval(raw[start:start + n].decode("latin1"))
    assert not header["fortran_order"], path
    dtype = {"<f4": torch.float32, "<f8": torch.float64, "<i8": torch.int64, "<i4": torch.int32}[header["descr"]]
    data = bytearray(raw[start + n:])
    return torch.frombuffer(data, dtype=dtype).reshape(header["shape"]).clone()


def module(name):
    spec = importlib.util.spec_from_file_location("apsi_" + name, D + name + ".py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def imports(name):
    tree = ast.parse(open(D + name + ".py").read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add(node.module)
    return found


def diff(y, ref, name):
    if y.dtype != ref.dtype or tuple(y.shape) != tuple(ref.shape):
        failed.append(f"{name}: PyTorch gives {y.dtype} {tuple(y.shape)}, Apsi {ref.dtype} {tuple(ref.shape)}")
        return float("inf")
    return (y.double() - ref.double()).abs().max().item() if y.numel() else 0.0


for line in open(D + "cases.txt"):
    name, nx, tol = line.split()
    nx, tol = int(nx), float(tol)
    xs = [npy(f"{D}{name}_x{i}.npy") for i in range(nx)]
    ref = npy(D + name + "_y.npy")
    if imports(name) != {"torch", "safetensors.torch"}:
        failed.append(f"{name}: the file imports {sorted(imports(name))}")
    gen = module(name)
    m = gen.load()
    if m.training:
        failed.append(f"{name}: load() left the module in training mode")
    with torch.no_grad():
        y = m(*xs)
        worst = main = diff(y, ref, name)
        # for scale: how far each f32 result is from the model computed in f64
        exact = gen.load().double()(*[x.double() if x.is_floating_point() else x for x in xs])
    rounding = f"f64 reference: Apsi {diff(ref.double(), exact, name):.1e}, PyTorch {diff(y.double(), exact, name):.1e}"
    # the weights: as named_params names them, in the shapes build() makes
    weights = safetensors.torch.load_file(D + name + ".safetensors")
    fresh = gen.build()
    shapes = {k: tuple(v.shape) for k, v in fresh.state_dict().items()}
    if shapes != {k: tuple(v.shape) for k, v in weights.items()}:
        failed.append(f"{name}: build() has {shapes}, the file {sorted(weights)}")
    # a save_model file loads strictly into build(), and holds the same tensors
    saved = safetensors.torch.load_file(D + name + "_saved.safetensors")
    fresh.load_state_dict(saved, strict=True)
    for k, v in weights.items():
        if not torch.equal(saved[k], v):
            failed.append(f"{name}: save_model and torch_module differ in {k}")
    if nx == 1:
        # params=: other values, loaded by the other file's load() and by load(weights=...)
        other_ref = npy(D + name + "_other_y.npy")
        other = module(name + "_other").load(device="cpu")
        again = gen.load(weights=D + name + "_other.safetensors")
        with torch.no_grad():
            d_other = max(diff(other(*xs), other_ref, name + " (params=)"),
                          diff(again(*xs), other_ref, name + " (load(weights=))"))
        rounding += f"; params= {d_other:.1e}"
        worst = max(worst, d_other)
    ok = worst < tol
    if not ok:
        failed.append(f"{name}: max abs difference {worst:.3g} >= {tol:g}")
    size = ref.double().abs().max().item()
    print(f"{name} {main:.1e} < {tol:g}  (largest |output| {size:.3g}; {rounding}) {'ok' if ok else 'FAIL'}")

print(f"torch {torch.__version__}")
for f in failed:
    print("FAILED", f)
sys.exit(1 if failed else 0)
"#;

#[test]
fn torch_module_matches_pytorch_for_every_layer_kind() {
    let Some(py) = torch_python() else { return };
    let dir = temp_dir("all");
    let o = Program::new("torch_export", &program(&dir))
        .modules(vec![apsi_layers::module(), apsi_data::module()])
        .run();
    assert!(o.result.is_ok(), "{:?}\n{}", o.rendered_error(), o.out);
    assert_eq!(o.out, "written\n");
    let manifest: String = CASES
        .iter()
        .map(|c| {
            format!(
                "{} {} {}\n",
                c.name,
                c.inputs.len(),
                if c.f64 { "1e-10" } else { "1e-5" }
            )
        })
        .collect();
    std::fs::write(dir.join("cases.txt"), manifest).expect("manifest");
    std::fs::write(dir.join("check.py"), CHECK).expect("script");
    let out = Command::new(&py)
        .arg(dir.join("check.py"))
        .arg(format!("{}/", dir.display()))
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}");
    assert!(out.status.success(), "PyTorch disagrees:\n{stdout}\n{stderr}");
    assert_eq!(
        stdout.lines().filter(|l| l.ends_with(" ok")).count(),
        CASES.len(),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
