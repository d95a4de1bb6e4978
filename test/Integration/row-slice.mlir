// A slice of whole rows between a norm and its projections (Hugging Face's
// last-token logits: the final norm, `hidden[:, -1:, :]` or
// `hidden[:, -1]`, then lm_head) is a row view like a reshape: the gain
// folds through it, and the deferred statistic is taken of the sliced raw
// rows only (the norm over every token goes). A slice of features stays
// refused. Each function against the unrewritten one, through the CPU
// pipeline.
// RUN: flashnorm-opt %s --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o %t.mlir 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s < %t.mlir
// RUN: flashnorm-run %s -e last_token --pipeline=flashnorm --compare | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-run %s -e select_last --pipeline=flashnorm --compare | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-run %s -e dynamic_last --arg 0=0 --pipeline=flashnorm --compare | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-run %s -e dim_of_view --arg 0=0 --pipeline=flashnorm --compare | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-run %s -e layer_norm_last --pipeline=flashnorm --compare | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-run %s -e feature_slice --pipeline=flashnorm --compare | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-run %s -e tosa_last --pipeline=flashnorm --compare | FileCheck %s --check-prefix=CMP
// CMP: MATCH

// REMARK-DAG: Function=last_token | Remark="folded the gain into 1 projection weight(s)"
// REMARK-DAG: Function=last_token | Remark="deferred 1/RMS past 1 projection(s)"
// REMARK-DAG: Function=select_last | Remark="deferred 1/RMS past 1 projection(s)"
// REMARK-DAG: Function=dynamic_last | Remark="deferred 1/RMS past 1 projection(s)"
// REMARK-DAG: Function=dim_of_view | Remark="deferred 1/RMS past 1 projection(s)"
// REMARK-DAG: Function=layer_norm_last | Remark="deferred 1/std past 1 projection(s)"
// REMARK-DAG: Function=tosa_last | Remark="deferred 1/RMS past 1 projection(s)"
// REMARK-DAG: Function=feature_slice | Remark="not folded: user 'tensor.extract_slice'

// CHECK-LABEL: func.func @last_token
// CHECK-SAME: (%[[X:.*]]: tensor<1x5x8xf32>)
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[X]][0, 4, 0] [1, 1, 8] [1, 1, 1]
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[ROW]]
// CHECK: flashnorm.rms_inv %[[C]] {{.*}} : tensor<1x8xf32> -> tensor<1xf32>
// CHECK-NOT: flashnorm.rms_norm
// CHECK: flashnorm.post_scale
func.func @last_token(%x: tensor<1x5x8xf32>) -> tensor<1x1x6xf32> {
  %g = arith.constant dense<[1.5, 0.5, 2.0, -1.0, 0.25, 3.0, 1.0, 0.75]> : tensor<8xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<1x5x8xf32>
  %last = tensor.extract_slice %n[0, 4, 0] [1, 1, 8] [1, 1, 1] : tensor<1x5x8xf32> to tensor<1x1x8xf32>
  %w = arith.constant dense<[[-0.73, 0.69, 0.52, -0.48, -0.01, -0.10], [0.30, 0.57, -0.81, -0.94, 0.67, -0.13],
                             [0.52, -0.99, -0.10, 0.44, -0.54, 0.89], [0.80, -0.93, -0.94, 0.08, 0.87, -0.23],
                             [-0.56, -0.15, -0.94, -0.55, -0.12, -0.01], [-0.53, -0.53, -0.56, -0.08, -0.42, -0.95],
                             [0.67, 0.11, 0.28, -0.62, 0.98, 0.71], [-0.75, -0.33, 0.44, 0.42, 0.87, -0.15]]> : tensor<8x6xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x1x6xf32>) -> tensor<1x1x6xf32>
  %r = tensor.collapse_shape %last [[0, 1], [2]] : tensor<1x1x8xf32> into tensor<1x8xf32>
  %e2 = tensor.empty() : tensor<1x6xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<1x6xf32>) -> tensor<1x6xf32>
  %y = linalg.matmul ins(%r, %w : tensor<1x8xf32>, tensor<8x6xf32>) outs(%z2 : tensor<1x6xf32>) -> tensor<1x6xf32>
  %o = tensor.expand_shape %y [[0, 1], [2]] output_shape [1, 1, 6] : tensor<1x6xf32> into tensor<1x1x6xf32>
  return %o : tensor<1x1x6xf32>
}

