// A generated 32-layer model of each family: every norm the generator wrote
// is raised, and every gain that can be folded (norms that feed only
// projections) is folded and its 1/RMS (1/std) deferred, as counted by the
// generator itself.
// RUN: flashnorm-gen --family=llama --flavor=linalg --layers=32 --hidden=32 --heads=2 -o %t.llama.mlir
// RUN: flashnorm-opt %t.llama.mlir --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2> %t.llama.remarks
// RUN: %python %S/../check-counts.py %t.llama.mlir %t.llama.remarks | FileCheck %s --check-prefix=LLAMA
// RUN: flashnorm-gen --family=gemma --flavor=tosa --layers=32 --hidden=32 --heads=2 -o %t.gemma.mlir
// RUN: flashnorm-opt %t.gemma.mlir --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2> %t.gemma.remarks
// RUN: %python %S/../check-counts.py %t.gemma.mlir %t.gemma.remarks | FileCheck %s --check-prefix=GEMMA
// RUN: flashnorm-gen --family=gpt2 --flavor=linalg --layers=32 --hidden=32 --heads=2 -o %t.gpt2.mlir
// RUN: flashnorm-opt %t.gpt2.mlir --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2> %t.gpt2.remarks
// RUN: %python %S/../check-counts.py %t.gpt2.mlir %t.gpt2.remarks | FileCheck %s --check-prefix=GPT2
// LLAMA: norms=65 raised=65 foldable=64 folded=64 deferred=64
// LLAMA-NEXT: COUNTS OK
// GEMMA: norms=193 raised=193 foldable=64 folded=64 deferred=64
// GEMMA-NEXT: COUNTS OK
// GPT2: norms=65 raised=65 foldable=64 folded=64 deferred=64
// GPT2-NEXT: COUNTS OK
