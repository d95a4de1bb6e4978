#!/usr/bin/env bash
# A long randomized-testing campaign (the CI runs a fixed slice of each):
# differential programs (tools/flashnorm-fuzz/flashnorm-fuzz.py), failures
# minimized into DIR, then bad inputs (flashnorm-mutate.py). Prints each
# tool's outcomes, the raise rate per form and the failures.
#   scripts/fuzz-campaign.sh [PROGRAMS=2000] [MUTANTS=3000] [DIR=build/fuzz]
set -uo pipefail
cd "$(dirname "$0")/.."
programs=${1:-2000} mutants=${2:-3000} out=${3:-build/fuzz}
seed=${FLASHNORM_FUZZ_SEED:-$RANDOM$RANDOM}
status=0
echo "fuzz: $programs programs from seed $seed, failures in $out"
python3 tools/flashnorm-fuzz/flashnorm-fuzz.py --seeds "$seed:$((seed + programs))" \
  --out "$out" || status=1
echo "mutate: $mutants inputs from seed $seed"
python3 tools/flashnorm-fuzz/flashnorm-mutate.py --count "$mutants" --seed "$seed" \
  --out "$out" || status=1
exit $status
