#!/usr/bin/env bash
# One command: build and run the CPU norm + projection benchmark, then plot
# latency against tokens for serial, flashnorm, the projection alone and
# OpenBLAS.
#   bench/cpu/run.sh [--quick] [--stored] [--shape=DTYPE:M:K:N]... [--rounds=R]
#                                  (needs libopenblas-dev and gnuplot-nox)
# The options go to flashnorm-cpu-bench: --quick, fewer shapes (K = 2048,
# M in {1, 128}); --stored, only the table of weights in their stored
# layout; --shape=f32|bf16:M:K:N (repeatable), only these rows of the first
# table and no other table; --rounds=R, R interleaved rounds instead of 5.
# Writes build/bench-cpu.txt and docs/cpu-latency.png (a plot of the first
# table's rows: empty with --stored).
set -euo pipefail
cd "$(dirname "$0")/../.."
for p in libopenblas-dev gnuplot-nox; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || {
    sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get install -y "$p"
  }
done
cmake -S . -B build > /dev/null
ninja -C build flashnorm-cpu-bench
build/bin/flashnorm-cpu-bench "$@" | tee build/bench-cpu.txt

# One panel per (dtype, K, N): median latency of each form against tokens.
data=$(mktemp)
trap 'rm -f "$data"' EXIT
awk '($1 == "f32" || $1 == "bf16") && NF == 14' build/bench-cpu.txt > "$data"
shapes=$(awk '{print $1, $3, $4}' "$data" | sort -u | sort -k1,1r -k2,2n -k3,3n |
  awk '{print $1 ":" $2 "x" $3}')
n=$(echo "$shapes" | wc -l)
{
  echo "set terminal pngcairo size 1200,$((320 * ((n + 1) / 2))) font ',10'"
  echo "set output 'docs/cpu-latency.png'"
  echo "set multiplot layout $(((n + 1) / 2)),2 title 'norm + projection on the CPU (median ms, log scales)'"
  echo "set logscale xy; set xlabel 'tokens'; set ylabel 'ms'; set key left top; set grid"
  echo "pick(t, k, n) = (strcol(1) eq t && column(3) == k && column(4) == n) ? column(2) : 1/0"
  for s in $shapes; do
    t=${s%%:*} kn=${s#*:}
    k=${kn%x*} nn=${kn#*x}
    x="(pick('$t', $k, $nn))"
    echo "set title '$t, K = $k, N = $nn'"
    echo "plot '$data' using $x:10 with linespoints title 'serial', \\"
    echo "     '' using $x:9 with linespoints title 'flashnorm', \\"
    echo "     '' using $x:7 with linespoints title 'projection alone', \\"
    echo "     '' using $x:8 with linespoints title 'OpenBLAS 2 threads', \\"
    echo "     '' using $x:5 with linespoints dt 2 title 'projection alone, 1 core', \\"
    echo "     '' using $x:6 with linespoints dt 2 title 'OpenBLAS 1 thread'"
  done
  echo "unset multiplot"
} | gnuplot
echo "plot: docs/cpu-latency.png"
