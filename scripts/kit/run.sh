#!/usr/bin/env bash
# Runs a GPU kit (built by scripts/gpu-kit.sh; docs/GPU.md) on a GPU machine:
# needs the NVIDIA driver, python3 with PyTorch for the benchmark, ncu and
# compute-sanitizer for their sections; no LLVM/MLIR.
#   run.sh                 every check, the benchmark, the ncu and
#                          compute-sanitizer sections; results/ in the kit,
#                          archived as gpu-kit-results.tar.gz in $OUT (or
#                          in the kit folder)
#   run.sh --stub LIBCUDA  no GPU: every program must start and stop at cuInit
#                          against this driver stub (what CI checks)
# Prints a summary; the last lines are the benchmark's summary and
# "kit: N passed, N failed". Exits 1 if any check failed.
set -uo pipefail
kit=$(cd "$(dirname "$0")" && pwd)
start=$SECONDS
passed=0 failed=0
pass() { echo "PASS $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

programs() {
  find "$kit/checks" "$kit/stress" "$kit/runtime" -type f -perm -u+x | sort
}

if [ "${1:-}" = "--stub" ]; then
  # Each program must link and load (every library found, every symbol
  # resolved), then stop at the driver's initialization with a clear message.
  [ -e "${2:-}" ] || { echo "run.sh: --stub needs the stub libcuda.so" >&2; exit 2; }
  stubdir=$(mktemp -d)
  trap 'rm -rf "$stubdir"' EXIT
  ln -s "$(cd "$(dirname "$2")" && pwd)/$(basename "$2")" "$stubdir/libcuda.so.1"
  export LD_LIBRARY_PATH=$stubdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  expect='flashnorm-cuda: no usable CUDA driver: cuInit failed: CUDA_ERROR_STUB_LIBRARY'
  stopped() { # what the program printed, its status
    if [ "$2" -ne 0 ] && grep -q "^$expect" <<< "$1" &&
      [ "$(wc -l <<< "$1")" -eq 1 ]; then
      return 0
    fi
    echo "  status $2, output: $1"
    return 1
  }
  while read -r exe; do
    out=$("$exe" 2>&1 < /dev/null); status=$?
    if stopped "$out" "$status"; then pass "starts: ${exe#$kit/}"
    else fail "starts: ${exe#$kit/}"; fi
  done < <(programs)
  for so in "$kit"/bench/*.so; do
    out=$("$kit/tools/load-build" "$kit/lib/libflashnorm_cuda_runtime.so" \
      "$so" 2>&1); status=$?
    if nm -D --undefined-only "$so" | grep -q ' mgpuModuleLoad$'; then
      if stopped "$out" "$status"; then pass "loads: ${so#$kit/}"
      else fail "loads: ${so#$kit/}"; fi
    # A build without kernels (a cuBLASLt GEMM alone) loads no module, so
    # nothing initializes CUDA when it loads: every symbol resolved is the
    # check.
    elif [ "$status" -eq 0 ] && [ "$out" = "loaded without initializing CUDA" ]; then
      pass "loads (no kernels): ${so#$kit/}"
    else
      echo "  status $status, output: $out"
      fail "loads (no kernels): ${so#$kit/}"
    fi
  done > "$stubdir/bench.log"
  # (Counted in the loop; only what went wrong is printed.)
  grep -v '^PASS' "$stubdir/bench.log"
  echo "kit (stub driver): $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi

results=$kit/results
rm -rf "$results"
mkdir -p "$results"/{checks,stress,runtime}
archive=${OUT:-$kit}/gpu-kit-results.tar.gz
# The archive is rewritten after each section: a run cut short keeps what it
# did. (libcublasLt, which the cuBLASLt builds need, is the one PyTorch has
# loaded when bench.py loads them; LD_LIBRARY_PATH is left alone, as a
# toolkit of another minor version first on it can break PyTorch's import.)
snapshot() { tar -C "$kit" -czf "$archive" results; }

echo "== environment"
{
  echo "kit: $(cat "$kit/VERSION")"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1
  command -v ncu > /dev/null && ncu --version | tail -1
} | tee "$results/environment.txt"
nvidia-smi > "$results/nvidia-smi.txt" 2>&1

# A check's relative and absolute tolerances (checks/tolerances).
tolerances() {
  awk -v n="$1" '$1 == n || $1 == "*" { print $2, $3; exit }' "$kit/checks/tolerances"
}
echo "== correctness: each build against its CPU reference"
for dir in "$kit"/checks/*/; do
  name=$(basename "$dir")
  read -r rtol atol < <(tolerances "$name")
  for mode in auto streams fused serial; do
    log=$results/checks/$name.$mode
    timeout 30 "$dir/$mode" > "$log.out" 2> "$log.err"
    status=$?
    verdict=$(python3 "$kit/tools/compare-outputs.py" "$dir/ref.txt" "$log.out" --rtol "$rtol" --atol "$atol")
    if [ $status -eq 0 ] && [[ $verdict == MATCH* ]]; then
      pass "$name $mode: $verdict"
    else
      fail "$name $mode: status $status: $verdict $(tail -2 "$log.err" | tr '\n' ' ')"
    fi
  done
done

snapshot

echo "== stress: 1000 recurrent steps, checksums against the CPU (rtol 1e-4, atol 1e-4)"
stress() { # label, expectation (MATCH or MISMATCH), program, env...
  local label=$1 want=$2 exe=$3 log=$results/stress/$1
  shift 3
  env "$@" timeout 60 "$kit/stress/$exe" > "$log.out" 2> "$log.err"
  local status=$? verdict
  verdict=$(python3 "$kit/tools/compare-outputs.py" "$kit/stress/ref.txt" "$log.out" --rtol 1e-4 --atol 1e-4)
  if [ $status -eq 0 ] && [[ $verdict == "$want"* ]]; then
    pass "stress $label: $verdict (expected $want)"
  else
    fail "stress $label: status $status: $verdict (expected $want) $(tail -2 "$log.err" | tr '\n' ' ')"
  fi
}
stress streams MATCH streams
stress fused MATCH fused
stress graphs MATCH streams FLASHNORM_CUDA_GRAPHS=1 FLASHNORM_CUDA_TRACE=1 \
  FLASHNORM_CUDA_TRACE_FILE="$results/stress/graphs.trace"
# The mutant without the join: its race shows only when the statistic is
# slower than the projection, which an H200 rarely makes it (1000 steps
# matched there). The guarantee is static (flashnorm-verify-async rejects
# the mutant); this says whether the race showed, and fails nothing.
log=$results/stress/mutant
timeout 60 "$kit/stress/mutant" > "$log.out" 2> "$log.err"
echo "NOTE stress mutant (status $?): $(python3 "$kit/tools/compare-outputs.py" \
  "$kit/stress/ref.txt" "$log.out" --rtol 1e-4 --atol 1e-4)" \
  "(MISMATCH: the race showed; MATCH: it did not on this run)"
trace=$results/stress/graphs.trace
if [ -f "$trace" ]; then
  echo "graph mode over 1000 steps: episodes=$(grep -c 'begins on stream' "$trace")" \
    "instantiated=$(grep -c 'instantiated' "$trace")" \
    "updated=$(grep -c 'updated' "$trace")" \
    "fallbacks=$(grep -c 'warning' "$results/stress/graphs.err")"
  gzip -f "$trace"
fi

snapshot

echo "== runtime: pools, trace, graphs (the lit tests' check lines)"
filecheck() { # label, prefix, input file
  if python3 "$kit/tools/filecheck.py" "$kit/runtime/$4.checks" --check-prefix "$2" < "$3" > "$3.check" 2>&1; then
    pass "runtime $1"
  else
    fail "runtime $1: $(cat "$3.check")"
  fi
}
r=$results/runtime
FLASHNORM_CUDA_TRACE=1 timeout 60 "$kit/runtime/pools" > "$r/pools.out" 2>&1
filecheck "pools" CHECK "$r/pools.out" pools
for m in eager graphs; do
  graphs=0
  [ $m = graphs ] && graphs=1
  FLASHNORM_CUDA_GRAPHS=$graphs FLASHNORM_CUDA_TRACE=1 FLASHNORM_CUDA_TRACE_FILE="$r/$m.trace" \
    timeout 60 "$kit/runtime/trace-graphs" > "$r/$m.out" 2> "$r/$m.err"
  filecheck "trace-graphs $m (results)" CHECK "$r/$m.out" trace-graphs
  filecheck "trace-graphs $m (trace)" "$(tr a-z A-Z <<< $m)" "$r/$m.trace" trace-graphs
done

snapshot

echo "== benchmark (bench.py; table in results/bench.md)"
python3 "$kit/tools/bench.py" --kit "$kit" --out "$results/bench.md" \
  --json "$results/bench.json" --budget-s "${FLASHNORM_BENCH_BUDGET_S:-150}" \
  > "$results/bench.log" 2>&1
status=$?
grep -v '^|' "$results/bench.log" | grep -v '^$' | tail -6 | grep -v '^gpu:'
if [ $status -eq 0 ]; then pass "benchmark: every output within its tolerance"
else fail "benchmark: status $status (results/bench.md: MISMATCH or ERROR rows)"; fi

snapshot

echo "== ncu: decode (1 and 16 tokens), prefill projections, the fused kernels (Llama-3-8B bf16)"
if command -v ncu > /dev/null; then
  # Only the builds' projection and fused kernels (bench_proj_*,
  # bench_proj_mma_*, bench_fused_norm_proj_*): two calls of each of these
  # six builds, streams+graphs too. The 16-token fused build is the tile
  # kernel with the norm's sums of squares on the tensor cores: the compute
  # workload section says how busy its tensor pipe is, the warp states what
  # its warps wait on (long scoreboard: memory), as for the projection alone.
  timeout 180 ncu --clock-control none --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section Occupancy --section LaunchStats \
    --kernel-name 'regex:^bench_(proj|fused)' --launch-count 32 \
    python3 "$kit/tools/bench.py" --kit "$kit" --runs 1 --warmup 0 \
    --only 4096x4096_m1_bf16_streams --only 4096x14336_m1_bf16_streams \
    --only 4096x4096_m16_bf16_streams --only 4096x4096_m512_bf16_streams \
    --only 4096x4096_m1_bf16_fused --only 4096x4096_m16_bf16_fused \
    > "$results/ncu.txt" 2>&1
  echo "ncu status $? (results/ncu.txt)"
  grep -E '^  [a-z_0-9]+.*\(|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per Thread|Issue Slots Busy|Warp Cycles Per Issued' \
    "$results/ncu.txt" | head -120
else
  echo "ncu: not found"
fi

snapshot

echo "== compute-sanitizer: memcheck, racecheck, synccheck on the generated kernels"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ]; then
  mkdir -p "$results/sanitizer"
  # The kernels whose warps share memory: the tile kernel's slices and the
  # fused norm's products of A's rows (decode-fused and few-tokens, fused
  # and auto), the staged kernel's cp.async ring (kn-prefill, the 100-token
  # prompt with its padded last block), the fused LayerNorm's block
  # reductions (gpt2-linalg). Each run's output is checked too. cuBLAS's
  # kernels are left out (its split-k GEMV reports hazards of its own).
  # Racecheck first (the products' buffer is new), within a budget
  # (FLASHNORM_SANITIZER_BUDGET_S, 240 s): runs past it are skipped, noted.
  budget=${FLASHNORM_SANITIZER_BUDGET_S:-240} sstart=$SECONDS
  for tool in racecheck memcheck synccheck; do
    for run in decode-fused/fused few-tokens/auto kn-prefill/serial \
        llama-bf16-prefill-codegen/streams gpt2-linalg/fused; do
      if [ $((SECONDS - sstart)) -ge "$budget" ]; then
        echo "NOTE $tool $run: skipped (past the ${budget} s budget)"
        continue
      fi
      name=${run%/*}
      read -r rtol atol < <(tolerances "$name")
      log=$results/sanitizer/$name.${run#*/}.$tool
      timeout 90 "$sanitizer" --tool "$tool" --error-exitcode 99 \
        --print-limit 20 --log-file "$log.report" "$kit/checks/$run" \
        > "$log.out" 2> "$log.err"
      status=$?
      # Some machines (a GPU behind a sandboxing kernel) have the tool but
      # not its access to the device: not a finding about the kernels.
      if grep -qs 'Device not supported' "$log.report" "$log.err"; then
        echo "NOTE compute-sanitizer: Device not supported on this machine; sanitizer runs skipped"
        break 2
      fi
      verdict=$(python3 "$kit/tools/compare-outputs.py" "$kit/checks/$name/ref.txt" "$log.out" --rtol "$rtol" --atol "$atol")
      if [ $status -eq 0 ] && [[ $verdict == MATCH* ]]; then
        pass "$tool $run: $(grep -E 'SUMMARY' "$log.report" | head -1 | sed 's/^=* *//')"
      else
        fail "$tool $run: status $status: $verdict $(grep -m3 -E 'Error|Race|Hazard|SUMMARY' "$log.report" | tr '\n' ' ')"
      fi
    done
  done
else
  echo "compute-sanitizer: not found"
fi

snapshot
echo "results: $archive ($(du -h "$archive" | cut -f1)), $((SECONDS - start)) s"
grep '^gpu:' "$results/bench.log"
echo "kit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
