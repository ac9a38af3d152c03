#!/usr/bin/env bash
# Apsi tensor kernels against NumPy (same run, 1 and 2 threads), then matmul
# from 32 to 2048 (matmul.py; see README.md).
#   bench/tensor/run.sh [rounds]      (builds target/release/apsi first)
#   PYTHON=/path/to/python bench/tensor/run.sh   (a Python with numpy, and
#   threadpoolctl to name NumPy's kernel; default python3)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-python3}"
"$PY" -c 'import numpy' 2>/dev/null || "$PY" -m pip install --quiet numpy
cargo build --release -p apsi-cli >&2
"$PY" -c 'import numpy; print("numpy", numpy.__version__)'
"$PY" bench/tensor/bench.py target/release/apsi "${1:-1}"
exec "$PY" bench/tensor/matmul.py --apsi target/release/apsi --python "$PY" --rounds "${1:-3}"