// `hidden[:, -1]` (aten.select): a rank-reducing slice.
// CHECK-LABEL: func.func @select_last
// CHECK: tensor.extract_slice %{{.*}}[0, 4, 0] [1, 1, 8] [1, 1, 1] : tensor<1x5x8xf32> to tensor<1x8xf32>
// CHECK-NOT: flashnorm.rms_norm
// CHECK: flashnorm.post_scale
func.func @select_last(%x: tensor<1x5x8xf32>) -> tensor<1x6xf32> {
  %g = arith.constant dense<[1.5, 0.5, 2.0, -1.0, 0.25, 3.0, 1.0, 0.75]> : tensor<8xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<1x5x8xf32>
  %last = tensor.extract_slice %n[0, 4, 0] [1, 1, 8] [1, 1, 1] : tensor<1x5x8xf32> to tensor<1x8xf32>
  %w = arith.constant dense<0.25> : tensor<8x6xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x6xf32>) -> tensor<1x6xf32>
  %y = linalg.matmul ins(%last, %w : tensor<1x8xf32>, tensor<8x6xf32>) outs(%z : tensor<1x6xf32>) -> tensor<1x6xf32>
  return %y : tensor<1x6xf32>
}

// The last of a number of tokens known at run time (offset T - 1).
// CHECK-LABEL: func.func @dynamic_last
// CHECK: %[[ROW:.*]] = tensor.extract_slice %{{.*}}[%{{.*}}, 0] [1, 8] [1, 1] : tensor<?x8xf32> to tensor<1x8xf32>
// CHECK: flashnorm.rms_inv %[[ROW]]
// CHECK-NOT: flashnorm.rms_norm
func.func @dynamic_last(%t: index, %x: tensor<5x8xf32>) -> tensor<1x6xf32> {
  %xd = tensor.cast %x : tensor<5x8xf32> to tensor<?x8xf32>
  %g = arith.constant dense<[1.5, 0.5, 2.0, -1.0, 0.25, 3.0, 1.0, 0.75]> : tensor<8xf32>
  %n = flashnorm.rms_norm %xd gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<?x8xf32>
  %c0i = arith.constant 0 : index
  %c1i = arith.constant 1 : index
  %rows = tensor.dim %n, %c0i : tensor<?x8xf32>
  %at = arith.subi %rows, %c1i : index
  %last = tensor.extract_slice %n[%at, 0] [1, 8] [1, 1] : tensor<?x8xf32> to tensor<1x8xf32>
  %w = arith.constant dense<-0.5> : tensor<8x6xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x6xf32>) -> tensor<1x6xf32>
  %y = linalg.matmul ins(%last, %w : tensor<1x8xf32>, tensor<8x6xf32>) outs(%z : tensor<1x6xf32>) -> tensor<1x6xf32>
  return %y : tensor<1x6xf32>
}

// The row count read from a view of the norm (the tokens flattened before
// the slice): the view is taken of the input instead, and the norm over
// every token goes.
// CHECK-LABEL: func.func @dim_of_view
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x5x8xf32>
// CHECK: %[[XD:.*]] = tensor.cast %[[X]]
// CHECK-NOT: flashnorm.rms_norm
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[XD]]
// CHECK: tensor.dim %[[FLAT]]
// CHECK: flashnorm.rms_inv
// CHECK-NOT: flashnorm.rms_norm
// CHECK: flashnorm.post_scale
func.func @dim_of_view(%t: index, %x: tensor<1x5x8xf32>) -> tensor<1x6xf32> {
  %xd = tensor.cast %x : tensor<1x5x8xf32> to tensor<1x?x8xf32>
  %g = arith.constant dense<[1.5, 0.5, 2.0, -1.0, 0.25, 3.0, 1.0, 0.75]> : tensor<8xf32>
  %n = flashnorm.rms_norm %xd gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<1x?x8xf32>
  %flat = tensor.collapse_shape %n [[0, 1], [2]] : tensor<1x?x8xf32> into tensor<?x8xf32>
  %c0i = arith.constant 0 : index
  %c1i = arith.constant 1 : index
  %rows = tensor.dim %flat, %c0i : tensor<?x8xf32>
  %at = arith.subi %rows, %c1i : index
  %last = tensor.extract_slice %flat[%at, 0] [1, 8] [1, 1] : tensor<?x8xf32> to tensor<1x8xf32>
  %w = arith.constant dense<-0.5> : tensor<8x6xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x6xf32>) -> tensor<1x6xf32>
  %y = linalg.matmul ins(%last, %w : tensor<1x8xf32>, tensor<8x6xf32>) outs(%z : tensor<1x6xf32>) -> tensor<1x6xf32>
  return %y : tensor<1x6xf32>
}

