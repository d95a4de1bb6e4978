#!/usr/bin/env bash
# Everything that needs a GPU, in one go, on a fresh GPU machine with this
# repository: build (./setup.sh), the GPU tests (lit feature `gpu`: every
# example and family in each defer mode against the CPU, the 1000-step join
# stress test and its mutant, the runtime's pools, trace and graph tests),
# then the benchmark (bench/gpu/run.sh; table in bench/gpu/results.md).
#   scripts/gpu-check.sh [flashnorm-gpu-bench options]
set -uo pipefail
cd "$(dirname "$0")/.."
./setup.sh || exit 1
status=0
/usr/lib/llvm-22/bin/lit -sv build/test/Integration/gpu-run.test \
  build/test/Integration/gpu-stress-join.mlir build/test/Runtime \
  build/test/Bench || status=1
bench/gpu/run.sh "$@" || status=1
exit $status
