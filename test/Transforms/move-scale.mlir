// RUN: flashnorm-opt %s --flashnorm-move-scale --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-move-scale --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK

// SwiGLU as one fused generic: the up path's 1/RMS moves past the down
// projection; the gate keeps its post-scale (silu is not homogeneous).
// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>
// CHECK: %[[S:.*]] = flashnorm.rms_inv %[[X]]
// CHECK: %[[G:.*]] = linalg.matmul ins(%[[X]], %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>)
// CHECK: %[[GS:.*]] = flashnorm.post_scale %[[G]], %[[S]]
// CHECK: %[[U:.*]] = linalg.matmul ins(%[[X]], %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>)
// CHECK-NOT: flashnorm.post_scale %[[U]]
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%[[GS]], %[[U]] :
// CHECK: %[[D:.*]] = linalg.matmul ins(%[[A]], %{{.*}} : tensor<4x16xf32>, tensor<16x8xf32>)
// CHECK: %[[DS:.*]] = flashnorm.post_scale %[[D]], %[[S]] : tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
// CHECK: return %[[DS]]
// REMARK: Function=swiglu | Remark="moved 1 post-scale(s) past 'linalg.matmul', applied after it as 1 post-scale(s); saves 256 element-wise bytes per call"
func.func @swiglu(%x: tensor<4x8xf32>, %wg: tensor<8x16xf32>, %wu: tensor<8x16xf32>,
                  %wd: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %c0 = arith.constant 0.0 : f32
  %c1 = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %g = linalg.matmul ins(%x, %wg : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %gs = flashnorm.post_scale %g, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %us = flashnorm.post_scale %u, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%gs, %us : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%gv: f32, %uv: f32, %o: f32):
    %n = arith.negf %gv : f32
    %ex = math.exp %n : f32
    %den = arith.addf %c1, %ex : f32
    %silu = arith.divf %gv, %den : f32
    %m = arith.mulf %silu, %uv : f32
    linalg.yield %m : f32
  } -> tensor<4x16xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %z8 = linalg.fill ins(%c0 : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = linalg.matmul ins(%a, %wd : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// ReGLU as torch-mlir writes relu (cmpf ugt + select), in separate
// generics: relu(s g) * (s u) = s^2 (relu(g) * u), both scales move.
// CHECK-LABEL: func.func @reglu
// CHECK: %[[S:.*]] = flashnorm.rms_inv
// CHECK-NOT: flashnorm.post_scale
// CHECK: %[[D:.*]] = linalg.matmul ins(%{{.*}}, %arg3 :
// CHECK-NOT: flashnorm.post_scale
// CHECK: %[[D1:.*]] = flashnorm.post_scale %[[D]], %[[S]] : tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
// CHECK: %[[D2:.*]] = flashnorm.post_scale %[[D1]], %[[S]] : tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
// CHECK: return %[[D2]]
// REMARK: Function=reglu | Remark="moved 2 post-scale(s) past 'linalg.matmul', applied after it as 2 post-scale(s); saves 512 element-wise bytes per call"
#id = affine_map<(i, j) -> (i, j)>
func.func @reglu(%x: tensor<4x8xf32>, %wg: tensor<8x16xf32>, %wu: tensor<8x16xf32>,
                 %wd: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %g = linalg.matmul ins(%x, %wg : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %gs = flashnorm.post_scale %g, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %us = flashnorm.post_scale %u, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%gs : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %p = arith.cmpf ugt, %in, %c0 : f32
    %v = arith.select %p, %in, %c0 : f32
    linalg.yield %v : f32
  } -> tensor<4x16xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %us : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x16xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %z8 = linalg.fill ins(%c0 : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = linalg.matmul ins(%m, %wd : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// A ReLU MLP in TOSA (clamp to [0, max float]) accumulating in f32, then
// rounded to bf16 as the generator writes it: moved past the down
// projection. Where the post-scale itself rounds to bf16 for the clamp, a
// conversion would cost what it saves: left alone, without a remark.
// CHECK-LABEL: func.func @relu_tosa_bf16
// CHECK: %[[S:.*]] = flashnorm.rms_inv
// CHECK: %[[U:.*]] = tosa.matmul
// CHECK: %[[C:.*]] = tosa.cast %[[U]] : (tensor<1x4x16xf32>) -> tensor<1x4x16xbf16>
// CHECK: tosa.clamp %[[C]]
// CHECK: %[[D:.*]] = tosa.matmul
// CHECK: %[[DS:.*]] = flashnorm.post_scale %[[D]], %[[S]] : tensor<1x4x8xf32>, tensor<1x4xf32> -> tensor<1x4x8xf32>
// CHECK: %[[U2:.*]] = tosa.matmul
// CHECK: %[[US2:.*]] = flashnorm.post_scale %[[U2]], %[[S]] : tensor<1x4x16xf32>, tensor<1x4xf32> -> tensor<1x4x16xbf16>
// CHECK: tosa.clamp %[[US2]]
// CHECK: %[[D2:.*]] = tosa.matmul
// CHECK: return %[[DS]], %[[D2]]
// REMARK: Function=relu_tosa_bf16 | Remark="moved 1 post-scale(s) past 'tosa.matmul', applied after it as 1 post-scale(s); saves 256 element-wise bytes per call"
// REMARK: Function=relu_tosa_bf16 | Remark="1 rewritten (0 approximate), 0 refused"
func.func @relu_tosa_bf16(%x: tensor<1x4x8xbf16>, %wu: tensor<1x8x16xbf16>,
                          %wd: tensor<1x16x8xbf16>) -> (tensor<1x4x8xf32>, tensor<1x4x8xf32>) {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<1x4x8xbf16> -> tensor<1x4xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xbf16>}> : () -> tensor<1xbf16>
  %u = tosa.matmul %x, %wu, %zp, %zp : (tensor<1x4x8xbf16>, tensor<1x8x16xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<1x4x16xf32>
  %us = flashnorm.post_scale %u, %s : tensor<1x4x16xf32>, tensor<1x4xf32> -> tensor<1x4x16xf32>
  %ub = tosa.cast %us : (tensor<1x4x16xf32>) -> tensor<1x4x16xbf16>
  %r = tosa.clamp %ub {min_val = 0.0 : bf16, max_val = 3.38953139e38 : bf16} : (tensor<1x4x16xbf16>) -> tensor<1x4x16xbf16>
  %d = tosa.matmul %r, %wd, %zp, %zp : (tensor<1x4x16xbf16>, tensor<1x16x8xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<1x4x8xf32>
  %u2 = tosa.matmul %x, %wu, %zp, %zp : (tensor<1x4x8xbf16>, tensor<1x8x16xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<1x4x16xf32>
  %us2 = flashnorm.post_scale %u2, %s : tensor<1x4x16xf32>, tensor<1x4xf32> -> tensor<1x4x16xbf16>
  %r2 = tosa.clamp %us2 {min_val = 0.0 : bf16, max_val = 3.38953139e38 : bf16} : (tensor<1x4x16xbf16>) -> tensor<1x4x16xbf16>
  %d2 = tosa.matmul %r2, %wd, %zp, %zp : (tensor<1x4x16xbf16>, tensor<1x16x8xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<1x4x8xf32>
  return %d, %d2 : tensor<1x4x8xf32>, tensor<1x4x8xf32>
}

// -----

// A generic that reads its init: the post-scaled up projection times
// itself (as input and as init) is s^2 (u * u), two post-scales after.
// CHECK-LABEL: func.func @reads_init
// CHECK: %[[S:.*]] = flashnorm.rms_inv
// CHECK: %[[U:.*]] = linalg.matmul
// CHECK: linalg.generic {{.*}} ins(%[[U]] : tensor<4x16xf32>) outs(%[[U]] : tensor<4x16xf32>)
// CHECK: %[[D:.*]] = linalg.matmul
// CHECK: %[[D1:.*]] = flashnorm.post_scale %[[D]], %[[S]]
// CHECK: flashnorm.post_scale %[[D1]], %[[S]]
// REMARK: Function=reads_init | Remark="moved 1 post-scale(s) past 'linalg.matmul', applied after it as 2 post-scale(s)
func.func @reads_init(%x: tensor<4x8xf32>, %wu: tensor<8x16xf32>, %wd: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %us = flashnorm.post_scale %u, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%us : tensor<4x16xf32>) outs(%us : tensor<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %o : f32
    linalg.yield %v : f32
  } -> tensor<4x16xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %z8 = linalg.fill ins(%c0 : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = linalg.matmul ins(%m, %wd : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// A bf16 post-scale read by a generic: the generic takes the f32
// accumulator and rounds it to bf16 in its body (one rounding, as before).
// CHECK-LABEL: func.func @bf16_generic
// CHECK: %[[U:.*]] = linalg.matmul {{.*}} -> tensor<4x16xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[U]] : tensor<4x16xbf16>, tensor<4x16xf32>)
// CHECK-NEXT: ^bb0(%{{.*}}: bf16, %[[IN:.*]]: f32, %{{.*}}: bf16):
// CHECK-NEXT: arith.truncf %[[IN]] : f32 to bf16
// CHECK: flashnorm.post_scale %{{.*}} : tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xbf16>
func.func @bf16_generic(%x: tensor<4x8xbf16>, %gate: tensor<4x16xbf16>, %wu: tensor<8x16xbf16>,
                        %wd: tensor<16x8xbf16>) -> tensor<4x8xbf16> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xbf16> -> tensor<4xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %us = flashnorm.post_scale %u, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xbf16>
  %eb = tensor.empty() : tensor<4x16xbf16>
  %m = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%gate, %us : tensor<4x16xbf16>, tensor<4x16xbf16>) outs(%eb : tensor<4x16xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %v = arith.mulf %a, %b : bf16
    linalg.yield %v : bf16
  } -> tensor<4x16xbf16>
  %c0b = arith.constant 0.0 : bf16
  %e8 = tensor.empty() : tensor<4x8xbf16>
  %z8 = linalg.fill ins(%c0b : bf16) outs(%e8 : tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %d = linalg.matmul ins(%m, %wd : tensor<4x16xbf16>, tensor<16x8xbf16>) outs(%z8 : tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %d : tensor<4x8xbf16>
}

// -----

// Refusals. GELU with a bias: 'arith.addf' adds a bias of another scale.
// CHECK-LABEL: func.func @gelu_bias
// CHECK: %[[FS:.*]] = flashnorm.post_scale
// CHECK: arith.addf %[[FS]]
// CHECK: %[[D:.*]] = linalg.matmul
// CHECK-NOT: flashnorm.post_scale
// CHECK: return %[[D]]
// REMARK: Function=gelu_bias | Remark="post-scale not moved past it: its input is no multiple of the post-scale(s) it reads: 'arith.addf' at {{.*}} is not homogeneous in them"
func.func @gelu_bias(%x: tensor<4x8xf32>, %wf: tensor<8x16xf32>, %bias: tensor<4x16xf32>,
                     %wd: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %f = linalg.matmul ins(%x, %wf : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %fs = flashnorm.post_scale %f, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %fb = arith.addf %fs, %bias : tensor<4x16xf32>
  %r = arith.maximumf %fb, %z : tensor<4x16xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %z8 = linalg.fill ins(%c0 : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = linalg.matmul ins(%r, %wd : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// The element-wise result also returned (its users would see it unscaled),
// a down projection with a bias in its init, and an f16 MLP: left alone.
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-3: flashnorm.post_scale
// CHECK-NOT: flashnorm.post_scale
// CHECK: return
// REMARK: Function=refused | Remark="post-scale not moved past it: its input also feeds other ops, which would see it unscaled"
// REMARK: Function=refused | Remark="post-scale not moved past it: it accumulates into a non-zero init (a fused bias would be scaled too)"
// REMARK: Function=refused | Remark="post-scale not moved past it: its result is f16, where an unnormalized product could overflow"
func.func @refused(%x: tensor<4x8xf32>, %wu: tensor<8x16xf32>, %wd: tensor<16x8xf32>,
                   %b8: tensor<4x8xf32>, %xh: tensor<4x8xf16>, %wuh: tensor<8x16xf16>,
                   %wdh: tensor<16x8xf16>)
    -> (tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x8xf16>) {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %z8 = linalg.fill ins(%c0 : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %us = flashnorm.post_scale %u, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %r = arith.maximumf %us, %z : tensor<4x16xf32>
  %d = linalg.matmul ins(%r, %wd : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %u2 = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %us2 = flashnorm.post_scale %u2, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %r2 = arith.maximumf %us2, %z : tensor<4x16xf32>
  %d2 = linalg.matmul ins(%r2, %wd : tensor<4x16xf32>, tensor<16x8xf32>) outs(%b8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %sh = flashnorm.rms_inv %xh eps(1.0e-05) : tensor<4x8xf16> -> tensor<4xf32>
  %c0h = arith.constant 0.0 : f16
  %eh = tensor.empty() : tensor<4x16xf16>
  %zh = linalg.fill ins(%c0h : f16) outs(%eh : tensor<4x16xf16>) -> tensor<4x16xf16>
  %e8h = tensor.empty() : tensor<4x8xf16>
  %z8h = linalg.fill ins(%c0h : f16) outs(%e8h : tensor<4x8xf16>) -> tensor<4x8xf16>
  %uh = linalg.matmul ins(%xh, %wuh : tensor<4x8xf16>, tensor<8x16xf16>) outs(%zh : tensor<4x16xf16>) -> tensor<4x16xf16>
  %ush = flashnorm.post_scale %uh, %sh : tensor<4x16xf16>, tensor<4xf32> -> tensor<4x16xf16>
  %rh = arith.maximumf %ush, %zh : tensor<4x16xf16>
  %dh = linalg.matmul ins(%rh, %wdh : tensor<4x16xf16>, tensor<16x8xf16>) outs(%z8h : tensor<4x8xf16>) -> tensor<4x8xf16>
  return %d, %r, %d2, %dh : tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x8xf16>
}

// -----

// A post-scale that is not of a statistic is not the pass's to move, and a
// scale reaching the projection through a transpose stops there: the
// function comes out as it went in.
// CHECK-LABEL: func.func @untouched
// CHECK: flashnorm.post_scale %{{.*}}, %arg4
// CHECK: flashnorm.post_scale %{{.*}}, %[[S:.*]] :
// CHECK: linalg.transpose
// CHECK-NOT: flashnorm.post_scale
// REMARK-NOT: Function=untouched | Remark="post-scale
// REMARK-NOT: Function=untouched | Remark="moved
func.func @untouched(%x: tensor<4x8xf32>, %wu: tensor<8x16xf32>, %wd: tensor<16x8xf32>,
                     %wt: tensor<4x8xf32>, %scale: tensor<4xf32>)
    -> (tensor<4x8xf32>, tensor<16x8xf32>) {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %z8 = linalg.fill ins(%c0 : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %us = flashnorm.post_scale %u, %scale : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %r = arith.maximumf %us, %z : tensor<4x16xf32>
  %d = linalg.matmul ins(%r, %wd : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %u2 = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %us2 = flashnorm.post_scale %u2, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %et = tensor.empty() : tensor<16x4xf32>
  %t = linalg.transpose ins(%us2 : tensor<4x16xf32>) outs(%et : tensor<16x4xf32>) permutation = [1, 0]
  %e16 = tensor.empty() : tensor<16x8xf32>
  %z16 = linalg.fill ins(%c0 : f32) outs(%e16 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %d2 = linalg.matmul ins(%t, %wt : tensor<16x4xf32>, tensor<4x8xf32>) outs(%z16 : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %d, %d2 : tensor<4x8xf32>, tensor<16x8xf32>
}

// -----

// A rounding post-scale (f32 to bf16) that a generic reads as its init: the
// init's type is the generic's result type, so the generic cannot take the
// raw f32 accumulator there. Nothing moves (the IR stays valid).
// CHECK-LABEL: func.func @rounding_init
// CHECK: %[[P:.*]] = flashnorm.post_scale %{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xbf16>
// CHECK: linalg.generic {{.*}} outs(%[[P]] : tensor<4x16xbf16>)
#id = affine_map<(i, j) -> (i, j)>
func.func @rounding_init(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>,
                         %a: tensor<4x16xbf16>, %wd: tensor<16x8xbf16>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0.0 : f32
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = flashnorm.post_scale %r, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xbf16>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x16xbf16>) outs(%p : tensor<4x16xbf16>) {
  ^bb0(%in: bf16, %o: bf16):
    %m = arith.mulf %in, %o : bf16
    linalg.yield %m : bf16
  } -> tensor<4x16xbf16>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %z8 = linalg.fill ins(%c0 : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = linalg.matmul ins(%g, %wd : tensor<4x16xbf16>, tensor<16x8xbf16>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// TOSA with rows unknown until run time: the multiply may broadcast a
// post-scaled operand of one row over the other's rows, and that row's one
// scale would not match the down projection's rows after a move. Left alone.
// CHECK-LABEL: func.func @tosa_dynamic_rows
// CHECK: %[[U:.*]] = tosa.matmul
// CHECK: %[[US:.*]] = flashnorm.post_scale %[[U]]
// CHECK: tosa.mul %[[US]]
// CHECK: %[[D:.*]] = tosa.matmul
// CHECK-NOT: flashnorm.post_scale
// CHECK: return %[[D]]
// REMARK-NOT: Function=tosa_dynamic_rows | Remark="moved
func.func @tosa_dynamic_rows(%x: tensor<1x?x8xf32>, %g: tensor<1x?x16xf32>, %wu: tensor<1x8x16xf32>,
                             %wd: tensor<1x16x8xf32>) -> tensor<1x?x8xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<1x?x8xf32> -> tensor<1x?xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %sh = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %u = tosa.matmul %x, %wu, %zp, %zp : (tensor<1x?x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x?x16xf32>
  %us = flashnorm.post_scale %u, %s : tensor<1x?x16xf32>, tensor<1x?xf32> -> tensor<1x?x16xf32>
  %m = tosa.mul %us, %g, %sh : (tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1xi8>) -> tensor<1x?x16xf32>
  %d = tosa.matmul %m, %wd, %zp, %zp : (tensor<1x?x16xf32>, tensor<1x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x?x8xf32>
  return %d : tensor<1x?x8xf32>
}

// -----

// x^2 of a constant exponent doubles the scale's degree (a squared ReLU
// written relu(x) ** 2 moves as s^2); a cube (whose power of the raw value
// would overflow f32 from rows of 7e12, where the original's does not), a
// fractional, larger or unknown exponent is no multiple of it.
// CHECK-LABEL: func.func @powers
// CHECK: %[[S:.*]] = flashnorm.rms_inv
// CHECK: %[[SQ:.*]] = linalg.matmul ins(%{{.*}}, %arg2
// CHECK: %[[P1:.*]] = flashnorm.post_scale %[[SQ]], %[[S]]
// CHECK: flashnorm.post_scale %[[P1]], %[[S]]
// CHECK-COUNT-4: flashnorm.post_scale %{{.*}}, %[[S]] : tensor<4x32xf32>
// CHECK-NOT: flashnorm.post_scale
// CHECK: return
// REMARK-DAG: Function=powers | Remark="moved 1 post-scale(s) past 'linalg.matmul', applied after it as 2 post-scale(s)
// REMARK-DAG: Function=powers | Remark="post-scale not moved past it: its input is no multiple of the post-scale(s) it reads: 'linalg.generic' at
// REMARK-DAG: Function=powers | Remark="post-scale not moved past it: its input is no multiple of the post-scale(s) it reads: 'linalg.generic' at
// REMARK-DAG: Function=powers | Remark="post-scale not moved past it: its input is no multiple of the post-scale(s) it reads: 'linalg.generic' at
// REMARK-DAG: Function=powers | Remark="post-scale not moved past it: its input is no multiple of the post-scale(s) it reads: 'linalg.generic' at
#id = affine_map<(i, j) -> (i, j)>
func.func @powers(%x: tensor<4x8xf32>, %wu: tensor<8x32xf32>, %wd: tensor<32x8xf32>,
                  %k: f32)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x32xf32>) -> tensor<4x32xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %z8 = linalg.fill ins(%c0 : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %two = arith.constant 2 : i32
  %three = arith.constant 3.0 : f32
  %half = arith.constant 2.5 : f32
  %five = arith.constant 5.0 : f32
  %u1 = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x32xf32>) outs(%z : tensor<4x32xf32>) -> tensor<4x32xf32>
  %p1 = flashnorm.post_scale %u1, %s : tensor<4x32xf32>, tensor<4xf32> -> tensor<4x32xf32>
  %q1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p1 : tensor<4x32xf32>) outs(%e : tensor<4x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %c0 : f32
    %v = math.fpowi %r, %two : f32, i32
    linalg.yield %v : f32
  } -> tensor<4x32xf32>
  %d1 = linalg.matmul ins(%q1, %wd : tensor<4x32xf32>, tensor<32x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %u2 = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x32xf32>) outs(%z : tensor<4x32xf32>) -> tensor<4x32xf32>
  %p2 = flashnorm.post_scale %u2, %s : tensor<4x32xf32>, tensor<4xf32> -> tensor<4x32xf32>
  %q2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p2 : tensor<4x32xf32>) outs(%e : tensor<4x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = math.powf %in, %three : f32
    linalg.yield %v : f32
  } -> tensor<4x32xf32>
  %d2 = linalg.matmul ins(%q2, %wd : tensor<4x32xf32>, tensor<32x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %u3 = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x32xf32>) outs(%z : tensor<4x32xf32>) -> tensor<4x32xf32>
  %p3 = flashnorm.post_scale %u3, %s : tensor<4x32xf32>, tensor<4xf32> -> tensor<4x32xf32>
  %q3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p3 : tensor<4x32xf32>) outs(%e : tensor<4x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = math.powf %in, %half : f32
    linalg.yield %v : f32
  } -> tensor<4x32xf32>
  %d3 = linalg.matmul ins(%q3, %wd : tensor<4x32xf32>, tensor<32x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %u4 = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x32xf32>) outs(%z : tensor<4x32xf32>) -> tensor<4x32xf32>
  %p4 = flashnorm.post_scale %u4, %s : tensor<4x32xf32>, tensor<4xf32> -> tensor<4x32xf32>
  %q4 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p4 : tensor<4x32xf32>) outs(%e : tensor<4x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = math.powf %in, %five : f32
    linalg.yield %v : f32
  } -> tensor<4x32xf32>
  %d4 = linalg.matmul ins(%q4, %wd : tensor<4x32xf32>, tensor<32x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %u5 = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x32xf32>) outs(%z : tensor<4x32xf32>) -> tensor<4x32xf32>
  %p5 = flashnorm.post_scale %u5, %s : tensor<4x32xf32>, tensor<4xf32> -> tensor<4x32xf32>
  %q5 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p5 : tensor<4x32xf32>) outs(%e : tensor<4x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = math.powf %in, %k : f32
    linalg.yield %v : f32
  } -> tensor<4x32xf32>
  %d5 = linalg.matmul ins(%q5, %wd : tensor<4x32xf32>, tensor<32x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %d1, %d2, %d3, %d4, %d5 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// torch-mlir's batch-1 maps: a literal 0 for the unit batch dimension reads
// index 0 as d0 would, so the up path's 1/RMS moves as through identity
// maps. SiLU and the gate product are two generics, as torch-mlir lowers
// aten.silu and aten.mul.
// CHECK-LABEL: func.func @unit_batch_maps
// CHECK: %[[G:.*]] = linalg.batch_matmul
// CHECK: flashnorm.post_scale %[[G]]
// CHECK: %[[U:.*]] = linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x4x8xf32>, tensor<1x8x16xf32>)
// CHECK-NOT: flashnorm.post_scale %[[U]]
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[U]] :
// CHECK: %[[D:.*]] = linalg.batch_matmul ins(%[[H]], %{{.*}} : tensor<1x4x16xf32>, tensor<1x16x8xf32>)
// CHECK: %[[DS:.*]] = flashnorm.post_scale %[[D]], %{{.*}} : tensor<1x4x8xf32>, tensor<1x4xf32> -> tensor<1x4x8xf32>
// CHECK: return %[[DS]]
// REMARK: Function=unit_batch_maps | Remark="moved 1 post-scale(s) past 'linalg.batch_matmul'
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#b0 = affine_map<(d0, d1, d2) -> (0, d1, d2)>
func.func @unit_batch_maps(%x: tensor<1x4x8xf32>, %wg: tensor<1x8x16xf32>,
                           %wu: tensor<1x8x16xf32>, %wd: tensor<1x16x8xf32>) -> tensor<1x4x8xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<1x4x8xf32> -> tensor<1x4xf32>
  %c0 = arith.constant 0.0 : f32
  %c1 = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1x4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %g = linalg.batch_matmul ins(%x, %wg : tensor<1x4x8xf32>, tensor<1x8x16xf32>) outs(%z : tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %gs = flashnorm.post_scale %g, %s : tensor<1x4x16xf32>, tensor<1x4xf32> -> tensor<1x4x16xf32>
  %u = linalg.batch_matmul ins(%x, %wu : tensor<1x4x8xf32>, tensor<1x8x16xf32>) outs(%z : tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %us = flashnorm.post_scale %u, %s : tensor<1x4x16xf32>, tensor<1x4xf32> -> tensor<1x4x16xf32>
  %silu = linalg.generic {indexing_maps = [#b0, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%gs : tensor<1x4x16xf32>) outs(%e : tensor<1x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %d = arith.addf %ex, %c1 : f32
    %r = arith.divf %a, %d : f32
    linalg.yield %r : f32
  } -> tensor<1x4x16xf32>
  %h = linalg.generic {indexing_maps = [#b0, #b0, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%silu, %us : tensor<1x4x16xf32>, tensor<1x4x16xf32>) outs(%e : tensor<1x4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x4x16xf32>
  %e8 = tensor.empty() : tensor<1x4x8xf32>
  %z8 = linalg.fill ins(%c0 : f32) outs(%e8 : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %y = linalg.batch_matmul ins(%h, %wd : tensor<1x4x16xf32>, tensor<1x16x8xf32>) outs(%z8 : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

// A literal 0 on a dimension longer than one is a broadcast: every row
// reads row 0 of the up projection, scaled by row 0's 1/RMS, which would
// not become each row's after the move. Nothing moves.
// CHECK-LABEL: func.func @row_zero_broadcast
// CHECK: %[[US:.*]] = flashnorm.post_scale
// CHECK: linalg.generic {{.*}} ins(%[[US]] :
// CHECK-NOT: flashnorm.post_scale
// CHECK: return
// REMARK: Function=row_zero_broadcast | Remark="post-scale not moved past it: its input is no multiple of the post-scale(s) it reads: 'linalg.generic' at {{.*}} is not homogeneous in them"
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#r0 = affine_map<(d0, d1) -> (0, d1)>
func.func @row_zero_broadcast(%x: tensor<4x8xf32>, %wu: tensor<8x16xf32>,
                              %wd: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %us = flashnorm.post_scale %u, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %h = linalg.generic {indexing_maps = [#r0, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%us : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x16xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %z8 = linalg.fill ins(%c0 : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%h, %wd : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
