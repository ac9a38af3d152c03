#!/usr/bin/env bash
# 2-thread speed-up over 1 thread while another process keeps one core busy
# (issue 22): an interpreted `parallel for` reduction and a `pmap`
# (busy_core.apsi). The bar: parallel_for at least 1.3x (fixed chunks, one
# per thread, give about 1.0x: the thread that shares its core with the busy
# process holds the loop up).
#
#   bench/parallel/busy_core.sh APSI [ROUNDS] [SCALE]
#
#   APSI    the apsi binary to measure (e.g. target/release/apsi)
#   ROUNDS  1- and 2-thread runs each, alternating (default 5)
#   SCALE   size factor for busy_core.apsi (default 1; 0.1 for a debug build)
#   BUSY=0  in the environment: no busy process (the idle speed-up, to compare)
#
# Method: apsi runs pinned to two CPUs A and B (`taskset -c A,B`; the first two
# CPUs this shell may use), and a shell busy loop (`while :; do :; done`) runs
# pinned to A for the whole measurement. A 1-thread run gets B to itself; the
# two threads of a 2-thread run share A and B with the busy loop. Without
# taskset both run unpinned (the same thing on a 2-CPU machine).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
apsi="${1:?usage: busy_core.sh APSI [ROUNDS] [SCALE]}"
rounds="${2:-5}"
scale="${3:-1}"
raw=$(mktemp)
busy_pid=""
cleanup() {
  if [ -n "$busy_pid" ]; then kill "$busy_pid" 2>/dev/null || true; fi
  rm -f "$raw"
}
trap cleanup EXIT

pin_apsi=()
pin_busy=()
if command -v taskset >/dev/null 2>&1; then
  # The CPUs this shell may use, as a list (taskset -cp prints "…: 0-3,6").
  cpus=$(taskset -cp $$ | sed 's/.*: //' | tr ',' '\n' | while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done)
  a=$(echo "$cpus" | sed -n 1p)
  b=$(echo "$cpus" | sed -n 2p)
  if [ -n "$b" ]; then
    pin_apsi=(taskset -c "$a,$b")
    pin_busy=(taskset -c "$a")
  fi
fi
echo "apsi: $apsi   pinned: ${pin_apsi[*]:-no}   scale: $scale   rounds: $rounds"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${BUSY:-1}" != 0 ]; then
  ( exec "${pin_busy[@]}" sh -c 'while :; do :; done' ) &
  busy_pid=$!
  echo "busy process: pid $busy_pid ${pin_busy[*]:-(unpinned)}"
  sleep 0.5
else
  echo "busy process: none (BUSY=0)"
fi
for r in $(seq "$rounds"); do
  for t in 1 2; do
    "${pin_apsi[@]}" "$apsi" run --threads "$t" "$here/busy_core.apsi" "$scale" | sed "s/^/$t /" >> "$raw"
  done
done
python3 "$here/speedup_table.py" "$raw"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
