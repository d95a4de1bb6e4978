#!/usr/bin/env bash
# Checks the numbers of the kernels flashnorm-gpu-kernels builds, on a machine
# without a GPU: a model goes through --flashnorm, then the GPU pipeline's
# first steps in each defer mode, every gpu.launch turned into loops
# (flashnorm-test-gpu-launch-to-loops), then the CPU lowering (the async
# tasks of streams mode run on the MLIR async runtime); each output is
# compared with the original, unrewritten program's.
#   check-gpu-kernels-on-cpu.sh OUT_PREFIX RTOL ATOL MODEL.mlir
#   check-gpu-kernels-on-cpu.sh OUT_PREFIX RTOL ATOL -- [flashnorm-gen options...]
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
libs="$MLIR_LIB_DIR/libmlir_runner_utils.so,$MLIR_LIB_DIR/libmlir_c_runner_utils.so,$MLIR_LIB_DIR/libmlir_async_runtime.so"
run() { mlir-runner -O2 -e main -entry-point-result=void -shared-libs="$libs"; }
flashnorm-opt "$model" --flashnorm-lower-to-llvm | run > "$out.ref"
flashnorm-opt "$model" --flashnorm -o "$out.rewritten.mlir"
for mode in streams fused serial; do
  schedule= fused=false
  case $mode in
    streams) schedule="func.func(flashnorm-async-schedule{projection-tasks=false keep-marks=true})," ;;
    fused) fused=true ;;
  esac
  flashnorm-opt "$out.rewritten.mlir" --pass-pipeline="builtin.module(\
func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),\
func.func(flashnorm-async-mark),flashnorm-lower-to-linalg,\
convert-elementwise-to-linalg,one-shot-bufferize{bufferize-function-boundaries \
function-boundary-type-conversion=identity-layout-map},${schedule}\
func.func(flashnorm-gpu-kernels{fused=$fused},canonicalize,cse,\
flashnorm-test-gpu-launch-to-loops))" |
    flashnorm-opt --flashnorm-cpu-buffers-to-llvm=vectorize=false | run \
      > "$out.$mode"
  echo -n "$mode: "
  python3 "$here/compare-outputs.py" "$out.ref" "$out.$mode" \
    --rtol "$rtol" --atol "$atol"
done
