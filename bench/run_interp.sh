#!/usr/bin/env bash
# Interpreter speed, start-up and memory of Apsi against CPython 3.11 and
# Lua 5.4, all in one run on this machine (ratios, not absolute times).
# usage: bench/run_interp.sh [REPS] [ROUNDS]   (defaults 5 and 3; needs a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-5}
ROUNDS=${2:-3}
APSI=${APSI:-target/release/apsi}
ANCHORS=../shared/bench/1_interp
OUT=bench/results
mkdir -p "$OUT"
[ -x "$APSI" ] || cargo build --release -q
need() { command -v "$1" >/dev/null || { echo "installing $2" >&2; (apt-get update -qq && apt-get install -y -qq "$2") >/dev/null; }; }
need lua5.4 lua5.4
need hyperfine hyperfine
RAW="$OUT/interp.local.jsonl"
: > "$RAW"
# One benchmark at a time, Apsi, CPython and Lua back to back, each in its
# own process timing REPS repetitions after a warm-up (the anchors' method),
# ROUNDS times; the table shows the median of all ROUNDS x REPS samples.
# This host's speed drifts by up to 1.8x over tens of seconds, and not
# equally for every program; taking turns per benchmark puts the three
# implementations under the same drift (see bench/interp/turns.py).
echo "== interpreter micro-benchmarks (median of $ROUNDS rounds x $REPS, taking turns; load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
[ -f "$ANCHORS/interp.py" ] || echo "note: $ANCHORS not found; Apsi figures only" >&2
python3 bench/interp/turns.py "$APSI" "$ROUNDS" "$REPS" >> "$RAW"
python3 bench/report.py "$RAW"
echo
echo "== start-up (hyperfine -N, 40 runs)" >&2
VENV=bench/build/venv-clean
[ -x $VENV/bin/python3 ] || python3 -m venv --without-pip $VENV
hyperfine -N --warmup 5 --runs 40 --export-json "$OUT/startup.local.json" "$APSI run bench/interp/hello.apsi" "$VENV/bin/python3 -c pass" "lua5.4 -e ''" >/dev/null 2>&1 || true
python3 - "$OUT/startup.local.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['command']:48} median {r['median'] * 1e3:5.2f} ms  mean {r['mean'] * 1e3:5.2f} ms  min {r['min'] * 1e3:5.2f} ms")
PY
echo
echo "== memory: list of 10M ints (peak RSS)" >&2
/usr/bin/time -v "$APSI" run bench/interp/biglist.apsi 2>&1 | grep -E "Maximum resident|^[0-9]" || true
/usr/bin/time -v python3 -c "xs = list(range(10000000)); print(len(xs), xs[-1])" 2>&1 | grep -E "Maximum resident" | sed 's/^/cpython: /' || true
