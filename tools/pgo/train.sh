#!/usr/bin/env bash
# The training runs of the profile-guided release build (tools/build-release):
# an instrumented `apsi` runs these programs and LLVM lays the release
# build out for what they did most.
#
# usage: tools/pgo/train.sh APSI
#
# The corpus is the examples, the spec tests, and the object, compatibility
# and interpreter micro-benchmarks, each once at a small size: the language
# as programs use it. The whole-program benchmarks (bench/programs) are
# left out on purpose: they measure what the profile does for programs it
# has not seen (bench/README.md, stop 59). Failures are expected (spec
# tests of errors, `@native` without its plugin) and ignored; only the
# profile matters.
set -uo pipefail
cd "$(dirname "$0")/../.."
apsi=$(realpath "$1")
# A compile cache of its own: the first pass compiles, the second loads.
APSI_HOME=$(mktemp -d)
export APSI_HOME
trap 'rm -rf "$APSI_HOME"' EXIT
run() { timeout 120 "$apsi" run "$@" >/dev/null 2>&1 </dev/null; }
for _ in 1 2; do
  for f in examples/*.apsi tests/spec/*.apsi; do
    # shellcheck disable=SC2046
    run "$f" $(sed -n 's/^# argv: //p' "$f")
  done
done
(cd bench/objects && run objects.apsi all 100000 1)
for b in "method call" "dunder +" "generator step" "set lookup" "sum(genexp)" "yield from 10 deep" "sum(generator)"; do
  (cd bench/compat && run compat.apsi "$b" 200000 1)
done
(cd bench/interp && run interp.apsi 1)
exit 0
