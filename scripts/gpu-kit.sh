#!/usr/bin/env bash
# Compiles, ahead of time and on this machine, everything the GPU checks and
# the GPU benchmark run, into one folder that a GPU machine without LLVM/MLIR
# runs with one command (DIR/run.sh; docs/GPU.md):
#   checks/   the examples and every model family, an executable per defer
#             mode (auto, streams, fused, serial), each with its CPU reference
#             output (the rewritten program on the CPU pipeline)
#   stress/   the 1000-step recurrent join stress test (streams, fused; graph
#             mode runs the streams build) and its mutant without the join
#   runtime/  the runtime's pool, trace and graph tests with their check lines
#   bench/    one shared object per benchmark build (bench/gpu/configs.py)
#   lib/      the CUDA runtime, its cuBLASLt entry point and the runner
#             helpers: all the programs need besides libcuda and libcublasLt
#   tools/    bench.py, compare-outputs.py, filecheck.py, load-build (the
#             stub check's loader of a benchmark build)
# Every program is flashnorm-opt -> mlir-translate -> llc -> cc, linked
# against the driver stub; the real driver is loaded where it runs.
#   scripts/gpu-kit.sh [DIR]      (default build/gpu-kit; needs ./setup.sh)
# Also writes DIR.tar.xz, the form to copy: a check's four builds hold the
# same weights and, where two modes build the same kernels, the same
# cubins, which xz's dictionary (64 MiB at -9, more than any check's
# folder) stores once. Prints both sizes and fails when the archive is
# over 32 MiB. FLASHNORM_KIT_BENCH=sample compiles a quarter of the
# benchmark's builds, every configuration at one shape in turn (configs.py
# --sample), and the importer-form decode check at 2 of its 28 layers: what
# CI builds and starts; a GPU machine gets the whole kit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kit=${1:-$root/build/gpu-kit}
build=${FLASHNORM_BUILD_DIR:-$root/build}
llvm=/usr/lib/llvm-22/bin
cuda=${CUDA_ROOT:-/usr/local/cuda}
jobs=${FLASHNORM_KIT_JOBS:-$(nproc)}
case ${FLASHNORM_KIT_BENCH:-all} in
  all) sample=() decode_layers=28 ;;
  sample) sample=(--sample) decode_layers=2 ;;
  *) echo "gpu-kit: FLASHNORM_KIT_BENCH is all or sample, not '$FLASHNORM_KIT_BENCH'" >&2
    exit 1 ;;
esac
limit_mib=32

for f in "$build/bin/flashnorm-opt" "$build/bin/flashnorm-gen" \
  "$build/lib/libflashnorm_cuda_runtime.so" \
  "$build/lib/libflashnorm_kit_runner_utils.so"; do
  [ -e "$f" ] || { echo "gpu-kit: $f is missing: run ./setup.sh" >&2; exit 1; }
done
[ -x "$cuda/bin/ptxas" ] ||
  { echo "gpu-kit: no CUDA toolkit at $cuda (ptxas)" >&2; exit 1; }
stub=$cuda/lib64/stubs/libcuda.so
[ -e "$stub" ] || stub=$cuda/targets/x86_64-linux/lib/stubs/libcuda.so

start=$SECONDS
rm -rf "$kit" "$kit.tar.xz"
mkdir -p "$kit"/{checks,stress,runtime,bench,lib,tools,obj}
kit=$(cd "$kit" && pwd)
cp "$build"/lib/libflashnorm_cuda_runtime.so "$build"/lib/libflashnorm_kit_runner_utils.so "$kit/lib/"
[ -e "$build/lib/libflashnorm_cublaslt.so" ] &&
  cp "$build/lib/libflashnorm_cublaslt.so" "$kit/lib/"
cp "$root/bench/gpu/bench.py" "$root/bench/gpu/configs.py" \
  "$root/test/compare-outputs.py" "$root/scripts/kit/filecheck.py" \
  "$kit/tools/"
cp "$root/scripts/kit/run.sh" "$kit/run.sh"
# The entry point every check executable calls: the module's main is renamed
# (void main would leave the exit status undefined).
printf '%s\n' 'void flashnorm_kit_main(void);' \
  'int main(void) { flashnorm_kit_main(); return 0; }' > "$kit/obj/main.c"
cc -O2 -c "$kit/obj/main.c" -o "$kit/obj/main.o"
# What run.sh --stub loads each benchmark build with (as bench.py does: the
# runtime first, global), in a process of its own per build: it exits at
# cuInit. (A C program: an interpreter's start-up per build was most of
# the check's time.)
cc -O2 "$root/scripts/kit/load-build.c" -o "$kit/tools/load-build" -ldl

