# The worker side of Apsi's PyTorch backend (the signed package `torch`;
# apsi-layers' `backend="torch"`, LAYERS.md §7). It runs inside the Python
# worker of `use python` (apsi-python/src/worker.py), started on the
# package's own virtual environment, and is called with `call` requests:
# values cross with the worker's wire encoding, tensors as NumPy arrays.
#
# The model arrives as the PyTorch source `torch_module` writes (one
# nn.Module class per layer kind, and `build()`) plus its weights in
# `named_params` order. Batch order is Apsi's: `fit_epoch` gets each
# epoch's permutation, so the two backends see the same batches.
#
# A training run is a session: `fit_start` moves the data to the device
# once and returns an id, `fit_epoch` runs one epoch and synchronises with
# the host once (its figures), `fit_finish` returns the weights.

import sys
import time

ABI = 1
_sessions = {}
_next_id = [0]
_warned = set()


def _torch():
    import torch

    return torch


def _warn(text):
    if text not in _warned:
        _warned.add(text)
        sys.stderr.write("warning: " + text + "\n")
        sys.stderr.flush()


def device_of(name):
    """The device `name` asks for ("auto": cuda when PyTorch sees a GPU, else cpu)."""
    torch = _torch()
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        d = torch.device(name)
    except (RuntimeError, TypeError) as e:
        raise ValueError("device %r is not a PyTorch device name (%s)" % (name, e))
    if d.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                "device %r is not available: PyTorch %s sees no CUDA device (torch.cuda.is_available() is False)"
                % (name, torch.__version__)
            )
        if d.index is not None and d.index >= torch.cuda.device_count():
            raise ValueError(
                "device %r is not available: PyTorch sees %d CUDA device(s)" % (name, torch.cuda.device_count())
            )
    elif d.type != "cpu":
        raise ValueError("device %r is not supported by Apsi's torch backend (\"cpu\", \"cuda\", \"cuda:N\")" % name)
    return str(d)


def info(device="auto"):
    """(torch version, resolved device, python executable)."""
    torch = _torch()
    return (torch.__version__, device_of(device), sys.executable)


class _Precision:
    """How a precision name computes: parameter dtype, autocast dtype, loss scaling."""

    def __init__(self, name, device):
        torch = _torch()
        self.name = name
        self.device_type = device.split(":")[0]
        self.param = torch.float64 if name == "fp64" else torch.float32
        self.autocast = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(name)
        self.scaler = None
        if name == "tf32":
            if self.device_type == "cuda":
                torch.backends.cuda.matmul.allow_tf32 = True
                torch.backends.cudnn.allow_tf32 = True
            else:
                _warn("precision=\"tf32\" uses TF32 tensor cores, which %s does not have: computing in fp32" % device)
        elif name in ("fp32", "fp64") and self.device_type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        if name == "fp16":
            # PyTorch's defaults: 2**16, halve and skip on inf/NaN, double after 2000 good steps.
            self.scaler = torch.amp.GradScaler(self.device_type)

    def context(self):
        torch = _torch()
        if self.autocast is None:
            import contextlib

            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device_type, dtype=self.autocast)


def _model(source, names, weights, prec, device):
    torch = _torch()
    ns = {"__name__": "apsi_model", "__file__": "<apsi model>"}
    exec(compile(source, "<apsi model>", "exec"), ns)
    model = ns["build"]()
    state = {n: torch.from_numpy(w.copy()) for n, w in zip(names, weights)}
    model.load_state_dict(state, strict=True)
    model = model.to(device=device, dtype=prec.param)
    _recurrent_in_fp32(model, prec)
    return model


def _recurrent_in_fp32(model, prec):
    """oneDNN has no bf16/fp16 LSTM on CPUs: under autocast on a CPU, LSTMs
    run in fp32 (PyTorch's own autocast does the same for ops it lacks)."""
    torch = _torch()
    if prec.autocast is None or prec.device_type != "cpu":
        return
    for mod in model.modules():
        if isinstance(mod, torch.nn.LSTM):
            inner = mod.forward

            def forward(x, *args, _inner=inner, **kwargs):
                with torch.autocast(device_type="cpu", enabled=False):
                    return _inner(x.float() if x.is_floating_point() else x, *args, **kwargs)

            mod.forward = forward


