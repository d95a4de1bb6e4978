#!/usr/bin/env bash
# Pass time of the whole `flashnorm` pipeline on generated Llama-style models
# at hidden 2048 (bf16 weights as dense_resource) for 1, 8 and 32 layers, and
# the share of it spent folding weights. A benchmark, not a test: it prints a
# table and the per-layer times, so linear growth is visible in one run.
#   bench/pipeline/run.sh [LAYERS...]      (default: 1 8 32)
# Needs about 6 GB of free disk in ${TMPDIR:-/tmp} and 12 GB of memory for
# 32 layers.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/bin/flashnorm-gen ] || ninja -C build flashnorm-gen flashnorm-opt
layers=("$@")
[ ${#layers[@]} -gt 0 ] || layers=(1 8 32)
dir=$(mktemp -d "${TMPDIR:-/tmp}/flashnorm-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT

printf '%-7s %10s %9s %9s %10s %9s %10s %12s\n' layers file_MB parse_s \
  print_s passes_s fold_s fold_share passes_s/layer
for l in "${layers[@]}"; do
  f="$dir/llama-$l.mlir"
  build/bin/flashnorm-gen --family=llama --flavor=linalg --layers="$l" \
    --hidden=2048 --heads=16 --tokens=4 --dtype=bf16 -o "$f"
  sync # Let the written file reach the disk before timing.
  timing=$(build/bin/flashnorm-opt "$f" --flashnorm --mlir-timing \
    --mlir-timing-display=list -o /dev/null 2>&1)
  wall() { # wall seconds of the timer named $1 (the second time column)
    echo "$timing" | sed -nE "s/^ *[0-9.]+ +\( *[0-9.]+%\) +([0-9.]+) +\( *[0-9.]+%\) +$1\$/\1/p" |
      head -n 1
  }
  total=$(wall Total) parse=$(wall Parser) out=$(wall Output)
  fold=$(wall FoldGains)
  awk -v l="$l" -v mb="$(($(stat -c %s "$f") / 1000000))" -v t="$total" \
    -v p="$parse" -v o="$out" -v fo="$fold" 'BEGIN {
      passes = t - p - o
      printf "%-7d %10d %9.2f %9.2f %10.3f %9.3f %9.1f%% %12.4f\n",
             l, mb, p, o, passes, fo, 100 * fo / passes, passes / l }'
  rm -f "$f"
done
