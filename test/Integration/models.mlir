// Every generated family (flashnorm-gen), in linalg and TOSA flavor, with
// weights as dense_resource constants or as arguments (folded through the
// prepare function), runs through --flashnorm and prints what the original
// printed: f32 within 1e-4 (relative, or absolute near zero); bf16 within
// 3e-2, a few bf16 ulps at the outputs' magnitude (about 1), since the
// rewritten program rounds at different points (folded bf16 weights, raw
// bf16 activations, one rounding after the post-scale). Every norm is raised; gains are folded and
// 1/RMS deferred wherever the norm feeds projections only. The rewritten
// program is run twice: through the serial reference lowering and through
// the concurrent CPU pipeline (second MATCH).
// RUN: %check-model %t.llama-linalg-resource 1e-4 1e-4 -- --family=llama --flavor=linalg --weights=resource --layers=2 | FileCheck %s --check-prefix=LLAMA
// RUN: %check-model %t.llama-linalg-args 1e-4 1e-4 -- --family=llama --flavor=linalg --weights=args --layers=2 | FileCheck %s --check-prefix=LLAMA
// RUN: %check-model %t.llama-tosa-resource 1e-4 1e-4 -- --family=llama --flavor=tosa --weights=resource --layers=2 | FileCheck %s --check-prefix=LLAMA
// RUN: %check-model %t.llama-tosa-args 1e-4 1e-4 -- --family=llama --flavor=tosa --weights=args --layers=2 | FileCheck %s --check-prefix=LLAMA
// RUN: %check-model %t.qwen2-linalg-resource 1e-4 1e-4 -- --family=qwen2 --flavor=linalg --weights=resource --layers=2 | FileCheck %s --check-prefix=QWEN2
// RUN: %check-model %t.qwen2-linalg-args 1e-4 1e-4 -- --family=qwen2 --flavor=linalg --weights=args --layers=2 | FileCheck %s --check-prefix=QWEN2
// RUN: %check-model %t.qwen2-tosa-resource 1e-4 1e-4 -- --family=qwen2 --flavor=tosa --weights=resource --layers=2 | FileCheck %s --check-prefix=QWEN2
// RUN: %check-model %t.qwen2-tosa-args 1e-4 1e-4 -- --family=qwen2 --flavor=tosa --weights=args --layers=2 | FileCheck %s --check-prefix=QWEN2
// RUN: %check-model %t.gemma-linalg-resource 1e-4 1e-4 -- --family=gemma --flavor=linalg --weights=resource --layers=2 | FileCheck %s --check-prefix=GEMMA
// RUN: %check-model %t.gemma-linalg-args 1e-4 1e-4 -- --family=gemma --flavor=linalg --weights=args --layers=2 | FileCheck %s --check-prefix=GEMMA
// RUN: %check-model %t.gemma-tosa-resource 1e-4 1e-4 -- --family=gemma --flavor=tosa --weights=resource --layers=2 | FileCheck %s --check-prefix=GEMMA
// RUN: %check-model %t.gemma-tosa-args 1e-4 1e-4 -- --family=gemma --flavor=tosa --weights=args --layers=2 | FileCheck %s --check-prefix=GEMMA
// RUN: %check-model %t.gpt2-linalg-resource 1e-4 1e-4 -- --family=gpt2 --flavor=linalg --weights=resource --layers=2 | FileCheck %s --check-prefix=GPT2
// RUN: %check-model %t.gpt2-linalg-args 1e-4 1e-4 -- --family=gpt2 --flavor=linalg --weights=args --layers=2 | FileCheck %s --check-prefix=GPT2
// RUN: %check-model %t.gpt2-tosa-resource 1e-4 1e-4 -- --family=gpt2 --flavor=tosa --weights=resource --layers=2 | FileCheck %s --check-prefix=GPT2
// RUN: %check-model %t.gpt2-tosa-args 1e-4 1e-4 -- --family=gpt2 --flavor=tosa --weights=args --layers=2 | FileCheck %s --check-prefix=GPT2
// RUN: %check-model %t.llama-linalg-bf16 3e-2 3e-2 -- --family=llama --flavor=linalg --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=LLAMA
// RUN: %check-model %t.llama-tosa-bf16 3e-2 3e-2 -- --family=llama --flavor=tosa --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=LLAMA
// RUN: %check-model %t.qwen2-linalg-bf16 3e-2 3e-2 -- --family=qwen2 --flavor=linalg --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=QWEN2
// RUN: %check-model %t.qwen2-tosa-bf16 3e-2 3e-2 -- --family=qwen2 --flavor=tosa --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=QWEN2
// RUN: %check-model %t.gemma-linalg-bf16 3e-2 3e-2 -- --family=gemma --flavor=linalg --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=GEMMA
// RUN: %check-model %t.gemma-tosa-bf16 3e-2 3e-2 -- --family=gemma --flavor=tosa --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=GEMMA
// bf16 GPT-2 (Phi-2, Falcon, NeoX ship LayerNorms in bf16 or f16): the
// gains and biases fold, the bf16 weights cannot carry the mean-centering,
// and 1/std is deferred all the same, the post-scales subtracting the
// mean's share of each product.
// RUN: %check-model %t.gpt2-linalg-bf16 3e-2 3e-2 -- --family=gpt2 --flavor=linalg --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=GPT2
// RUN: %check-model %t.gpt2-tosa-bf16 3e-2 3e-2 -- --family=gpt2 --flavor=tosa --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=GPT2
// The same with argument weights: the prepare function folds the gains,
// the biases through the weights and the folded weights' column sums.
// RUN: %check-model %t.gpt2-linalg-bf16-args 3e-2 3e-2 -- --family=gpt2 --flavor=linalg --dtype=bf16 --weights=args --layers=2 | FileCheck %s --check-prefix=GPT2
// OLMo's LayerNorms have no gain or bias: with inline weights nothing
// folds (defer-scale centers f32 weights itself, and sums bf16 ones
// exactly for their centered post-scales); the prepare function centers
// f32 argument weights, and sums bf16 ones. Every norm that feeds
// projections is deferred.
// RUN: %check-model %t.olmo-linalg-resource 1e-4 1e-4 -- --family=olmo --flavor=linalg --weights=resource --layers=2 | FileCheck %s --check-prefix=OLMO
// RUN: %check-model %t.olmo-linalg-args 1e-4 1e-4 -- --family=olmo --flavor=linalg --weights=args --layers=2 | FileCheck %s --check-prefix=OLMO-ARGS
// RUN: %check-model %t.olmo-tosa-bf16 3e-2 3e-2 -- --family=olmo --flavor=tosa --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=OLMO
// RUN: %check-model %t.olmo-tosa-bf16-args 3e-2 3e-2 -- --family=olmo --flavor=tosa --dtype=bf16 --weights=args --layers=2 | FileCheck %s --check-prefix=OLMO-ARGS
// RUN: %check-model %t.olmo-torch 1e-4 1e-4 -- --family=olmo --style=torch-mlir --layers=2 | FileCheck %s --check-prefix=OLMO
// BERT's post-LayerNorms: each norm's result is both the next projections'
// input and the next residual. The projections read a weightless copy,
// folded and deferred; the residual keeps the gained norm (the last layer's
// norm feeds no projection). With argument weights, the prepare function
// folds them, biases included, as for GPT-2.
// RUN: %check-model %t.bert-linalg-resource 1e-4 1e-4 -- --family=bert --flavor=linalg --weights=resource --layers=2 | FileCheck %s --check-prefix=BERT
// RUN: %check-model %t.bert-tosa-resource 1e-4 1e-4 -- --family=bert --flavor=tosa --weights=resource --layers=2 | FileCheck %s --check-prefix=BERT
// RUN: %check-model %t.bert-tosa-args 1e-4 1e-4 -- --family=bert --flavor=tosa --weights=args --layers=2 | FileCheck %s --check-prefix=BERT
// RUN: %check-model %t.bert-linalg-bf16 3e-2 3e-2 -- --family=bert --flavor=linalg --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=BERT
// RUN: %check-model %t.bert-torch 1e-4 1e-4 -- --family=bert --style=torch-mlir --layers=2 | FileCheck %s --check-prefix=BERT
// The same families as torch-mlir's linalg lowering writes them (batch-1
// literal-0 maps, gather and yield-only broadcasts, f64 variances and
// epsilons, nn.Linear weights transposed by yield-only generics), and a
// 12-layer GPT-2 in that style: every LayerNorm raised, 24 folded and
// deferred (ln_f feeds no projection).
// RUN: %check-model %t.gpt2-torch-12 1e-4 1e-4 -- --family=gpt2 --style=torch-mlir --layers=12 | FileCheck %s --check-prefix=GPT2-12
// RUN: %check-model %t.gpt2-torch-args 1e-4 1e-4 -- --family=gpt2 --style=torch-mlir --weights=args --layers=2 | FileCheck %s --check-prefix=GPT2
// RUN: %check-model %t.llama-torch-args 1e-4 1e-4 -- --family=llama --style=torch-mlir --weights=args --layers=2 | FileCheck %s --check-prefix=LLAMA
// RUN: %check-model %t.qwen2-torch 1e-4 1e-4 -- --family=qwen2 --style=torch-mlir --layers=2 | FileCheck %s --check-prefix=QWEN2
// RUN: %check-model %t.gemma-torch 1e-4 1e-4 -- --family=gemma --style=torch-mlir --layers=2 | FileCheck %s --check-prefix=GEMMA
// bf16 as torch-mlir lowers a bf16 model: the row widened by a casting
// generic before the reshape to [1, T, K], rounded by another after the
// norm (or after its collapse). Each norm is raised in f32 and then reads
// the bf16 row (RaiseNarrow.cpp); before, none was folded or deferred.
// RUN: %check-model %t.llama-torch-bf16 3e-2 3e-2 -- --family=llama --style=torch-mlir --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=LLAMA
// RUN: %check-model %t.gemma-torch-bf16-args 3e-2 3e-2 -- --family=gemma --style=torch-mlir --dtype=bf16 --weights=args --layers=2 | FileCheck %s --check-prefix=GEMMA
// RUN: %check-model %t.gpt2-torch-bf16-args 3e-2 3e-2 -- --family=gpt2 --style=torch-mlir --dtype=bf16 --weights=args --layers=2 | FileCheck %s --check-prefix=GPT2
// RUN: %check-model %t.olmo-torch-bf16 3e-2 3e-2 -- --family=olmo --style=torch-mlir --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=OLMO
// RUN: %check-model %t.bert-torch-bf16 3e-2 3e-2 -- --family=bert --style=torch-mlir --dtype=bf16 --layers=2 | FileCheck %s --check-prefix=BERT

