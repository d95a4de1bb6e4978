// A generated 32-layer model of each family: every norm the generator wrote
// is raised, every gain that can be folded (norms that feed only
// projections) is folded and its 1/RMS (1/std) deferred, and every gated
// MLP's up-path 1/RMS moves past its down projection, as counted by the
// generator itself. With argument weights (no prepare function) the gains
// stay unfolded and every 1/RMS is still deferred (x * g feeds them).
// RUN: flashnorm-gen --family=llama --flavor=linalg --layers=32 --hidden=32 --heads=2 -o %t.llama.mlir
// RUN: flashnorm-opt %t.llama.mlir --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2> %t.llama.remarks
// RUN: %python %S/../check-counts.py %t.llama.mlir %t.llama.remarks | FileCheck %s --check-prefix=LLAMA
// RUN: flashnorm-gen --family=gemma --flavor=tosa --layers=32 --hidden=32 --heads=2 -o %t.gemma.mlir
// RUN: flashnorm-opt %t.gemma.mlir --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2> %t.gemma.remarks
// RUN: %python %S/../check-counts.py %t.gemma.mlir %t.gemma.remarks | FileCheck %s --check-prefix=GEMMA
// RUN: flashnorm-gen --family=gpt2 --flavor=linalg --layers=32 --hidden=32 --heads=2 -o %t.gpt2.mlir
// RUN: flashnorm-opt %t.gpt2.mlir --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2> %t.gpt2.remarks
// RUN: %python %S/../check-counts.py %t.gpt2.mlir %t.gpt2.remarks | FileCheck %s --check-prefix=GPT2
// OLMo's LayerNorms have no gain: nothing folds (defer-scale centers the
// f32 weights), every norm before projections is deferred, and with no
// gain to carry it the attention scale stays out of each query weight.
// RUN: flashnorm-gen --family=olmo --flavor=linalg --layers=32 --hidden=32 --heads=2 -o %t.olmo.mlir
// RUN: flashnorm-opt %t.olmo.mlir --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2> %t.olmo.remarks
// RUN: %python %S/../check-counts.py %t.olmo.mlir %t.olmo.remarks | FileCheck %s --check-prefix=OLMO
// BERT (24 layers, as BERT-large): every post-LayerNorm but the last feeds
// projections and its residual; those fold for the projections and defer.
// RUN: flashnorm-gen --family=bert --flavor=tosa --layers=24 --hidden=32 --heads=2 -o %t.bert.mlir
// RUN: flashnorm-opt %t.bert.mlir --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2> %t.bert.remarks
// RUN: %python %S/../check-counts.py %t.bert.mlir %t.bert.remarks | FileCheck %s --check-prefix=BERT
// RUN: flashnorm-gen --family=llama --flavor=tosa --weights=args --layers=32 --hidden=32 --heads=2 -o %t.args.mlir
// RUN: flashnorm-opt %t.args.mlir --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2> %t.args.remarks
// RUN: %python %S/../check-counts.py %t.args.mlir %t.args.remarks | FileCheck %s --check-prefix=ARGS
// bf16 GPT-2 with argument weights, through the prepare function: every
// LayerNorm before projections folds (its bias through each of the 128
// weights, and the folded weights' column sums: 256 arguments the fold
// appends) and defers, each projection's post-scale centered.
// RUN: flashnorm-gen --family=gpt2 --flavor=linalg --dtype=bf16 --weights=args --layers=32 --hidden=32 --heads=2 -o %t.gpt2-args.mlir
// RUN: flashnorm-opt %t.gpt2-args.mlir --flashnorm=prepare-function=true --remarks-filter=flashnorm --remark-format=emitRemark -o %t.gpt2-args.fn.mlir 2> %t.gpt2-args.remarks
// RUN: %python %S/../check-counts.py %t.gpt2-args.mlir %t.gpt2-args.remarks --folded | FileCheck %s --check-prefix=GPT2-ARGS
// RUN: grep -c "flashnorm.centered_post_scale" %t.gpt2-args.fn.mlir | FileCheck %s --check-prefix=GPT2-ARGS-SCALES
// Quantized (weight-only): int4 keeps every gain unfolded and defers every
// 1/RMS, and the attention scale stays out of its query weights, so each
// query's 1/RMS merges into its logits' scale; int8 with a per-input-channel
// factor folds every gain into it. (TOSA's argument-weight Llama scales its
// logits with tosa.mul, not in a generic: nothing merges there.)
// RUN: flashnorm-gen --family=llama --quant=int4 --layers=32 --hidden=32 --heads=2 -o %t.int4.mlir
// RUN: flashnorm-opt %t.int4.mlir --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2> %t.int4.remarks
// RUN: %python %S/../check-counts.py %t.int4.mlir %t.int4.remarks | FileCheck %s --check-prefix=INT4
// RUN: flashnorm-gen --family=gemma --quant=int8 --quant-kscale --layers=32 --hidden=32 --heads=2 -o %t.kscale.mlir
// RUN: flashnorm-opt %t.kscale.mlir --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2> %t.kscale.remarks
// RUN: %python %S/../check-counts.py %t.kscale.mlir %t.kscale.remarks | FileCheck %s --check-prefix=KSCALE
// INT4: norms=65 raised=65 foldable=64 folded=0 deferred=64 deferred_unfolded=64 ffn_moved=32 query_merged=32
// INT4-NEXT: COUNTS OK
// KSCALE: norms=193 raised=193 foldable=64 folded=64 deferred=64 deferred_unfolded=0 ffn_moved=32 query_merged=0
// KSCALE-NEXT: COUNTS OK
// LLAMA: norms=65 raised=65 foldable=64 folded=64 deferred=64 deferred_unfolded=0 ffn_moved=32 query_merged=0
// LLAMA-NEXT: COUNTS OK
// GEMMA: norms=193 raised=193 foldable=64 folded=64 deferred=64 deferred_unfolded=0 ffn_moved=32 query_merged=0
// GEMMA-NEXT: COUNTS OK
// GPT2: norms=65 raised=65 foldable=64 folded=64 deferred=64 deferred_unfolded=0 ffn_moved=0 query_merged=0
// GPT2-NEXT: COUNTS OK
// ARGS: norms=65 raised=65 foldable=64 folded=0 deferred=64 deferred_unfolded=64 ffn_moved=32 query_merged=0
// ARGS-NEXT: COUNTS OK
// BERT: norms=49 raised=49 foldable=48 folded=48 deferred=48 deferred_unfolded=0 ffn_moved=0 query_merged=0
// BERT-NEXT: COUNTS OK
// OLMO: norms=65 raised=65 foldable=0 folded=0 deferred=64 deferred_unfolded=0 ffn_moved=32 query_merged=32
// OLMO-NEXT: COUNTS OK
// GPT2-ARGS: norms=65 raised=65 foldable=64 folded=64 deferred=64 deferred_unfolded=0 ffn_moved=0 query_merged=0
// GPT2-ARGS-NEXT: COUNTS OK
// GPT2-ARGS-SCALES: 128
