// Weights in a checkpoint: extern ml_program globals are folded through a
// plan (no weight bytes in the IR), globals that hold their value are
// folded into new globals, and mixing the two is refused.
// RUN: flashnorm-opt %s --flashnorm-fold-gains=fold-plan=%t.json | FileCheck %s
// RUN: %python -c "import json,sys; d=json.load(open(sys.argv[1])); [print(t['name'], t['op'], t['source'], t['source_dtype'], t['dtype'], t['shape'], 'axis', t['axis'], 'center', t.get('center'), t['vector']) for t in sorted(d['tensors'], key=lambda t: t['name'])]; print('drop', sorted(d['drop']))" %t.json | FileCheck %s --check-prefix=PLAN
// RUN: flashnorm-opt %s --flashnorm-fold-gains=fold-plan=%t.json --remarks-filter=flashnorm \
// RUN:   --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// Without fold-plan the extern ones are refused, with a warning that says how.
// RUN: flashnorm-opt %s --flashnorm-fold-gains 2>&1 >/dev/null | FileCheck %s --check-prefix=WARN
// The query's attention scale goes into its plan entry only with
// fold-attention-scale (on by default).
// RUN: flashnorm-opt %s --flashnorm-fold-gains="fold-plan=%t.off.json fold-attention-scale=false" | FileCheck %s --check-prefix=OFF
// RUN: %python -c "import json,sys; d=json.load(open(sys.argv[1])); [print(t['name'], t['vector']) for t in sorted(d['tensors'], key=lambda t: t['name'])]" %t.off.json | FileCheck %s --check-prefix=PLAN-OFF
// A plan that cannot be written is an error.
// RUN: not flashnorm-opt %s --flashnorm-fold-gains=fold-plan=%t.missing/plan.json 2>&1 | FileCheck %s --check-prefix=NOFILE
// The plan never lands on the program it folds, nor on a file that is not
// a plan (a checkpoint named by mistake): both stay as they were. (An
// existing plan is overwritten: the runs above write %t.json twice.)
// RUN: cp %s %t.input.mlir
// RUN: not flashnorm-opt %t.input.mlir --flashnorm-fold-gains=fold-plan=%t.input.mlir 2>&1 | FileCheck %s --check-prefix=ONINPUT
// RUN: diff %s %t.input.mlir
// RUN: echo "safetensors bytes" > %t.safetensors
// RUN: not flashnorm-opt %s --flashnorm-fold-gains=fold-plan=%t.safetensors 2>&1 | FileCheck %s --check-prefix=NOTPLAN
// RUN: FileCheck %s --check-prefix=KEPT < %t.safetensors
// The output file (emptied before the passes run, so no plan check could
// tell it from a new one), and where the standard output goes: the IR would
// overwrite the plan. '-' is not a file.
// RUN: not flashnorm-opt %s --flashnorm-fold-gains=fold-plan=%t.out.mlir -o %t.out.mlir 2>&1 | FileCheck %s --check-prefix=ONOUTPUT
// RUN: not flashnorm-opt %s --flashnorm-fold-gains=fold-plan=%t.stdout.mlir > %t.stdout.mlir 2> %t.stdout.err
// RUN: FileCheck %s --check-prefix=ONOUTPUT < %t.stdout.err
// RUN: not flashnorm-opt %s --flashnorm-fold-gains=fold-plan=- 2>&1 | FileCheck %s --check-prefix=DASH

// CHECK-DAG: ml_program.global private @q.weight.flashnorm(#{{.*}}) : tensor<8x16xf32>
// CHECK-DAG: ml_program.global private @k.weight(#{{.*}}) : tensor<16x8xbf16>
// CHECK-DAG: ml_program.global private @k.weight.flashnorm(#{{.*}}) : tensor<16x8xbf16>
// CHECK-DAG: ml_program.global private @fc.weight.flashnorm(#{{.*}}) : tensor<16x8xf32>
// CHECK-DAG: ml_program.global private @fc.weight.flashnorm_bias(#{{.*}}) : tensor<16xf32>
// CHECK-DAG: ml_program.global private @ln.weight(#{{.*}}) : tensor<8xf32>
// CHECK-DAG: ml_program.global private @v.weight.flashnorm(dense<{{\[\[}}2.000000e+00, 4.000000e+00], [1.500000e+00, 2.000000e+00]]> : tensor<2x2xf32>) : tensor<2x2xf32>
// Nothing loads these any more: gone (and dropped from the checkpoint).
// CHECK-NOT: @q.weight(
// CHECK-NOT: @norm.weight(
// CHECK-NOT: @v.weight(

