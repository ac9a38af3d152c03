#!/usr/bin/env bash
# Parallel benchmarks: 1 vs 2 threads for CPU-bound interpreted work, task
# spawn/wait cost, channel throughput. Needs `cargo build --release`.
# Targets (issue 5): speed-up >= 1.8x on 2 threads; 10,000 tasks < 50 ms;
# >= 2M channel messages/s. On a shared 2-core machine the speed-up is capped
# by whatever else runs; run it on an idle machine.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
apsi="${APSI:-$here/../../target/release/apsi}"
echo "== 1 thread";  "$apsi" run --threads 1 "$here/cpu.apsi" | tee /tmp/apsi-par-1.txt
echo "== 2 threads"; "$apsi" run --threads 2 "$here/cpu.apsi" | tee /tmp/apsi-par-2.txt
paste /tmp/apsi-par-1.txt /tmp/apsi-par-2.txt | awk '{ printf "%-16s speed-up %.2fx\n", $1, $2 / $4 }'
"$apsi" run "$here/tasks.apsi"
"$apsi" run --threads 2 "$here/channel.apsi"
