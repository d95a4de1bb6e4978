#!/usr/bin/env bash
# Runs a model through --flashnorm and then the GPU pipeline in each defer
# mode, and compares each output with a reference:
#   cpu: the kernels flashnorm-gpu-kernels builds, run on the CPU (a machine
#        without a GPU checks their numbers): flashnorm-gpu-to-kernels, every
#        gpu.launch turned into loops (flashnorm-test-gpu-launch-to-loops),
#        the CPU lowering (gemm=codegen unless GPU_KERNEL_OPTIONS says
#        otherwise: each flashnorm.gemm_lt then runs as loops computing
#        what cuBLASLt computes), bf16 fragments moved as their bits
#        (flashnorm-test-bf16-vectors-as-bits: x86 has no bf16 vectors);
#        the async tasks of streams mode run on the MLIR
#        async runtime. Reference: the original, unrewritten program.
#   gpu: the whole pipeline on a GPU with the project's CUDA runtime.
#        Reference: the rewritten program on the CPU pipeline.
# GPU_KERNEL_OPTIONS (cpu only) adds options to flashnorm-gpu-to-kernels
# (e.g. tensor-cores=false: the same model through the SIMT kernels;
# gemm=cublaslt: its projections through cuBLASLt; the last value wins).
#   check-gpu-modes.sh cpu|gpu OUT_PREFIX RTOL ATOL MODEL.mlir
#   check-gpu-modes.sh cpu|gpu OUT_PREFIX RTOL ATOL -- [flashnorm-gen options]
set -euo pipefail
target=$1 out=$2 rtol=$3 atol=$4
shift 4
here=$(dirname "$0")
pipeline=--flashnorm
if [ "$1" = "--" ]; then
  shift
  flashnorm-gen "$@" -o "$out.mlir"
  model=$out.mlir
  # Argument weights are folded through the prepare function, which then
  # runs on the GPU too.
  case " $* " in *" --weights=args "*) pipeline=--flashnorm=prepare-function=true ;; esac
else
  model=$1
fi
# FLASHNORM_PIPELINE: the rewrite's options for a model file (e.g.
# --flashnorm=prepare-function=true for argument weights a norm needs
# centered or scaled).
pipeline=${FLASHNORM_PIPELINE:-$pipeline}
utils="$MLIR_LIB_DIR/libmlir_runner_utils.so,$MLIR_LIB_DIR/libmlir_c_runner_utils.so"
# On the CPU the JIT does not optimize: each program runs once, on small
# inputs, and LLVM's -O2 (fully unrolling the loops over a block's threads)
# took longer than the run it would speed up: over a quarter of this
# script's time.
case $target in cpu) jit=-O0 ;; *) jit=-O2 ;; esac
run() { mlir-runner $jit -e main -entry-point-result=void -shared-libs="$utils,$1"; }
async=$MLIR_LIB_DIR/libmlir_async_runtime.so,$MLIR_LIB_DIR/libomp.so
flashnorm-opt "$model" "$pipeline" -o "$out.rewritten.mlir"
case $target in
  cpu) flashnorm-opt "$model" --flashnorm-lower-to-llvm | run "$async" ;;
  gpu) flashnorm-opt "$out.rewritten.mlir" --flashnorm-cpu-pipeline |
         run "$async" ;;
  *) echo "check-gpu-modes.sh: target must be cpu or gpu" >&2; exit 2 ;;
esac > "$out.ref"
for mode in auto streams fused serial; do
  if [ "$target" = cpu ]; then
    # One process: a model's weights are printed and parsed once.
    flashnorm-opt "$out.rewritten.mlir" \
      --flashnorm-gpu-to-kernels="defer-mode=$mode gemm=codegen ${GPU_KERNEL_OPTIONS:-}" \
      --flashnorm-test-gpu-launch-to-loops \
      --flashnorm-cpu-buffers-to-llvm=vectorize=false \
      --flashnorm-test-bf16-vectors-as-bits |
      run "$async" > "$out.$mode"
  else
    flashnorm-opt "$out.rewritten.mlir" \
      --flashnorm-gpu-pipeline="defer-mode=$mode" |
      run "$FLASHNORM_LIB_DIR/libflashnorm_cuda_runtime.so,$FLASHNORM_LIB_DIR/libflashnorm_cublaslt.so" > "$out.$mode"
  fi
  echo -n "$mode: "
  python3 "$here/compare-outputs.py" "$out.ref" "$out.$mode" \
    --rtol "$rtol" --atol "$atol"
done
