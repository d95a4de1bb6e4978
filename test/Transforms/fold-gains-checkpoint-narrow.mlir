// A bf16 LayerNorm whose weights are in a checkpoint: the plan folds its
// gain into them (and its bias into new biases), and, since bf16 weights
// cannot carry the mean-centering, also computes each folded weight's
// column sums into a new global (`column_sums`: the sums of what `scale`
// writes, with the same gain), which fold-gains names on the projection.
// defer-scale then loads them for its centered post-scale: the norm is
// deferred with the checkpoint's weights as with constant ones.
// RUN: flashnorm-opt %s --flashnorm-fold-gains=fold-plan=%t.json | FileCheck %s
// RUN: %python -c "import json,sys; d=json.load(open(sys.argv[1])); [print(t['name'], t['op'], t['source'], t['source_dtype'], t['dtype'], t['shape'], 'axis', t['axis'], 'center', t.get('center'), t['vector']) for t in sorted(d['tensors'], key=lambda t: t['name'])]; print('drop', sorted(d['drop'])); print('loads', sorted(d['loads']))" %t.json | FileCheck %s --check-prefix=PLAN
// RUN: flashnorm-opt %s --flashnorm=fold-plan=%t.defer.json --remarks-filter=flashnorm --remark-format=emitRemark -o %t.defer.mlir 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s --check-prefix=DEFER < %t.defer.mlir
// RUN: diff %t.json %t.defer.json

// CHECK-DAG: ml_program.global private @fc.weight.flashnorm(#{{.*}}) : tensor<16x8xbf16>
// CHECK-DAG: ml_program.global private @fc.weight.flashnorm_colsum(#{{.*}}) : tensor<16xf32>
// CHECK-DAG: ml_program.global private @up.weight.flashnorm_colsum(#{{.*}}) : tensor<4xf32>
// CHECK-LABEL: func.func @layer
// CHECK: %[[N:.*]] = flashnorm.layer_norm %arg0 eps
// CHECK: linalg.matmul indexing_maps = {{.*}} {flashnorm.column_sums = @fc.weight.flashnorm_colsum} ins(%[[N]],
// CHECK: linalg.matmul {flashnorm.column_sums = @up.weight.flashnorm_colsum} ins(%[[N]],
// PLAN: fc.weight.flashnorm scale fc.weight BF16 BF16 [16, 8] axis 1 center False {'tensor': 'ln.weight', 'scale': 1, 'offset': 0}
// PLAN-NEXT: fc.weight.flashnorm_bias contract fc.weight BF16 F32 [16] axis 1 center None {'tensor': 'ln.bias', 'scale': 1, 'offset': 0}
// PLAN-NEXT: fc.weight.flashnorm_colsum column_sums fc.weight BF16 F32 [16] axis 1 center None {'tensor': 'ln.weight', 'scale': 1, 'offset': 0}
// PLAN-NEXT: up.weight.flashnorm scale up.weight BF16 BF16 [8, 4] axis 0 center False {'tensor': 'ln.weight', 'scale': 1, 'offset': 0}
// PLAN-NEXT: up.weight.flashnorm_bias contract up.weight BF16 BF16 [4] axis 0 center None {'tensor': 'ln.bias', 'scale': 1, 'offset': 0}
// PLAN-NEXT: up.weight.flashnorm_colsum column_sums up.weight BF16 F32 [4] axis 0 center None {'tensor': 'ln.weight', 'scale': 1, 'offset': 0}
// PLAN-NEXT: drop ['fc.weight', 'ln.bias', 'ln.weight', 'up.weight']
// PLAN-NEXT: loads ['fc.weight.flashnorm', 'fc.weight.flashnorm_bias', 'fc.weight.flashnorm_colsum', 'up.weight.flashnorm', 'up.weight.flashnorm_bias', 'up.weight.flashnorm_colsum']

// REMARK: Function=layer | Remark="deferred 1/std past 2 projection(s); 2 subtract(s) the mean's share after the projection (f16/bf16 weights cannot carry the mean-centering)"
// DEFER-LABEL: func.func @layer
// DEFER-SAME: (%[[X:.*]]: tensor<4x8xbf16>
// DEFER-NOT: flashnorm.column_sums
// DEFER: %[[M:.*]], %[[S:.*]] = flashnorm.layer_stats %[[X]]
// DEFER: %[[P:.*]] = linalg.matmul indexing_maps = {{.*}} ins(%[[X]],
// DEFER: %[[C:.*]] = ml_program.global_load_const @fc.weight.flashnorm_colsum : tensor<16xf32>
// DEFER: flashnorm.centered_post_scale %[[P]], %[[S]], %[[M]], %[[C]] : tensor<4x16xf32>, tensor<4xf32>, tensor<16xf32> -> tensor<4x16xf32>
// DEFER: %[[U:.*]] = linalg.matmul ins(%[[X]],
// DEFER: %[[CU:.*]] = ml_program.global_load_const @up.weight.flashnorm_colsum : tensor<4xf32>
// DEFER: flashnorm.centered_post_scale %[[U]], %[[S]], %[[M]], %[[CU]] : tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x4xbf16>
// DEFER-NOT: flashnorm.column_sums
ml_program.global private @ln.weight(#ml_program.extern : tensor<8xbf16>) : tensor<8xbf16>
ml_program.global private @ln.bias(#ml_program.extern : tensor<8xbf16>) : tensor<8xbf16>
ml_program.global private @fc.weight(#ml_program.extern : tensor<16x8xbf16>) : tensor<16x8xbf16>
ml_program.global private @up.weight(#ml_program.extern : tensor<8x4xbf16>) : tensor<8x4xbf16>
func.func @layer(%x: tensor<4x8xbf16>) -> (tensor<4x16xf32>, tensor<4x4xbf16>) {
  %g = ml_program.global_load_const @ln.weight : tensor<8xbf16>
  %b = ml_program.global_load_const @ln.bias : tensor<8xbf16>
  %w = ml_program.global_load_const @fc.weight : tensor<16x8xbf16>
  %v = ml_program.global_load_const @up.weight : tensor<8x4xbf16>
  %n = flashnorm.layer_norm %x gain(%g : tensor<8xbf16>) bias(%b : tensor<8xbf16>) eps(1.0e-05) : tensor<4x8xbf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%n, %w : tensor<4x8xbf16>, tensor<16x8xbf16>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %zb = arith.constant 0.0 : bf16
  %eb = tensor.empty() : tensor<4x4xbf16>
  %fb = linalg.fill ins(%zb : bf16) outs(%eb : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  %u = linalg.matmul ins(%n, %v : tensor<4x8xbf16>, tensor<8x4xbf16>) outs(%fb : tensor<4x4xbf16>) -> tensor<4x4xbf16>
  return %y, %u : tensor<4x16xf32>, tensor<4x4xbf16>
}
