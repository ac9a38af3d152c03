#!/bin/sh
# Runs every example that draws a picture and copies its pictures from out/
# into images/ (the copies examples/README.md shows). Run from anywhere:
#   sh examples/update_images.sh [path/to/apsi]
set -e
cd "$(dirname "$0")"
apsi="${1:-../target/release/apsi}"
for f in 13_nbody 14_heat 15_logreg 16_quantize 17_pipeline 18_mandelbrot; do
  "$apsi" run "$f.apsi" >/dev/null
done
mkdir -p images
for p in nbody_energy heat logreg quantize pipeline mandelbrot; do
  cp "out/$p.png" "images/$p.png"
done
echo "images/ updated"
