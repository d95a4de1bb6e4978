#!/usr/bin/env bash
# Generates a model with flashnorm-gen, runs the flashnorm pipeline, then
# flashnorm-gpu-pipeline in each defer mode down to sm_90 cubins (ptxas), and
# prints, per mode, the launches, streams and the kernels the cubin holds.
#   check-gpu-model.sh OUT_PREFIX -- [flashnorm-gen options...]
# FLASHNORM_PIPELINE overrides the rewrite (default --flashnorm).
set -euo pipefail
out=$1
shift 2
flashnorm-gen "$@" -o "$out.mlir"
flashnorm-opt "$out.mlir" "${FLASHNORM_PIPELINE:---flashnorm}" -o "$out.rewritten.mlir"
grep -o 'flashnorm-gen: .*' "$out.mlir"
for mode in auto streams fused serial; do
  flashnorm-opt "$out.rewritten.mlir" \
    --flashnorm-gpu-pipeline="defer-mode=$mode chip=sm_90 format=bin" \
    -o "$out.$mode.mlir"
  # The cubin is an ELF object; kernel names are readable in its bytes.
  grep -q 'bin = "\\7FELF' "$out.$mode.mlir"
  kernels=$(grep -o '[a-z0-9]*_\(norm_stat\|fused_norm_proj\|proj\|post_scale_fused\|post_scale\|reduce\|host_loop\|host_op\)_[0-9]*' \
    "$out.$mode.mlir" | sed 's/^[a-z0-9]*_//; s/_[0-9]*$//' | sort -u | tr '\n' ' ')
  echo "$mode: launches=$(grep -c 'gpu.launch_func' "$out.$mode.mlir")" \
    "streams=$(grep -c 'llvm.call @mgpuStreamCreate' "$out.$mode.mlir")" \
    "cubin kernels: $kernels"
done
