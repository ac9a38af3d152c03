#!/usr/bin/env bash
# @native benchmarks against C (gcc -O3 -march=native, strict and -ffast-math,
# one thread and OpenMP on 2 threads) in the same run: sum of squares over
# 100M f64, mandelbrot 1024x1024x256, N-body 1000 bodies x 10 steps.
# Needs `cargo build --release` (which also builds the LLVM plugin) and gcc.
# Prints JSON lines, then a table of medians with ratios to strict C.
# usage: run.sh [KERNEL ...]   (default: sumsq mandel nbody); APSI=path picks the binary.
# Then bars.py prints the ratios the issue holds Apsi to.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
apsi="${APSI:-$here/../../target/release/apsi}"
src="${KERNELS_C:-$here/../../../shared/bench/2_native/kernels.c}"
out="$here/../build/native"; mkdir -p "$out"   # bench/build/ is git-ignored
gcc -O3 -march=native "$src" -o "$out/k_strict" -lm
gcc -O3 -march=native -ffast-math "$src" -o "$out/k_fast" -lm
gcc -O3 -march=native -fopenmp "$src" -o "$out/k_omp" -lm
gcc -O3 -march=native -ffast-math -fopenmp "$src" -o "$out/k_omp_fast" -lm
kernels="${*:-sumsq mandel nbody}"
res="$out/results.jsonl"; : > "$res"
for k in $kernels; do
  reps=5; [ "$k" = nbody ] && reps=15
  "$out/k_strict" "C gcc -O3 -march=native" "$k" $reps | tee -a "$res"
  "$out/k_fast" "C + -ffast-math" "$k" $reps | tee -a "$res"
  OMP_NUM_THREADS=2 "$out/k_omp" "C + OpenMP" "$k" $reps | tee -a "$res"
  OMP_NUM_THREADS=2 "$out/k_omp_fast" "C + OpenMP + -ffast-math" "$k" $reps | tee -a "$res"
  "$apsi" run --threads 2 "$here/$k.apsi" | tee -a "$res"
done
python3 "$here/../report.py" --baseline "C gcc -O3 -march=native" "$res"
python3 "$here/bars.py" "$res"
