#!/usr/bin/env bash
# One command: build and run the CPU norm + projection benchmark, then plot
# latency against tokens for serial, flashnorm and the projection alone.
#   bench/cpu/run.sh [--quick]     (needs libopenblas-dev and gnuplot-nox)
# Writes build/bench-cpu.txt and docs/cpu-latency.png.
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

# One panel per (K, N): median latency of each mode against tokens.
data=$(mktemp)
trap 'rm -f "$data"' EXIT
awk '$1 ~ /^[0-9]+$/ && NF == 10' build/bench-cpu.txt > "$data"
shapes=$(awk '{print $2 "x" $3}' "$data" | sort -u | sort -t x -n -k1,1 -k2,2)
n=$(echo "$shapes" | wc -l)
{
  echo "set terminal pngcairo size 1200,$((320 * ((n + 1) / 2))) font ',10'"
  echo "set output 'docs/cpu-latency.png'"
  echo "set multiplot layout $(((n + 1) / 2)),2 title 'norm + projection on the CPU (f32, median ms, log scales)'"
  echo "set logscale xy; set xlabel 'tokens'; set ylabel 'ms'; set key left top; set grid"
  for s in $shapes; do
    k=${s%x*} nn=${s#*x}
    echo "set title 'K = $k, N = $nn'"
    echo "plot '$data' using (\$2==$k && \$3==$nn ? \$1 : 1/0):4 with linespoints title 'serial', \\"
    echo "     '' using (\$2==$k && \$3==$nn ? \$1 : 1/0):5 with linespoints title 'flashnorm', \\"
    echo "     '' using (\$2==$k && \$3==$nn ? \$1 : 1/0):6 with linespoints title 'projection alone', \\"
    echo "     '' using (\$2==$k && \$3==$nn ? \$1 : 1/0):7 with linespoints title 'OpenBLAS'"
  done
  echo "unset multiplot"
} | gnuplot
echo "plot: docs/cpu-latency.png"
