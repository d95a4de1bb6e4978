#!/usr/bin/env bash
# One command on a fresh GPU machine, from anywhere in the repository: builds
# the project (./setup.sh: packages if missing, configure, build into
# ./build), then the GPU benchmark, runs every configuration and prints the
# table, also written to bench/gpu/results.md.
#   bench/gpu/run.sh [flashnorm-gpu-bench options, e.g. --max-tokens=512]
# Without a GPU it compiles every configuration instead (--dry-run) and
# exits 2.
#
# Time (8 minutes allowed on a 16-core machine): a cold build is ~320 s of
# compile jobs (sum of ninja's per-step times measured here, 2 cores, -j1;
# ~165 s with both cores), so ~40-60 s on 16 (ninja runs one job per core;
# the longest single step is ~18 s), plus apt-get when packages are missing.
# The sweep: ~25 s of compiling, ptxas and host-side checks (measured here
# with a driver whose kernels do nothing), plus at most ~0.8 s of timed runs
# per configuration (~1.5 s for the 4096-token Llama up projection): under
# ~3 min for all 160.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -x /usr/local/cuda/bin/ptxas ] && ! command -v ptxas > /dev/null; then
  echo "bench/gpu/run.sh: no CUDA toolkit (ptxas): install CUDA 12.x/13 in" \
    "/usr/local/cuda first" >&2
  exit 1
fi
start=$SECONDS
./setup.sh
ninja -C build flashnorm-gpu-bench flashnorm_cuda_runtime
echo "bench/gpu/run.sh: build took $((SECONDS - start)) s"
if ! nvidia-smi -L 2> /dev/null | grep -q GPU; then
  echo "bench/gpu/run.sh: no GPU (nvidia-smi -L lists none): compiling every" \
    "configuration without running it (--dry-run)"
  build/bin/flashnorm-gpu-bench --dry-run "$@"
  echo "bench/gpu/run.sh: no GPU, no timings: every configuration compiled"
  exit 2
fi
nvidia-smi -L
build/bin/flashnorm-gpu-bench --out bench/gpu/results.md "$@"
echo "bench/gpu/run.sh: table in bench/gpu/results.md ($((SECONDS - start)) s" \
  "in all)"
