#!/usr/bin/env bash
# Parallel benchmarks: 1 vs 2 threads for CPU-bound interpreted work, task
# spawn/wait cost, channel throughput. Needs `cargo build --release`.
# Targets (issue 5): speed-up >= 1.8x on 2 threads; 10,000 tasks < 50 ms;
# >= 2M channel messages/s. Last, busy_core.sh (issue 22): 1 vs 2 threads
# while another process keeps one core busy, parallel for >= 1.3x.
#
#   bench/parallel/run.sh [ROUNDS]     (default 5)
#
# The 1- and 2-thread programs run alternately, ROUNDS times each, and the
# speed-up is the ratio of the two medians: this host's single-core speed
# drifts by up to 1.4x over seconds (turbo, neighbours), and alternating puts
# both sides under the same drift. Each program prints its best of 3.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
apsi="${APSI:-$here/../../target/release/apsi}"
rounds="${1:-5}"
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for t in 1 2; do
    "$apsi" run --threads "$t" "$here/cpu.apsi" | sed "s/^/$t /" >> "$raw"
  done
done
python3 "$here/speedup_table.py" "$raw"
"$apsi" run "$here/tasks.apsi"
"$apsi" run --threads 2 "$here/channel.apsi"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
# 1 vs 2 threads while another process keeps one core busy (issue 22).
echo "--- one core busy (busy_core.sh)"
bash "$here/busy_core.sh" "$apsi" "$rounds"
