#!/usr/bin/env bash
# Runs a model through --flashnorm, then on the CPU (flashnorm-cpu-pipeline)
# and on the GPU in each defer mode (flashnorm-gpu-pipeline, the project's
# CUDA runtime), and compares each GPU output with the CPU's.
#   check-gpu-run.sh OUT_PREFIX RTOL ATOL MODEL.mlir
#   check-gpu-run.sh OUT_PREFIX RTOL ATOL -- [flashnorm-gen options...]
set -euo pipefail
out=$1 rtol=$2 atol=$3
shift 3
here=$(dirname "$0")
if [ "$1" = "--" ]; then
  shift
  flashnorm-gen "$@" -o "$out.mlir"
  model=$out.mlir
else
  model=$1
fi
libs="$MLIR_LIB_DIR/libmlir_runner_utils.so,$MLIR_LIB_DIR/libmlir_c_runner_utils.so"
flashnorm-opt "$model" --flashnorm -o "$out.rewritten.mlir"
flashnorm-opt "$out.rewritten.mlir" --flashnorm-cpu-pipeline |
  mlir-runner -O2 -e main -entry-point-result=void \
    -shared-libs="$libs,$MLIR_LIB_DIR/libmlir_async_runtime.so" > "$out.cpu"
for mode in streams fused serial; do
  flashnorm-opt "$out.rewritten.mlir" \
    --flashnorm-gpu-pipeline="defer-mode=$mode" |
    mlir-runner -e main -entry-point-result=void \
      -shared-libs="$libs,$FLASHNORM_LIB_DIR/libflashnorm_cuda_runtime.so" \
      > "$out.$mode"
  echo -n "$mode: "
  python3 "$here/compare-outputs.py" "$out.cpu" "$out.$mode" \
    --rtol "$rtol" --atol "$atol"
done