// CHECK-LABEL: func.func @rms
// CHECK-DAG: %[[Q:.*]] = ml_program.global_load_const @q.weight.flashnorm
// CHECK-DAG: %[[K:.*]] = ml_program.global_load_const @k.weight :
// CHECK-DAG: %[[KF:.*]] = ml_program.global_load_const @k.weight.flashnorm
// CHECK: %[[N:.*]] = flashnorm.rms_norm %arg0 eps
// CHECK: linalg.matmul ins(%[[N]], %[[Q]] :
// CHECK: linalg.matmul indexing_maps = {{.*}} ins(%[[N]], %[[KF]] :
// CHECK: return %{{.*}}, %{{.*}}, %[[K]] :
// REMARK: Function=rms | Remark="folded the gain into 2 projection weight(s) (2 in the checkpoint, through the fold plan)"
// PLAN: ak.weight.flashnorm scale ak.weight F32 F32 [2, 2] axis 0 center False {'tensor': 'an.weight', 'scale': 1, 'offset': 1}
// PLAN-NEXT: aq.weight.flashnorm scale aq.weight F32 F32 [2, 2] axis 0 center False {'tensor': 'an.weight', 'scale': 0.5, 'offset': 0.5}
// PLAN-NEXT: fc.weight.flashnorm scale fc.weight F32 F32 [16, 8] axis 1 center True {'tensor': 'ln.weight', 'scale': 1, 'offset': 0}
// PLAN-NEXT: fc.weight.flashnorm_bias contract fc.weight F32 F32 [16] axis 1 center None {'tensor': 'ln.bias', 'scale': 1, 'offset': 0}
// PLAN-NEXT: k.weight.flashnorm scale k.weight BF16 BF16 [16, 8] axis 1 center False {'tensor': 'norm.weight', 'scale': 1, 'offset': 1}
// PLAN-NEXT: q.weight.flashnorm scale q.weight F32 F32 [8, 16] axis 0 center False {'tensor': 'norm.weight', 'scale': 1, 'offset': 1}
// PLAN-NEXT: drop ['ak.weight', 'an.weight', 'aq.weight', 'fc.weight', 'ln.bias', 'norm.weight', 'q.weight']
// PLAN-OFF: ak.weight.flashnorm {'tensor': 'an.weight', 'scale': 1, 'offset': 1}
// PLAN-OFF-NEXT: aq.weight.flashnorm {'tensor': 'an.weight', 'scale': 1, 'offset': 1}
// WARN: warning: flashnorm-fold-gains: 1 norm(s) of @rms not folded because their gains or projection weights are extern globals (in a checkpoint); --flashnorm=fold-plan=plan.json records the folds, flashnorm-fold-checkpoint applies them to the checkpoint
// WARN: warning: flashnorm-fold-gains: 1 norm(s) of @ln not folded
// NOFILE: error: flashnorm-fold-gains: cannot write the fold plan '{{.*}}plan.json': No such file or directory
// ONINPUT: error: flashnorm-fold-gains: fold-plan '{{.*}}input.mlir': it is the input file, which it would overwrite
// NOTPLAN: error: flashnorm-fold-gains: fold-plan '{{.*}}.safetensors': it exists and is not a fold plan, which it would overwrite
// KEPT: safetensors bytes
// ONOUTPUT: error: flashnorm-fold-gains: fold-plan '{{.*}}.mlir': this process writes it (the output file, -o, or where the standard output or error goes), which would overwrite the plan
// DASH: error: flashnorm-fold-gains: fold-plan '-': '-' is not a file