// A LayerNorm (GPT-2's ln_f): its gain, bias and centering go into the
// weights through the slice too.
// CHECK-LABEL: func.func @layer_norm_last
// CHECK: flashnorm.layer_inv {{.*}} : tensor<1x8xf32> -> tensor<1xf32>
// CHECK-NOT: flashnorm.layer_norm
func.func @layer_norm_last(%x: tensor<5x8xf32>) -> tensor<1x6xf32> {
  %g = arith.constant dense<[1.5, 0.5, 2.0, -1.0, 0.25, 3.0, 1.0, 0.75]> : tensor<8xf32>
  %b = arith.constant dense<[0.1, -0.2, 0.3, 0.0, 0.5, -0.6, 0.7, 0.05]> : tensor<8xf32>
  %n = flashnorm.layer_norm %x gain(%g : tensor<8xf32>) bias(%b : tensor<8xf32>) eps(1.0e-05) : tensor<5x8xf32>
  %last = tensor.extract_slice %n[4, 0] [1, 8] [1, 1] : tensor<5x8xf32> to tensor<1x8xf32>
  %w = arith.constant dense<[[-0.73, 0.69, 0.52, -0.48, -0.01, -0.10], [0.30, 0.57, -0.81, -0.94, 0.67, -0.13],
                             [0.52, -0.99, -0.10, 0.44, -0.54, 0.89], [0.80, -0.93, -0.94, 0.08, 0.87, -0.23],
                             [-0.56, -0.15, -0.94, -0.55, -0.12, -0.01], [-0.53, -0.53, -0.56, -0.08, -0.42, -0.95],
                             [0.67, 0.11, 0.28, -0.62, 0.98, 0.71], [-0.75, -0.33, 0.44, 0.42, 0.87, -0.15]]> : tensor<8x6xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x6xf32>) -> tensor<1x6xf32>
  %y = linalg.matmul ins(%last, %w : tensor<1x8xf32>, tensor<8x6xf32>) outs(%z : tensor<1x6xf32>) -> tensor<1x6xf32>
  return %y : tensor<1x6xf32>
}

// Half of the features: the gain does not commute with it as a whole-row
// view (it would take g[4:8]); the norm stays.
// CHECK-LABEL: func.func @feature_slice
// CHECK: flashnorm.rms_norm
func.func @feature_slice(%x: tensor<5x8xf32>) -> tensor<5x6xf32> {
  %g = arith.constant dense<[1.5, 0.5, 2.0, -1.0, 0.25, 3.0, 1.0, 0.75]> : tensor<8xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<5x8xf32>
  %half = tensor.extract_slice %n[0, 4] [5, 4] [1, 1] : tensor<5x8xf32> to tensor<5x4xf32>
  %w = arith.constant dense<0.5> : tensor<4x6xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<5x6xf32>) -> tensor<5x6xf32>
  %y = linalg.matmul ins(%half, %w : tensor<5x4xf32>, tensor<4x6xf32>) outs(%z : tensor<5x6xf32>) -> tensor<5x6xf32>
  return %y : tensor<5x6xf32>
}

// TOSA's slice of the last token.
// CHECK-LABEL: func.func @tosa_last
// CHECK: %[[ROW:.*]] = tosa.slice %arg0
// CHECK: flashnorm.rms_inv %[[ROW]] {{.*}} : tensor<1x1x8xf32> -> tensor<1x1xf32>
// CHECK-NOT: flashnorm.rms_norm
func.func @tosa_last(%x: tensor<1x5x8xf32>) -> tensor<1x1x6xf32> {
  %g = "tosa.const"() <{values = dense<[1.5, 0.5, 2.0, -1.0, 0.25, 3.0, 1.0, 0.75]> : tensor<8xf32>}> : () -> tensor<8xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<1x5x8xf32>
  %start = tosa.const_shape {values = dense<[0, 4, 0]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %size = tosa.const_shape {values = dense<[1, 1, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %last = tosa.slice %n, %start, %size : (tensor<1x5x8xf32>, !tosa.shape<3>, !tosa.shape<3>) -> tensor<1x1x8xf32>
  %w = "tosa.const"() <{values = dense<[[[-0.73, 0.69, 0.52, -0.48, -0.01, -0.10], [0.30, 0.57, -0.81, -0.94, 0.67, -0.13],
                             [0.52, -0.99, -0.10, 0.44, -0.54, 0.89], [0.80, -0.93, -0.94, 0.08, 0.87, -0.23],
                             [-0.56, -0.15, -0.94, -0.55, -0.12, -0.01], [-0.53, -0.53, -0.56, -0.08, -0.42, -0.95],
                             [0.67, 0.11, 0.28, -0.62, 0.98, 0.71], [-0.75, -0.33, 0.44, 0.42, 0.87, -0.15]]]> : tensor<1x8x6xf32>}> : () -> tensor<1x8x6xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.matmul %last, %w, %zp, %zp : (tensor<1x1x8xf32>, tensor<1x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x6xf32>
  return %y : tensor<1x1x6xf32>
}
