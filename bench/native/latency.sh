#!/usr/bin/env bash
# First-call compile latency of @native functions: runs the differential
# corpus (40+ functions) with APSI_NATIVE_TIME=1 and reports the median and
# the maximum per-function compile time (IR lowering + LLVM O3 + JIT), and
# the one-time load of the LLVM plugin (included in the first function's time).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
apsi="${APSI:-$here/../../target/release/apsi}"
APSI_NATIVE_TIME=1 "$apsi" run --threads 2 "$here/../../tests/native/differential.apsi" 2>&1 >/dev/null \
  | python3 -c '
import re, statistics, sys
ms = []; load = None
for line in sys.stdin:
    m = re.search(r"compiled .* in ([0-9.]+) ms .*plugin load ([0-9.]+) ms", line)
    if m:
        ms.append(float(m.group(1))); load = float(m.group(2))
if not ms:
    sys.exit("no compile times reported")
print(f"{len(ms)} compiles: median {statistics.median(ms):.1f} ms, max {max(ms):.1f} ms, first (with the plugin load of {load:.1f} ms) {ms[0]:.1f} ms")
'