ml_program.global private @"q.weight"(#ml_program.extern : tensor<8x16xf32>) : tensor<8x16xf32>
ml_program.global private @"k.weight"(#ml_program.extern : tensor<16x8xbf16>) : tensor<16x8xbf16>
ml_program.global private @"norm.weight"(#ml_program.extern : tensor<8xbf16>) : tensor<8xbf16>
ml_program.global private @"ln.weight"(#ml_program.extern : tensor<8xf32>) : tensor<8xf32>
ml_program.global private @"ln.bias"(#ml_program.extern : tensor<8xf32>) : tensor<8xf32>
ml_program.global private @"fc.weight"(#ml_program.extern : tensor<16x8xf32>) : tensor<16x8xf32>
ml_program.global private @"v.weight"(dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>) : tensor<2x2xf32>
ml_program.global private @"o.weight"(dense<0.5> : tensor<8x16xf32>) : tensor<8x16xf32>
ml_program.global private @"an.weight"(#ml_program.extern : tensor<2xf32>) : tensor<2xf32>
ml_program.global private @"aq.weight"(#ml_program.extern : tensor<2x2xf32>) : tensor<2x2xf32>
ml_program.global private @"ak.weight"(#ml_program.extern : tensor<2x2xf32>) : tensor<2x2xf32>

// An extern 1 + g gain, an extern K x N weight and an N x K one that is
// also read elsewhere (kept).
func.func @rms(%x: tensor<4x8xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16x8xbf16>) {
  %g = ml_program.global_load_const @"norm.weight" : tensor<8xbf16>
  %wq = ml_program.global_load_const @"q.weight" : tensor<8x16xf32>
  %wk = ml_program.global_load_const @"k.weight" : tensor<16x8xbf16>
  %gf = arith.extf %g : tensor<8xbf16> to tensor<8xf32>
  %n = flashnorm.rms_norm %x gain(%gf : tensor<8xf32>) eps(1.0e-05) convention one_plus : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %k = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%n, %wk : tensor<4x8xf32>, tensor<16x8xbf16>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q, %k, %wk : tensor<4x16xf32>, tensor<4x16xf32>, tensor<16x8xbf16>
}

// A LayerNorm whose gain, bias and weight are in the checkpoint: the
// centered, scaled weight and the bias folded through the weight.
// CHECK-LABEL: func.func @ln
// CHECK-DAG: %[[W:.*]] = ml_program.global_load_const @fc.weight.flashnorm :
// CHECK-DAG: %[[B:.*]] = ml_program.global_load_const @fc.weight.flashnorm_bias :
// CHECK: %[[N:.*]] = flashnorm.layer_norm %arg0 eps
// CHECK: %[[Y:.*]] = linalg.matmul {{.*}} ins(%[[N]], %[[W]] :
// CHECK: linalg.generic {{.*}} ins(%[[Y]], %[[B]] :
// REMARK: Function=ln | Remark="folded the gain and bias (and the mean-centering) into 1 projection weight(s) (1 in the checkpoint, through the fold plan)"
func.func @ln(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %g = ml_program.global_load_const @"ln.weight" : tensor<8xf32>
  %b = ml_program.global_load_const @"ln.bias" : tensor<8xf32>
  %w = ml_program.global_load_const @"fc.weight" : tensor<16x8xf32>
  %n = flashnorm.layer_norm %x gain(%g : tensor<8xf32>) bias(%b : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%n, %w : tensor<4x8xf32>, tensor<16x8xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// A global that holds its value folds in the IR, into a new global.
// CHECK-LABEL: func.func @valued
// CHECK: ml_program.global_load_const @v.weight.flashnorm
// REMARK: Function=valued | Remark="folded the gain into 1 projection weight(s)"
func.func @valued(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %w = ml_program.global_load_const @"v.weight" : tensor<2x2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// The gain is in the checkpoint, the weight is not: refused.
// CHECK-LABEL: func.func @mixed
// CHECK: flashnorm.rms_norm %{{.*}} gain(
// REMARK: Function=mixed | Remark="not folded: the gain is in the checkpoint but the weight of 'linalg.matmul' is not"
func.func @mixed(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %g = ml_program.global_load_const @"ln.weight" : tensor<8xf32>
  %w = ml_program.global_load_const @"o.weight" : tensor<8x16xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// Logits q k^T scaled by 0.5, the query's weight in the checkpoint: its
// plan entry takes 0.5 (1 + g), the multiply goes, the query's constant
// bias is halved in the IR; the key's entry is (1 + g) alone.
// CHECK-LABEL: func.func @attention
// CHECK-DAG: %[[WQ:.*]] = ml_program.global_load_const @aq.weight.flashnorm
// CHECK-DAG: %[[BQ:.*]] = arith.constant dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %[[WQ]] :
// CHECK: ins(%[[BQ]], %{{.*}} : tensor<2xf32>, tensor<3x2xf32>)
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[S]], %{{.*}} : f32
// CHECK-NEXT: linalg.yield %[[A]]
// REMARK: Function=attention | Remark="folded the gain into 2 projection weight(s) (with the attention scale of 1 query projection(s)) (2 in the checkpoint, through the fold plan)"
// OFF-LABEL: func.func @attention
// OFF: arith.mulf %{{.*}}, %cst{{.*}} : f32
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @attention(%x: tensor<3x2xf32>, %mask: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %g = ml_program.global_load_const @"an.weight" : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) convention one_plus : tensor<3x2xf32>
  %wq = ml_program.global_load_const @"aq.weight" : tensor<2x2xf32>
  %wk = ml_program.global_load_const @"ak.weight" : tensor<2x2xf32>
  %bq = arith.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %qb = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bq, %q : tensor<2xf32>, tensor<3x2xf32>) outs(%e : tensor<3x2xf32>) {
  ^bb0(%b: f32, %v: f32, %o: f32):
    %s = arith.addf %b, %v : f32
    linalg.yield %s : f32
  } -> tensor<3x2xf32>
  %k = linalg.matmul ins(%n, %wk : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %et = tensor.empty() : tensor<2x3xf32>
  %kt = linalg.transpose ins(%k : tensor<3x2xf32>) outs(%et : tensor<2x3xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3x3xf32>
  %z3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %l = linalg.matmul ins(%qb, %kt : tensor<3x2xf32>, tensor<2x3xf32>) outs(%z3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l, %mask : tensor<3x3xf32>, tensor<3x3xf32>) outs(%e3 : tensor<3x3xf32>) {
  ^bb0(%s: f32, %mk: f32, %o: f32):
    %sc = arith.mulf %s, %half : f32
    %a = arith.addf %sc, %mk : f32
    linalg.yield %a : f32
  } -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}
