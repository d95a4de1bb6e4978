#!/usr/bin/env bash
# Folding a safetensors checkpoint at disk speed: a synthetic Llama-3-8B
# shaped checkpoint (hidden 4096, MLP 14336, bf16; LAYERS layers, 486 MB
# each: 18 layers are 8.7 GB) in 4 shards, its model IR with extern
# globals, the fold plan flashnorm-opt writes for it, then
# flashnorm-fold-checkpoint against cp of the same shards in the same run
# (measure.py, 5 rounds). Needs about 3x the checkpoint's size free in DIR.
#   bench/checkpoint/run.sh [LAYERS=18] [DIR=build/bench-checkpoint]
set -euo pipefail
cd "$(dirname "$0")/../.."
layers=${1:-18}
dir=${2:-build/bench-checkpoint}
bin=build/bin
ninja -C build flashnorm-gen flashnorm-opt flashnorm-fold-checkpoint > /dev/null
rm -rf "$dir" && mkdir -p "$dir"

start=$(date +%s%N)
"$bin/flashnorm-gen" --family=llama --hidden=4096 --heads=32 --mlp=14336 \
  --layers="$layers" --tokens=1 --dtype=bf16 --weights=checkpoint --shards=4 \
  -o "$dir/model.mlir"
gen=$(( ($(date +%s%N) - start) / 1000000 ))
start=$(date +%s%N)
"$bin/flashnorm-opt" "$dir/model.mlir" --flashnorm=fold-plan="$dir/plan.json" \
  -o "$dir/model.fn.mlir"
opt=$(( ($(date +%s%N) - start) / 1000000 ))
echo "generated $layers layers in ${gen} ms; flashnorm-opt wrote the plan in ${opt} ms" \
  "($(stat -c %s "$dir/model.mlir") bytes of IR," \
  "$(grep -c '"name"' "$dir/plan.json") tensors planned)"
python3 bench/checkpoint/measure.py --plan "$dir/plan.json" --out "$dir" \
  --tool "$bin/flashnorm-fold-checkpoint" "$dir"/model-0000*-of-00004.safetensors
rm -rf "$dir"