export PATH="$build/bin:$llvm:$PATH" CUDA_ROOT=$cuda kit stub

# LLVM-dialect module on stdin -> DIR-relative program $1 ("exe" or "so").
link() {
  local kind=$1 out=$2 obj
  obj=$kit/obj/$(echo "$out" | tr / _)
  mlir-translate --mlir-to-llvmir -o "$obj.ll"
  llc -O2 -filetype=obj -relocation-model=pic "$obj.ll" -o "$obj.o"
  # lib/ relative to the program: one ../ per folder in its kit path.
  local up=${out//[^\/]/} rpath
  rpath=\$ORIGIN/${up//\//../}lib
  local libs=(-L"$kit/lib" -lflashnorm_cuda_runtime -Wl,-rpath,"$rpath")
  grep -q mgpuFlashNormGemmLt "$obj.ll" && libs+=(-lflashnorm_cublaslt)
  if [ "$kind" = exe ]; then
    objcopy --redefine-sym main=flashnorm_kit_main "$obj.o"
    cc "$obj.o" "$kit/obj/main.o" -o "$kit/$out" "${libs[@]}" \
      -lflashnorm_kit_runner_utils "$stub" -lm
  else
    cc -shared -Wl,--no-undefined "$obj.o" -o "$kit/$out" "${libs[@]}" "$stub"
  fi
  rm -f "$obj.ll" "$obj.o"
}
export -f link

runner_libs=$llvm/../lib/libmlir_runner_utils.so,$llvm/../lib/libmlir_c_runner_utils.so,$llvm/../lib/libmlir_async_runtime.so,$llvm/../lib/libomp.so
# Unoptimized (-O0 still lowers the async tasks' coroutines): a reference
# runs once, on small inputs, where LLVM's -O2 takes longer than it saves.
cpu_run() {
  mlir-runner -O0 -e main -entry-point-result=void -shared-libs="$runner_libs"
}
export runner_libs
export -f cpu_run

# One correctness check: NAME then a model file or "-- flashnorm-gen options";
# FLASHNORM_OPTIONS adds --flashnorm options (the reference is the rewritten
# program), GPU_OPTIONS flashnorm-gpu-pipeline options to every mode's build.
check() {
  local name=$1 dir=$kit/checks/$1 model
  shift
  mkdir -p "$dir"
  if [ "$1" = "--" ]; then
    shift
    flashnorm-gen "$@" -o "$dir/model.mlir"
    model=$dir/model.mlir
  else
    model=$1
  fi
  flashnorm-opt "$model" "--flashnorm${FLASHNORM_OPTIONS:+=$FLASHNORM_OPTIONS}" \
    -o "$dir/rewritten.mlir"
  flashnorm-opt "$dir/rewritten.mlir" --flashnorm-cpu-pipeline | cpu_run \
    > "$dir/ref.txt"
  for mode in auto streams fused serial; do
    flashnorm-opt "$dir/rewritten.mlir" \
      --flashnorm-gpu-pipeline="defer-mode=$mode chip=sm_90 format=bin ${GPU_OPTIONS:-}" |
      link exe "checks/$name/$mode"
  done
  rm -f "$dir/model.mlir" "$dir/rewritten.mlir"
}
export -f check

# The stress test: reference from the unrewritten program (the lit test's).
stress() {
  local src=$root/test/Integration/gpu-stress-join.mlir dir=$kit/stress
  flashnorm-opt "$src" --flashnorm-lower-to-llvm | cpu_run > "$dir/ref.txt"
  flashnorm-opt "$src" --flashnorm -o "$dir/rewritten.mlir"
  # Generated kernels: through cuBLASLt (64 rows) the statistic would run
  # on the main stream, with no join to stress.
  for mode in streams fused; do
    flashnorm-opt "$dir/rewritten.mlir" \
      --flashnorm-gpu-pipeline="defer-mode=$mode gemm=codegen" |
      link exe "stress/$mode"
  done
  flashnorm-opt "$dir/rewritten.mlir" \
    --flashnorm-gpu-to-streams="defer-mode=streams gemm=codegen" |
    flashnorm-opt --flashnorm-test-drop-join |
    flashnorm-opt --flashnorm-gpu-streams-to-llvm=verify=false |
    link exe stress/mutant
  rm -f "$dir/rewritten.mlir"
}
export root
export -f stress

# A runtime test: the stock lowering of test/Runtime/lit.local.cfg's
# %gpu-lower, the test file itself kept for its check lines.
runtime_test() {
  local name=$1 src=$root/test/Runtime/$1.mlir
  mlir-opt "$src" --pass-pipeline='builtin.module(nvvm-attach-target{chip=sm_80 features=+ptx80},gpu.module(convert-gpu-to-nvvm),convert-scf-to-cf,gpu-to-llvm,gpu-module-to-binary{format=isa},convert-to-llvm,reconcile-unrealized-casts)' |
    link exe "runtime/$name"
  cp "$src" "$kit/runtime/$name.checks"
}
export -f runtime_test

bench_build() {
  local name=$1 options=$2
  # One process for both pipelines: 224 builds (56 sampled), each start of the tool and
  # print and parse of the module between them costs.
  flashnorm-opt "$kit/obj/programs/$name.mlir" --flashnorm \
    --flashnorm-gpu-pipeline="$options" | link so "bench/$name.so"
}
export -f bench_build

python3 "$root/bench/gpu/configs.py" programs "$kit/obj/programs" ${sample[@]+"${sample[@]}"}
cp "$kit/obj/programs/configs.json" "$kit/bench/"

# Every job, one line each, run $jobs at a time; a failing job fails the kit.
{
  # Decode steps as a PyTorch importer writes them: token ids through an
  # embedding, KV-cache rows written by scf.for nests of memref.store into
  # the cache arguments (kernels), attention over the cache. The 28-layer
  # Qwen2 of gpu-models.test (DeepSeek-R1-Distill-Qwen-1.5B's form,
  # narrowed), its argument weights folded by the prepare function, which
  # runs on the GPU too: the longest job, first, beside the others.
  echo "FLASHNORM_OPTIONS=prepare-function=true check qwen2-decode -- --family=qwen2 --style=torch-mlir --decode --cache-write=store-loop --weights=args --tokens=1 --layers=$decode_layers"
  echo "stress"
  echo "runtime_test pools"
  echo "runtime_test trace-graphs"
  for example in llama-block llama-2layers gpt2-tosa-2layers; do
    echo "check $example $root/examples/$example.mlir"
  done
  echo "check llama -- --family=llama --flavor=linalg --layers=2"
  echo "check llama-tosa -- --family=llama --flavor=tosa --layers=2"
  echo "check qwen2 -- --family=qwen2 --flavor=tosa --layers=2"
  echo "check gemma -- --family=gemma --flavor=linalg --layers=2"
  echo "check gpt2-linalg -- --family=gpt2 --flavor=linalg --layers=2"
  echo "check llama-bf16 -- --family=llama --flavor=linalg --dtype=bf16 --layers=2"
  # A bf16 LayerNorm decode step: the fused kernels' epilogues subtract the
  # mean's share (bf16 weights cannot carry the centering).
  echo "check gpt2-bf16-decode -- --family=gpt2 --flavor=linalg --dtype=bf16 --layers=2 --tokens=1"
  # The same with argument weights, folded by the prepare function on the
  # GPU: each LayerNorm's bias through the weights and the folded weights'
  # column sums go into arguments it appends.
  echo "FLASHNORM_OPTIONS=prepare-function=true check gpt2-bf16-args -- --family=gpt2 --flavor=linalg --dtype=bf16 --weights=args --layers=2 --tokens=1"
  # A bf16 decode step as torch-mlir lowers a bf16 checkpoint: casting
  # generics around each norm (raised, then read in bf16), bf16 caches
  # written by memref.store loops, weights folded by the prepare function.
  echo "FLASHNORM_OPTIONS=prepare-function=true check qwen2-bf16-decode -- --family=qwen2 --style=torch-mlir --decode --dtype=bf16 --cache-write=store-loop --weights=args --tokens=1 --layers=2"
  # Prefill: 64 rows take cuBLASLt (gemm=auto), the post-scales in its
  # epilogue (row-scaled, f32 and bf16 results).
  echo "check llama-prefill -- --family=llama --flavor=linalg --layers=2 --tokens=64"
  echo "check llama-bf16-prefill -- --family=llama --flavor=linalg --dtype=bf16 --layers=2 --tokens=64"
  # A prefill on generated kernels: 14 of its projections take the staged
  # tensor-core kernel (cp.async, ldmatrix), a prompt of 100 tokens, so
  # that each has a whole block of rows and a last one padded (its copies
  # clamped, its stores masked).
  echo "GPU_OPTIONS=gemm=codegen check llama-bf16-prefill-codegen -- --family=llama --flavor=linalg --dtype=bf16 --layers=2 --tokens=100"
  # Weights stored K x N (arguments) on the staged kernel: its fragments
  # by ldmatrix.trans.
  echo "GPU_OPTIONS=gemm=codegen check kn-prefill $root/test/Integration/Inputs/kn-prefill.mlir"
  # Decode of 5 to 16 tokens on tensor cores (rows padded, k in slices,
  # both weight layouts): in fused and auto mode the norm's statistic from
  # the A fragments (each times its own halves, on the tensor cores).
  echo "check few-tokens $root/test/Integration/Inputs/bf16-few-tokens.mlir"
  echo "check decode-fused $root/test/Integration/Inputs/bf16-decode-fused.mlir"
  # The same importer form: a Llama with rotary embeddings.
  echo "check llama-decode-rope -- --family=llama --flavor=linalg --decode --cache-write=store-loop --rope --layers=2"
  # Weight-only quantized projections, dequantized by a linalg.generic
  # before the matmul: int8 with an activation-aware factor the gain folds
  # into, and group-wise int4.
  echo "check llama-int8 -- --family=llama --flavor=linalg --layers=2 --quant=int8 --quant-kscale"
  echo "check llama-int4 -- --family=llama --flavor=linalg --layers=2 --quant=int4"
  python3 -c 'import json,sys; [print("bench_build %s \"%s\"" % (b["name"], b["options"])) for b in json.load(open(sys.argv[1]))["builds"]]' \
    "$kit/obj/programs/configs.json"
} > "$kit/obj/jobs"
# Tolerances of each check (relative, absolute), read by run.sh: bf16
# outputs within a few bf16 ulps (a different order of the f32 sums flips a
# rounding), f32 within 1e-4.
printf '%s\n' "llama-bf16 3e-2 3e-2" "llama-bf16-prefill 3e-2 3e-2" \
  "gpt2-bf16-decode 3e-2 3e-2" "gpt2-bf16-args 3e-2 3e-2" \
  "qwen2-bf16-decode 3e-2 3e-2" \
  "llama-bf16-prefill-codegen 3e-2 3e-2" "kn-prefill 3e-2 1e-1" \
  "few-tokens 3e-2 1e-1" "decode-fused 3e-2 1e-1" \
  "* 1e-4 1e-4" > "$kit/checks/tolerances"

# (A nested bash: set -e does not apply inside a command followed by ||.)
if ! xargs -d '\n' -P "$jobs" -I{} bash -c \
  'bash -euo pipefail -c "$1" || { echo "gpu-kit: failed: $1" >&2; exit 255; }' \
  _ {} < "$kit/obj/jobs"; then
  echo "gpu-kit: a job failed" >&2
  exit 1
fi
rm -rf "$kit/obj"
git -C "$root" describe --always --dirty > "$kit/VERSION" 2>/dev/null ||
  echo unknown > "$kit/VERSION"

# Sorted, owner-free: the same kit makes the same archive.
pack() {
  XZ_OPT=-9 tar -C "$(dirname "$kit")" --sort=name --owner=0 --group=0 -cJf "$@"
}
archive=$kit.tar.xz
pack "$archive" "$(basename "$kit")"
bytes=$(du -sb "$kit" | cut -f1)
packed=$(stat -c %s "$archive")
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
echo "gpu-kit: $kit: $(find "$kit" -type f | wc -l) files, $(mib "$bytes") MiB" \
  "($(mib "$packed") MiB as $(basename "$archive")), built in $((SECONDS - start)) s"
if [ ${#sample[@]} -gt 0 ]; then
  # The limit is the whole kit's: the sample's builds scaled to all of them
  # (a build's size depends on its configuration, and the sample has every
  # configuration at every shape).
  built=$(ls "$kit"/bench/*.so | wc -l)
  all=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import configs; print(len(list(configs.builds())))' "$root/bench/gpu")
  bench=$(pack - "$(basename "$kit")/bench" | wc -c)
  packed=$((packed - bench + bench * all / built))
  echo "gpu-kit: benchmark sample ($built of $all builds): the whole kit's" \
    "archive about $(mib "$packed") MiB (its decode check at 2 of 28 layers)"
fi
if [ "$packed" -gt $((limit_mib << 20)) ]; then
  echo "gpu-kit: $(basename "$archive") over the $limit_mib MiB limit" >&2
  exit 1
fi
