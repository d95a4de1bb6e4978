// A LayerNorm without gain or bias (OLMo's non-parametric one) before bf16
// weights in a checkpoint. Nothing scales them and bf16 cannot carry the
// mean-centering, so the plan computes their column sums alone (of the
// weights as stored: the vector is all ones) and fold-gains names them on
// the projections; the weights stay where they are. defer-scale then
// subtracts the mean's share with them, as for a folded bf16 LayerNorm.
// RUN: flashnorm-opt %s --flashnorm-fold-gains=fold-plan=%t.json --remarks-filter=flashnorm --remark-format=emitRemark 2> %t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: %python -c "import json,sys; d=json.load(open(sys.argv[1])); [print(t['name'], t['op'], t['source'], t['source_dtype'], t['dtype'], t['shape'], 'axis', t['axis'], t['vector']) for t in sorted(d['tensors'], key=lambda t: t['name'])]; print('drop', sorted(d['drop'])); print('loads', sorted(d['loads']))" %t.json | FileCheck %s --check-prefix=PLAN
// RUN: flashnorm-opt %s --flashnorm=fold-plan=%t.defer.json -o - | FileCheck %s --check-prefix=DEFER
// Without a plan nothing is recorded: fold-gains warns that a plan would
// take the norm, and defer-scale says why it cannot.
// RUN: flashnorm-opt %s --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOPLAN

// CHECK-DAG: ml_program.global private @q.weight(#{{.*}}) : tensor<6x8xbf16>
// CHECK-DAG: ml_program.global private @q.weight.flashnorm_colsum(#{{.*}}) : tensor<6xf32>
// CHECK-DAG: ml_program.global private @up.weight.flashnorm_colsum(#{{.*}}) : tensor<4xf32>
// CHECK-LABEL: func.func @olmo
// CHECK: %[[Q:.*]] = ml_program.global_load_const @q.weight : tensor<6x8xbf16>
// CHECK: %[[U:.*]] = ml_program.global_load_const @up.weight : tensor<8x4xbf16>
// CHECK: %[[N:.*]] = flashnorm.layer_norm %arg0 eps
// CHECK: linalg.matmul indexing_maps = {{.*}} {flashnorm.column_sums = @q.weight.flashnorm_colsum} ins(%[[N]], %[[Q]] :
// CHECK: linalg.matmul {flashnorm.column_sums = @up.weight.flashnorm_colsum} ins(%[[N]], %[[U]] :
// REMARK: Function=olmo | Remark="recorded the column sums of 2 projection weight(s) (2 in the checkpoint, through the fold plan) for defer-scale (f16/bf16 weights cannot carry the mean-centering)"
// REMARK-NOT: [Missed]
// PLAN: q.weight.flashnorm_colsum column_sums q.weight BF16 F32 [6] axis 1 {'values': [1, 1, 1, 1, 1, 1, 1, 1]}
// PLAN-NEXT: up.weight.flashnorm_colsum column_sums up.weight BF16 F32 [4] axis 0 {'values': [1, 1, 1, 1, 1, 1, 1, 1]}
// PLAN-NEXT: drop []
// PLAN-NEXT: loads ['q.weight', 'q.weight.flashnorm_colsum', 'up.weight', 'up.weight.flashnorm_colsum']

// DEFER-LABEL: func.func @olmo
// DEFER-SAME: (%[[X:.*]]: tensor<4x8xbf16>
// DEFER-NOT: flashnorm.layer_norm
// DEFER: %[[M:.*]], %[[S:.*]] = flashnorm.layer_stats %[[X]]
// DEFER: %[[P:.*]] = linalg.matmul indexing_maps = {{.*}} ins(%[[X]],
// DEFER: %[[C:.*]] = ml_program.global_load_const @q.weight.flashnorm_colsum : tensor<6xf32>
// DEFER: flashnorm.centered_post_scale %[[P]], %[[S]], %[[M]], %[[C]] : tensor<4x6xf32>, tensor<4xf32>, tensor<6xf32> -> tensor<4x6xf32>
// DEFER: %[[P2:.*]] = linalg.matmul ins(%[[X]],
// DEFER: %[[C2:.*]] = ml_program.global_load_const @up.weight.flashnorm_colsum : tensor<4xf32>
// DEFER: flashnorm.centered_post_scale %[[P2]], %[[S]], %[[M]], %[[C2]] : tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x4xbf16>
// NOPLAN: [Missed] flashnorm-fold-gains | Category:flashnorm | Function=olmo | Remark="not folded: the mean-centering, since the weight of 'linalg.matmul' at {{.*}} is the extern global @{{.*}}.weight (fold-plan=FILE records it for flashnorm-fold-checkpoint)"
// NOPLAN: warning: flashnorm-fold-gains: 1 norm(s) of @olmo not folded because their gains or projection weights are extern globals (in a checkpoint); --flashnorm=fold-plan=plan.json records the folds, flashnorm-fold-checkpoint applies them to the checkpoint
// NOPLAN: [Missed] flashnorm-defer-scale | Category:flashnorm | Function=olmo | Remark="not deferred; user 'linalg.matmul' at {{.*}}: the mean-centering cannot be folded: its weight is the extern global @{{.*}}.weight, and its f16/bf16 values cannot carry the mean-centering: its column sums are not known before the checkpoint is read
ml_program.global private @q.weight(#ml_program.extern : tensor<6x8xbf16>) : tensor<6x8xbf16>
ml_program.global private @up.weight(#ml_program.extern : tensor<8x4xbf16>) : tensor<8x4xbf16>
func.func @olmo(%x: tensor<4x8xbf16>) -> (tensor<4x6xf32>, tensor<4x4xbf16>) {
  %w = ml_program.global_load_const @q.weight : tensor<6x8xbf16>
  %v = ml_program.global_load_const @up.weight : tensor<8x4xbf16>
  %n = flashnorm.layer_norm %x eps(1.0e-05) : tensor<4x8xbf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%n, %w : tensor<4x8xbf16>, tensor<6x8xbf16>) outs(%f : tensor<4x6xf32>) -> tensor<4x6xf32>
  %zb = arith.constant 0.0 : bf16
  %eb = tensor.empty() : tensor<4x4xbf16>
  %fb = linalg.fill ins(%zb : bf16) outs(%eb : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %u = linalg.matmul ins(%n, %v : tensor<4x8xbf16>, tensor<8x4xbf16>) outs(%fb : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  return %y, %u : tensor<4x6xf32>, tensor<4x4xbf16>
}
