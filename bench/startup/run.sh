#!/usr/bin/env bash
# Start-up with and without the compile cache (issue 20): hello.apsi, and a
# generated 5,000-line program (gen_program.py: many functions and structs)
# cold (--no-cache: parse, check, compile) and from the cache (a hit).
#
#   bench/startup/run.sh [APSI] [RUNS] [ROUNDS]
#
# APSI defaults to target/fastrel/apsi. Uses a private APSI_HOME, so the
# user's cache is untouched. Installs hyperfine with apt if it is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
apsi="${1:-$here/../../target/fastrel/apsi}"
runs="${2:-40}"
command -v hyperfine >/dev/null || apt-get install -y hyperfine >/dev/null
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export APSI_HOME="$tmp/home"
python3 "$here/gen_program.py" 5000 > "$tmp/big.apsi"
cp "$here/../interp/hello.apsi" "$tmp/hello.apsi"
"$apsi" run "$tmp/big.apsi" > /dev/null      # fills the cache
"$apsi" run "$tmp/hello.apsi" > /dev/null
# Rounds of a few runs each, the four commands in turn every round, so a
# slow spell of a shared machine falls on all of them alike; the medians
# are over every run of every round.
rounds="${3:-8}"
per=$(( (runs + rounds - 1) / rounds ))
for r in $(seq "$rounds"); do
  hyperfine -N -w 2 -r "$per" --export-json "$tmp/startup-$r.json" \
    -n "hello (cache hit)" "$apsi run $tmp/hello.apsi" \
    -n "hello (--no-cache)" "$apsi run --no-cache $tmp/hello.apsi" \
    -n "5k lines cold (--no-cache)" "$apsi run --no-cache $tmp/big.apsi" \
    -n "5k lines (cache hit)" "$apsi run $tmp/big.apsi" > /dev/null
done
python3 - "$tmp" <<'PY'
import glob, json, statistics, sys
r = {}
for f in sorted(glob.glob(sys.argv[1] + "/startup-*.json")):
    for x in json.load(open(f))["results"]:
        r.setdefault(x["command"], []).extend(x["times"])
for name, t in r.items():
    print(f"{name:28} median {statistics.median(t)*1e3:7.2f} ms  min {min(t)*1e3:7.2f} ms  ({len(t)} runs)")
cold = statistics.median(r["5k lines cold (--no-cache)"])
hit = statistics.median(r["5k lines (cache hit)"])
hello = statistics.median(r["hello (cache hit)"])
print(f"cold / hit = {cold / hit:.2f}x; hit - hello = {(hit - hello) * 1e3:.2f} ms")
PY
