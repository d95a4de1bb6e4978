#!/usr/bin/env bash
# Generates a model with flashnorm-gen, runs it before and after the
# flashnorm pipeline, and compares the outputs.
#   check-model.sh OUT_PREFIX RTOL ATOL -- [flashnorm-gen options...]
# Argument weights are folded through the prepare function;
# FLASHNORM_PIPELINE overrides the rewrite.
set -euo pipefail
out=$1 rtol=$2 atol=$3
shift 4
here=$(dirname "$0")
lower=--flashnorm-lower-to-llvm
# The JIT does not optimize (-O0 still lowers the async tasks'
# coroutines): each program runs once, on small inputs, where LLVM's -O2
# took longer than it saved.
utils="$MLIR_LIB_DIR/libmlir_runner_utils.so,$MLIR_LIB_DIR/libmlir_c_runner_utils.so"
run() { mlir-runner -O0 -e main -entry-point-result=void -shared-libs="$utils${1:-}"; }
flashnorm-gen "$@" -o "$out.mlir"
pipeline=--flashnorm
case " $* " in *" --weights=args "*) pipeline=--flashnorm=prepare-function=true ;; esac
pipeline=${FLASHNORM_PIPELINE:-$pipeline}
flashnorm-opt "$out.mlir" "$lower" | run > "$out.ref"
flashnorm-opt "$out.mlir" "$pipeline" --remarks-filter=flashnorm \
  --remark-format=emitRemark -o "$out.rewritten.mlir" 2> "$out.remarks"
flashnorm-opt "$out.rewritten.mlir" "$lower" | run > "$out.out"
# The concurrent CPU pipeline (async tasks, OpenMP threads).
flashnorm-opt "$out.rewritten.mlir" --flashnorm-cpu-pipeline |
  run ",$MLIR_LIB_DIR/libmlir_async_runtime.so,$MLIR_LIB_DIR/libomp.so" \
    > "$out.async"
grep -o 'flashnorm-gen: .*' "$out.mlir"
echo "raised=$(grep -c 'raised a' "$out.remarks" || true)" \
  "folded=$(grep -c 'Passed\] flashnorm-fold-gains' "$out.remarks" || true)" \
  "deferred=$(grep -c 'Passed\] flashnorm-defer-scale' "$out.remarks" || true)"
python3 "$here/compare-outputs.py" "$out.ref" "$out.out" --rtol "$rtol" --atol "$atol"
python3 "$here/compare-outputs.py" "$out.ref" "$out.async" --rtol "$rtol" --atol "$atol"
