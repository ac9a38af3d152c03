#!/usr/bin/env python3
"""`use layers` against PyTorch on the CPU, in one run, alternating (issue 18).

    python3 bench/layers/run.py APSI [REPS] [--models mlp,cnn,lstm,transformer]
                                [--threads 1,2] [--python PYTHON_WITH_TORCH]

For each model and thread count, REPS rounds (default 3), each a fresh Apsi
process (`twins.apsi` of ../shared/bench/7_layers, `apsi run --threads N`)
and a fresh PyTorch process (`models.train` there, `torch.set_num_threads(N)`),
in alternating order. A run's figure is the median of its epochs' seconds;
the table gives the median over the rounds, the ratio PyTorch / Apsi (above
1: Apsi is faster) and both final test accuracies. Same model, data, batch
(32), optimizer (Adam), epochs, float32. PyTorch's epoch time covers the
training loop only, as Apsi's `History.seconds` does.
"""
import argparse, json, os, re, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
ANCHOR = os.path.normpath(os.path.join(ROOT, "..", "shared", "bench", "7_layers"))


def clean_env(threads):
    env = dict(os.environ)
    # These slow NumPy's OpenBLAS down on some machines here; give the anchor its best chance.
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(k, None)
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), PYTHONDONTWRITEBYTECODE="1")
    return env


def run_apsi(apsi, model, threads):
    out = subprocess.run([apsi, "run", "--threads", str(threads), "twins.apsi", model], cwd=ANCHOR,
                         capture_output=True, text=True, env=clean_env(threads))
    if out.returncode != 0:
        raise SystemExit(f"apsi failed on {model}:\n{out.stderr}")
    line = out.stdout.strip().splitlines()[-1]
    secs = json.loads(re.search(r"epoch_s=(\[[^\]]*\])", line).group(1))
    acc = float(re.search(r"test_acc=([0-9.]+)", line).group(1))
    return statistics.median(secs), acc


def run_torch(python, model, threads):
    code = ("import json, models; "
            f"print(json.dumps(models.train({model!r}, seed=0, threads={threads})))")
    out = subprocess.run([python, "-c", code], cwd=ANCHOR, capture_output=True, text=True,
                         env=clean_env(threads))
    if out.returncode != 0:
        raise SystemExit(f"torch failed on {model}:\n{out.stderr}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return statistics.median(res["epoch_s"]), res["test_acc"][-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("apsi")
    ap.add_argument("reps", nargs="?", type=int, default=3)
    ap.add_argument("--models", default="mlp,cnn,lstm,transformer")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--python", default=os.path.expanduser("~/.cache/apsi-torch-venv/bin/python"))
    a = ap.parse_args()
    apsi = os.path.abspath(a.apsi)
    ver = subprocess.run([a.python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                         text=True).stdout.strip()
    print(f"PyTorch {ver} ({a.python}); load average before: {os.getloadavg()[0]:.2f}")
    print("| model | threads | Apsi s/epoch | PyTorch s/epoch | PyTorch / Apsi | Apsi acc | PyTorch acc |")
    print("|---|---|---|---|---|---|---|")
    for m in a.models.split(","):
        for t in map(int, a.threads.split(",")):
            ours, theirs = [], []
            for r in range(a.reps):
                if r % 2 == 0:
                    ours.append(run_apsi(apsi, m, t)); theirs.append(run_torch(a.python, m, t))
                else:
                    theirs.append(run_torch(a.python, m, t)); ours.append(run_apsi(apsi, m, t))
            o = statistics.median(s for s, _ in ours)
            p = statistics.median(s for s, _ in theirs)
            print(f"| {m} | {t} | {o:.4f} | {p:.4f} | {p / o:.2f}x | {ours[-1][1]:.4f} | {theirs[-1][1]:.4f} |",
                  flush=True)


if __name__ == "__main__":
    main()