def _inputs(x, prec, device):
    """Features on the device: float arrays in the compute dtype, integer ones (token ids) as int64."""
    torch = _torch()
    t = torch.from_numpy(x.copy())
    if t.is_floating_point():
        t = t.to(prec.param)
    elif t.dtype != torch.bool:
        t = t.to(torch.int64)
    return t.to(device)


def _targets(y, loss, prec, device):
    """Targets on the device: class labels (cross_entropy, or integer
    targets when no loss is computed) as int64, the rest in the compute dtype."""
    torch = _torch()
    t = torch.from_numpy(y.copy())
    labels = loss is None and not t.is_floating_point() and t.dtype != torch.bool
    if loss == "cross_entropy" or labels:
        t = t.to(torch.int64)
    else:
        t = t.to(prec.param)
    return t.to(device)


def _loss(name, pred, target):
    F = _torch().nn.functional
    if name == "cross_entropy":
        logits = pred.reshape(-1, pred.shape[-1])
        if not logits.is_floating_point() or logits.dtype in _low():
            logits = logits.float()
        return F.cross_entropy(logits, target.reshape(-1))
    if pred.dtype in _low():
        pred = pred.float()
    t = target.reshape(pred.shape).to(pred.dtype)
    if name == "mse":
        return F.mse_loss(pred, t)
    if name == "bce":
        return F.binary_cross_entropy(pred, t)
    if name == "bce_logits":
        return F.binary_cross_entropy_with_logits(pred, t)
    raise ValueError("unknown loss %r" % name)


def _low():
    torch = _torch()
    return (torch.float16, torch.bfloat16)


def _tally(metric, pred, target):
    """(sum, count) of a metric over a batch (Apsi's `tally`): the sum a
    device tensor, the count a number known on the host."""
    torch = _torch()
    p = pred.detach().to(torch.float64)
    last = p.shape[-1] if p.dim() > 0 else 1
    if metric == "accuracy":
        if last > 1 and tuple(target.shape) == tuple(p.shape[:-1]):
            right = (p.argmax(dim=-1) == target.to(torch.int64)).sum()
            return right.to(torch.float64), float(target.numel())
        t = target.reshape(p.shape).to(torch.float64)
        right = ((p >= 0.5) == (t >= 0.5)).sum()
        return right.to(torch.float64), float(p.numel())
    t = target.reshape(p.shape).to(torch.float64)
    d = p - t
    s = d.abs().sum() if metric == "mae" else (d * d).sum()
    return s, float(p.numel())


class _Tallies:
    """The metrics of one pass: sums on the device, counts on the host, so
    a batch adds no synchronisation."""

    def __init__(self, metrics, device):
        torch = _torch()
        self.metrics = list(metrics)
        self.sums = [torch.zeros((), dtype=torch.float64, device=device) for _ in self.metrics]
        self.counts = [0.0 for _ in self.metrics]

    def add(self, pred, target):
        for i, m in enumerate(self.metrics):
            total, count = _tally(m, pred, target)
            self.sums[i] = self.sums[i] + total
            self.counts[i] += count

    def means(self):
        return [total / max(count, 1.0) for total, count in zip(self.sums, self.counts)]


def _optimizer(params, opt):
    torch = _torch()
    kind = opt["kind"]
    wd = opt["weight_decay"]
    if kind == "SGD":
        return torch.optim.SGD(
            params, lr=opt["lr"], momentum=opt["momentum"], nesterov=opt["nesterov"], weight_decay=wd
        )
    if kind == "Adam":
        return torch.optim.Adam(params, lr=opt["lr"], betas=opt["betas"], eps=opt["eps"], weight_decay=wd)
    if kind == "AdamW":
        return torch.optim.AdamW(params, lr=opt["lr"], betas=opt["betas"], eps=opt["eps"], weight_decay=wd)
    raise ValueError("unknown optimizer %r" % kind)


