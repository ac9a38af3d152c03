#!/usr/bin/env bash
# Package-manager speed bars (issue 6):
#   1. installing a 50 MB package from the loopback registry takes at most
#      1.5x the time of copying the same bytes and hashing them;
#   2. 20 small packages install in under 2 s (parallel downloads).
# Usage: bash bench/pkg/run.sh [RUNS]   (builds release binaries first)
# Prints one line per measurement and a JSON summary on the last line.
set -euo pipefail
RUNS=${1:-5}
cd "$(dirname "$0")/../.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p apsi-cli -p apsi-registry
APSI=$PWD/target/release/apsi
REG=$PWD/target/release/apsi-registry
W=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$W"' EXIT

$REG keygen --dir "$W/keys" --name root >/dev/null
$REG root "$W/reg" --root-key "$W/keys/root.pub" --sign "$W/keys/root.key" >/dev/null

# A 50 MB library package of incompressible bytes (a native backend is mostly that).
mkdir -p "$W/src-big"
printf 'name = "big"\nversion = "1.0.0"\nkind = "library"\n' >"$W/src-big/apsi-package.toml"
echo 'n = 1' >"$W/src-big/big.apsi"
head -c 50000000 /dev/urandom >"$W/src-big/payload.bin"
$REG build "$W/src-big" --out "$W/built" >/dev/null
NAMES=()
for i in $(seq -w 0 19); do
  d="$W/src-small$i"; mkdir -p "$d"
  printf 'name = "small%s"\nversion = "1.0.0"\nkind = "library"\n' "$i" >"$d/apsi-package.toml"
  printf 'def f():\n    return %s\n' "$i" >"$d/small$i.apsi"
  $REG build "$d" --out "$W/built" >/dev/null
  NAMES+=("small$i")
done
$REG index "$W/reg" "$W"/built/*.tar.gz >/dev/null
$REG sign "$W/reg" --key "$W/keys/root.key" >/dev/null

$REG serve "$W/reg" --addr 127.0.0.1:0 >"$W/serve.log" &
SERVER=$!
for _ in $(seq 100); do grep -q listening "$W/serve.log" 2>/dev/null && break; sleep 0.05; done
URL=$(sed -n 's/^listening on //p' "$W/serve.log")
export APSI_REGISTRY=$URL APSI_REGISTRY_ROOT=$W/reg/1.root.json
unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy

now() { python3 -c 'import time; print(time.perf_counter())'; }

ARCHIVE=$W/reg/dl/big-1.0.0-any.tar.gz
SIZE=$(stat -c %s "$ARCHIVE")
base=(); inst=(); small=()
for r in $(seq "$RUNS"); do
  rm -f "$W/copy"; sync
  t0=$(now); cp "$ARCHIVE" "$W/copy"; sha256sum "$W/copy" >/dev/null; t1=$(now)
  base+=("$(python3 -c "print($t1-$t0)")")
  # Same starting state as the copy above: the previous run's files are
  # removed (as `rm -f copy` does) and written back first. Keeping every run's
  # 100 MB (archive + tree) made each install write into never-touched memory,
  # which on this VM costs up to 40x more than reusing freed page cache.
  rm -rf "$W/home-big"; sync
  export APSI_HOME=$W/home-big
  t0=$(now); $APSI pkg install big >/dev/null; t1=$(now)
  inst+=("$(python3 -c "print($t1-$t0)")")
  export APSI_HOME=$W/home-small-$r
  t0=$(now); $APSI pkg install "${NAMES[@]}" >/dev/null; t1=$(now)
  small+=("$(python3 -c "print($t1-$t0)")")
  echo "run $r: copy+hash ${base[-1]} s, install 50 MB ${inst[-1]} s, install 20 small ${small[-1]} s"
done
python3 - "$SIZE" "$RUNS" "${base[*]}" "${inst[*]}" "${small[*]}" <<'PY'
import json, statistics, sys
size, runs = int(sys.argv[1]), int(sys.argv[2])
b, i, s = ([float(x) for x in a.split()] for a in sys.argv[3:6])
print(json.dumps({
    "archive_bytes": size, "runs": runs,
    "copy_hash_best_s": round(min(b), 4), "install_50mb_best_s": round(min(i), 4),
    "ratio_best": round(min(i) / min(b), 3),
    "copy_hash_median_s": round(statistics.median(b), 4), "install_50mb_median_s": round(statistics.median(i), 4),
    "ratio_median": round(statistics.median(i) / statistics.median(b), 3), "bar_ratio": 1.5,
    "install_20_small_best_s": round(min(s), 4), "install_20_small_median_s": round(statistics.median(s), 4),
    "bar_20_small_s": 2.0,
}))
PY