// GPT2-12: rms_norms=0 layer_norms=25 gains=25
// GPT2-12-NEXT: raised=25 folded=24 deferred=24
// GPT2-12-NEXT: MATCH
// GPT2-12-NEXT: MATCH
// LLAMA: rms_norms=5 layer_norms=0 gains=5
// LLAMA-NEXT: raised=5 folded=4 deferred=4
// LLAMA-NEXT: MATCH
// LLAMA-NEXT: MATCH
// QWEN2: rms_norms=5 layer_norms=0 gains=5
// QWEN2-NEXT: raised=5 folded=4 deferred=4
// QWEN2-NEXT: MATCH
// QWEN2-NEXT: MATCH
// Gemma: 13 norms (sandwich norms and QK-norms feed no projection).
// GEMMA: rms_norms=13 layer_norms=0 gains=13 qk_norms=4
// GEMMA-NEXT: raised=13 folded=4 deferred=4
// GEMMA-NEXT: MATCH
// GEMMA-NEXT: MATCH
// GPT2: rms_norms=0 layer_norms=5 gains=5
// GPT2-NEXT: raised=5 folded=4 deferred=4
// GPT2-NEXT: MATCH
// GPT2-NEXT: MATCH
// BERT: rms_norms=0 layer_norms=5 gains=5
// BERT-NEXT: raised=5 folded=4 deferred=4
// BERT-NEXT: MATCH
// BERT-NEXT: MATCH
// OLMO: rms_norms=0 layer_norms=5 gains=0
// OLMO-NEXT: raised=5 folded=0 deferred=4
// OLMO-NEXT: MATCH
// OLMO-NEXT: MATCH
// OLMO-ARGS: rms_norms=0 layer_norms=5 gains=0
// OLMO-ARGS-NEXT: raised=5 folded=4 deferred=4
// OLMO-ARGS-NEXT: MATCH
// OLMO-ARGS-NEXT: MATCH