def _lr(opt, steps, epochs):
    """apsi-layers' `Schedule::lr`: the rate after `k` epochs or steps."""
    import math

    lr = opt["lr"]
    s = opt.get("schedule")
    if s is None:
        return lr
    k = steps if s["per_step"] else epochs
    if s["kind"] == "cosine":
        total, min_lr, warmup = s["total"], s["min_lr"], s["warmup"]
        if k < warmup:
            return lr * (k + 1) / warmup
        t = max(total - warmup, 0)
        if t == 0:
            return min_lr
        j = min(k - warmup, t)
        return min_lr + (lr - min_lr) * (1.0 + math.cos(math.pi * j / t)) / 2.0
    return lr * s["gamma"] ** (k // max(s["every"], 1))


def fit_start(source, names, weights, x, y, val, job):
    """Builds the model and moves the data; returns (session id, device, torch version)."""
    torch = _torch()
    torch.set_num_threads(max(1, int(job["threads"])))
    torch.manual_seed(int(job["seed"]) & 0xFFFFFFFFFFFF)
    device = device_of(job["device"])
    prec = _Precision(job["precision"], device)
    model = _model(source, names, weights, prec, device)
    run = model
    if job["compile"]:
        run = torch.compile(model)
    s = {
        "model": model,
        "run": run,
        "prec": prec,
        "device": device,
        "loss": job["loss"],
        "batch": int(job["batch"]),
        "metrics": list(job["metrics"]),
        "x": _inputs(x, prec, device),
        "y": _targets(y, job["loss"], prec, device),
        "val": None,
        "opt": _optimizer(model.parameters(), job["optimizer"]),
        "optcfg": job["optimizer"],
        "steps": int(job["optimizer"]["steps"]),
        "epochs": int(job["optimizer"]["epochs"]),
    }
    if val is not None:
        s["val"] = (_inputs(val[0], prec, device), _targets(val[1], job["loss"], prec, device))
    _next_id[0] += 1
    _sessions[_next_id[0]] = s
    return (_next_id[0], device, torch.__version__)


def fit_epoch(sid, order):
    """One epoch over the batches `order` gives; (loss, metric values, val loss or None, val metric values, seconds)."""
    torch = _torch()
    s = _sessions[sid]
    t0 = time.perf_counter()
    model, run, prec, opt = s["model"], s["run"], s["prec"], s["opt"]
    x, y, b = s["x"], s["y"], s["batch"]
    perm = torch.from_numpy(order.copy()).to(torch.int64).to(s["device"])
    model.train()
    dev = s["device"]
    loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
    tallies = _Tallies(s["metrics"], dev)
    n = perm.shape[0]
    for k in range(0, n, b):
        idx = perm[k : k + b]
        xb, yb = x[idx], y[idx]
        lr = _lr(s["optcfg"], s["steps"], s["epochs"])
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        with prec.context():
            pred = run(xb)
            loss = _loss(s["loss"], pred, yb)
        if prec.scaler is not None:
            prec.scaler.scale(loss).backward()
            prec.scaler.step(opt)
            prec.scaler.update()
        else:
            loss.backward()
            opt.step()
        s["steps"] += 1
        rows = idx.shape[0]
        loss_sum = loss_sum + loss.detach().to(torch.float64) * rows
        tallies.add(pred, yb)
    s["epochs"] += 1
    figures = [loss_sum / max(n, 1)] + tallies.means()
    val_loss, val_metrics = None, []
    if s["val"] is not None:
        vl, vm = _score(s, s["val"][0], s["val"][1], True, s["metrics"], 256)
        figures += [vl] + vm
    values = torch.stack([f.to(torch.float64).reshape(()) for f in figures]).cpu().tolist()  # the one sync
    k = 1 + len(s["metrics"])
    if s["val"] is not None:
        val_loss, val_metrics = values[k], values[k + 1 :]
    return (values[0], values[1:k], val_loss, val_metrics, time.perf_counter() - t0)


def _score(s, x, y, with_loss, metrics, batch):
    """Mean loss (weighted by rows) and metric values over (x, y), in eval mode, as device tensors."""
    torch = _torch()
    model, prec = s["model"], s["prec"]
    model.eval()
    dev = s["device"]
    loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
    tallies = _Tallies(metrics, dev)
    n = x.shape[0]
    with torch.no_grad():
        for k in range(0, n, batch):
            xb, yb = x[k : k + batch], y[k : k + batch]
            with prec.context():
                pred = s["run"](xb)
                if with_loss:
                    loss_sum = loss_sum + _loss(s["loss"], pred, yb).to(torch.float64) * xb.shape[0]
            tallies.add(pred, yb)
    return loss_sum / max(n, 1), tallies.means()


def fit_finish(sid):
    """The trained weights as (name, NumPy array) pairs, and the optimizer's step and epoch counts."""
    s = _sessions.pop(sid)
    out = [(n, p.detach().cpu().numpy()) for n, p in s["model"].state_dict().items()]
    return (out, s["steps"], s["epochs"])


def fit_abandon(sid):
    _sessions.pop(sid, None)
    return None


def _session(source, names, weights, job):
    torch = _torch()
    torch.set_num_threads(max(1, int(job["threads"])))
    device = device_of(job["device"])
    prec = _Precision(job["precision"], device)
    model = _model(source, names, weights, prec, device)
    return {"model": model, "run": model, "prec": prec, "device": device, "loss": job.get("loss")}, device


def predict(source, names, weights, x, job):
    """The model's outputs on `x` (eval mode, batches of job["batch"]), as a NumPy array; and the device."""
    torch = _torch()
    s, device = _session(source, names, weights, job)
    model, prec = s["model"], s["prec"]
    model.eval()
    xs = _inputs(x, prec, device)
    outs = []
    b = int(job["batch"])
    with torch.no_grad():
        for k in range(0, xs.shape[0], b):
            with prec.context():
                o = model(xs[k : k + b])
            outs.append(o.float() if o.dtype in _low() else o)
    with torch.no_grad():
        out = torch.cat(outs) if outs else model(xs)
    return (out.detach().cpu().numpy(), device)


def evaluate(source, names, weights, x, y, job):
    """(loss or None, metric values) over (x, y)."""
    torch = _torch()
    s, device = _session(source, names, weights, job)
    loss_name = job.get("loss")
    xs = _inputs(x, s["prec"], device)
    ys = _targets(y, loss_name, s["prec"], device)
    loss, metrics = _score(s, xs, ys, loss_name is not None, list(job["metrics"]), int(job["batch"]))
    values = torch.stack([loss] + metrics).cpu().tolist()  # the one sync
    return (values[0] if loss_name is not None else None, values[1:], device)


def check(source, names, weights, x, r, job):
    """Forward and backward of one model: the output, and the gradients of
    (out * r).sum() with respect to the input (None for integer inputs) and
    to every parameter ((name, array) pairs), as NumPy arrays in float64."""
    torch = _torch()
    s, device = _session(source, names, weights, job)
    model, prec = s["model"], s["prec"]
    model.eval()
    xs = _inputs(x, prec, device)
    if xs.is_floating_point():
        xs.requires_grad_(True)
    with prec.context():
        out = model(xs)
    rt = torch.from_numpy(r.copy()).to(device=device, dtype=out.dtype)
    (out * rt).sum().backward()
    gx = xs.grad.detach().to(torch.float64).cpu().numpy() if xs.is_floating_point() else None
    gp = []
    for n, p in model.named_parameters():
        gp.append((n, p.grad.detach().to(torch.float64).cpu().numpy() if p.grad is not None else None))
    return (out.detach().to(torch.float64).cpu().numpy(), gx, gp, device, torch.__version__)
