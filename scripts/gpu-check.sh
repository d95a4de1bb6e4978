#!/usr/bin/env bash
# Everything that needs a GPU, in one go, on a GPU machine that can also
# build the project: ./setup.sh, the GPU kit (scripts/gpu-kit.sh: every GPU
# execution check and benchmark build compiled ahead of time), then the kit's
# run.sh (checks, stress, runtime tests, benchmark, ncu; docs/GPU.md).
# A GPU machine without LLVM/MLIR runs a kit built elsewhere instead.
#   scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
./setup.sh
scripts/gpu-kit.sh build/gpu-kit
exec build/gpu-kit/run.sh
