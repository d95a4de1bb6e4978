#!/usr/bin/env bash
# Builds the project with AddressSanitizer and UndefinedBehaviorSanitizer
# into build-sanitize/ and runs the lit suite (the fixed fuzz and mutation
# seeds included) with every flashnorm tool instrumented. A report fails the
# test that triggered it. ~25 min on 2 cores (cold build).
#   scripts/sanitize.sh [lit options, e.g. -sv or a test path]
# libMLIR/libLLVM are not instrumented: container overflow checks and user
# poisoning are off (the uninstrumented allocators' annotations would be
# reported as use-after-poison), and leaks of the JIT are not errors.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-sanitize
if [ ! -f $dir/build.ninja ]; then
  cmake -G Ninja -S . -B $dir -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFLASHNORM_SANITIZE=address,undefined \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
ninja -C $dir flashnorm-opt flashnorm-gen flashnorm-run flashnorm-rounding-test \
  flashnorm-fold-checkpoint \
  FlashNormPlugin
# (Not `ninja -t targets | grep -q`: with pipefail, grep closing the pipe
# early fails the pipeline and the runtime would silently not be built.)
targets=$(ninja -C $dir -t targets all)
if grep -q '^flashnorm_cuda_runtime:' <<<"$targets"; then
  ninja -C $dir flashnorm_cuda_runtime flashnorm_cublaslt flashnorm_kit_runner_utils \
    flashnorm_fake_cuda_driver
fi
export ASAN_OPTIONS=detect_leaks=0:detect_container_overflow=0:allow_user_poisoning=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The plugin is loaded into the stock mlir-opt, which has no ASan runtime.
exec /usr/lib/llvm-22/bin/lit "${@:--sv}" $dir/test --filter-out 'Plugin/'
