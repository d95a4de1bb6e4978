#!/usr/bin/env bash
# The main job on a shipped example: run the flashnorm pipeline, show what
# it did (remarks) and the rewritten block, then execute the original and
# the rewritten program and compare their outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
example=${1:-examples/llama-block.mlir}
opt=build/bin/flashnorm-opt
runner="/usr/lib/llvm-22/bin/mlir-runner -e main -entry-point-result=void
  -shared-libs=/usr/lib/llvm-22/lib/libmlir_runner_utils.so,/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so"
mapfile -t lower < scripts/lower-to-llvm.args
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== flashnorm on $example (remarks: --remarks-filter=flashnorm)"
$opt "$example" --flashnorm --remarks-filter=flashnorm \
  --remark-format=emitRemark -o "$tmp/rewritten.mlir" 2>&1 |
  grep -E 'remark: \[(Passed|Missed)\]' | sed -E 's/ \| Category:flashnorm//'
echo
echo "== rewritten @block (weights elided)"
$opt "$tmp/rewritten.mlir" --mlir-elide-elementsattrs-if-larger=4 |
  sed -n '/func.func @block/,/^  }/p' | grep -v '^\s*%.*= arith.constant dense'
echo
echo "== original vs rewritten, executed"
$opt "$example" "${lower[@]}" | $runner > "$tmp/original.txt"
$opt "$tmp/rewritten.mlir" "${lower[@]}" | $runner > "$tmp/rewritten.txt"
python3 test/compare-outputs.py "$tmp/original.txt" "$tmp/rewritten.txt" \
  --rtol 1e-4 --atol 1e-5
