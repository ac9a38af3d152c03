#!/usr/bin/env bash
# Apsi tensor kernels against NumPy (same run, 1 and 2 threads, medians of 5).
#   bench/tensor/run.sh [rounds]      (builds target/release/apsi first)
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install --quiet numpy
cargo build --release -p apsi-cli >&2
python3 -c 'import numpy; print("numpy", numpy.__version__)'
exec python3 bench/tensor/bench.py target/release/apsi "${1:-1}"
