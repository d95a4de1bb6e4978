// flashnorm-gpu-fuse-post-scales: a post-scale (marked "post", as
// flashnorm-async-mark and flashnorm-lower-to-linalg leave it) and its one
// element-wise reader become one linalg.generic on tensors, keeping the
// post-scale's marks; every other reader shape is refused, said in a remark,
// and left exactly as it was.
// RUN: flashnorm-opt %s --flashnorm-gpu-fuse-post-scales | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-gpu-fuse-post-scales --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// A module without post-scales comes out exactly as it went in.
// RUN: flashnorm-opt %S/../Pipelines/untouched.mlir > %t.plain
// RUN: flashnorm-opt %S/../Pipelines/untouched.mlir --pass-pipeline='builtin.module(func.func(flashnorm-gpu-fuse-post-scales))' > %t.fused
// RUN: diff %t.plain %t.fused
// Through the GPU pipeline's kernels: the residual add is the post-scale's
// kernel (post_scale_fused), one fewer launch.
// RUN: flashnorm-opt %S/../../examples/llama-block.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-to-kernels=defer-mode=streams --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 | FileCheck %s --check-prefix=BLOCK

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// REMARK-DAG: remark: {{.*}}Function=residual | Remark="post-scale at {{.*}} fused into its reader, linalg.generic at
// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[H:.*]]: tensor<4x8xf32>, %[[S:.*]]: tensor<4xf32>)
// CHECK-NOT: flashnorm.async_role = #flashnorm.async_role<post>}
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[H]], %[[X]], %[[S]] : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<4x8xf32>) attrs =  {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post_fused>}
// CHECK: ^bb0(%[[IH:.*]]: f32, %[[IX:.*]]: f32, %[[IS:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[M:.*]] = arith.mulf %[[IX]], %[[IS]]
// CHECK:   %[[SEL:.*]] = arith.select %{{.*}}, %{{.*}}, %[[M]]
// CHECK:   %[[A:.*]] = arith.addf %[[IH]], %[[SEL]]
// CHECK:   linalg.yield %[[A]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
func.func @residual(%x: tensor<4x8xf32>, %h: tensor<4x8xf32>, %s: tensor<4xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post>} : tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) attrs = {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post>} {
  ^bb0(%in: f32, %sc: f32, %out: f32):
    %m = arith.mulf %in, %sc : f32
    %z = arith.constant 0.0 : f32
    %c = arith.cmpf oeq, %sc, %z : f32
    %r = arith.select %c, %z, %m : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%h, %p : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// convert-elementwise-to-linalg writes `arith.addf %p, %h` into %p's own
// tensor, unread: the fused op writes the post-scale's output instead, and
// nothing of the post-scale is left.
// REMARK-DAG: remark: {{.*}}Function=writes_over | Remark="post-scale at {{.*}} fused into its reader, linalg.generic at
// CHECK-LABEL: func.func @writes_over
// CHECK: %[[OWN:.*]] = tensor.empty() {flashnorm.async_group = 0
// CHECK-NEXT: %[[Y:.*]] = linalg.generic {{.*}} outs(%[[OWN]] : tensor<4x8xf32>) attrs =  {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post_fused>}
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
func.func @writes_over(%x: tensor<4x8xf32>, %h: tensor<4x8xf32>, %s: tensor<4xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post>} : tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) attrs = {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post>} {
  ^bb0(%in: f32, %sc: f32, %out: f32):
    %m = arith.mulf %in, %sc : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %h : tensor<4x8xf32>, tensor<4x8xf32>) outs(%p : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Two readers: fusing into one would compute the post-scale twice.
// REMARK-DAG: remark: {{.*}}Function=two_readers | Remark="post-scale kept as its own kernel: its result has more than one reader"
// CHECK-LABEL: func.func @two_readers
// CHECK-COUNT-3: linalg.generic
func.func @two_readers(%x: tensor<4x8xf32>, %s: tensor<4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) attrs = {flashnorm.async_group = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post>} {
  ^bb0(%in: f32, %sc: f32, %out: f32):
    %m = arith.mulf %in, %sc : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %z = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %y, %z : tensor<4x8xf32>, tensor<4x8xf32>
}

// A reader of the transposed product is not over the same rows.
// REMARK-DAG: remark: {{.*}}Function=transposed | Remark="post-scale kept as its own kernel: its reader is not element-wise over the same rows"
// CHECK-LABEL: func.func @transposed
// CHECK-COUNT-2: linalg.generic
func.func @transposed(%x: tensor<4x4xf32>, %s: tensor<4xf32>) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<4x4xf32>, tensor<4xf32>) outs(%e : tensor<4x4xf32>) attrs = {flashnorm.async_group = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post>} {
  ^bb0(%in: f32, %sc: f32, %out: f32):
    %m = arith.mulf %in, %sc : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// A row reduction of it (the next norm's statistic) is not element-wise.
// REMARK-DAG: remark: {{.*}}Function=reduced | Remark="post-scale kept as its own kernel: its reader is not element-wise over the same rows"
// CHECK-LABEL: func.func @reduced
// CHECK-COUNT-2: linalg.generic
func.func @reduced(%x: tensor<4x8xf32>, %s: tensor<4xf32>, %acc: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) attrs = {flashnorm.async_group = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post>} {
  ^bb0(%in: f32, %sc: f32, %out: f32):
    %m = arith.mulf %in, %sc : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%p : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.addf %a, %out : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// A chain (a LayerNorm's post-scale reads an RMSNorm's): one op cannot
// wait for two norms' joins under one group; the later one, whose reader
// is the return, is kept too.
// REMARK-DAG: remark: {{.*}}Function=chain | Remark="post-scale kept as its own kernel: its reader is a post-scale itself"
// REMARK-DAG: remark: {{.*}}Function=chain | Remark="post-scale kept as its own kernel: its reader is not a linalg.generic"
// CHECK-LABEL: func.func @chain
// CHECK: flashnorm.async_group = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post>
// CHECK: flashnorm.async_group = 1 : i64, flashnorm.async_role = #flashnorm.async_role<post>
func.func @chain(%x: tensor<4x8xf32>, %s: tensor<4xf32>, %t: tensor<4xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) attrs = {flashnorm.async_group = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post>} {
  ^bb0(%in: f32, %sc: f32, %out: f32):
    %m = arith.mulf %in, %sc : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %q = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %t : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) attrs = {flashnorm.async_group = 1 : i64, flashnorm.async_role = #flashnorm.async_role<post>} {
  ^bb0(%in: f32, %sc: f32, %out: f32):
    %m = arith.mulf %in, %sc : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %q : tensor<4x8xf32>
}

// A gate reading both projections' post-scales of one norm (SwiGLU's
// silu(gate) * up): the first fuses; the fused op is then the first pair's
// post-scale and cannot also stand for the second's.
// REMARK-DAG: remark: {{.*}}Function=gate | Remark="post-scale at {{.*}} fused into its reader, linalg.generic at
// REMARK-DAG: remark: {{.*}}Function=gate | Remark="post-scale kept as its own kernel: its reader is a post-scale itself"
// CHECK-LABEL: func.func @gate
// CHECK: linalg.generic {{.*}} attrs =  {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 1 : i64, flashnorm.async_role = #flashnorm.async_role<post>}
// CHECK: linalg.generic {{.*}} attrs =  {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post_fused>}
// CHECK-NOT: linalg.generic
func.func @gate(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>, %s: tensor<4xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %pg = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%g, %s : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) attrs = {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post>} {
  ^bb0(%in: f32, %sc: f32, %out: f32):
    %m = arith.mulf %in, %sc : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %pu = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%u, %s : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) attrs = {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 1 : i64, flashnorm.async_role = #flashnorm.async_role<post>} {
  ^bb0(%in: f32, %sc: f32, %out: f32):
    %m = arith.mulf %in, %sc : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%pg, %pu : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %n = arith.negf %a : f32
    %x = math.exp %n : f32
    %r = arith.mulf %x, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// BLOCK: remark: {{.*}}Remark="post-scale at {{.*}} fused into its reader, linalg.generic at
// BLOCK: gpu.launch {{.*}} function(@{{.*}}_post_scale_fused_{{[0-9]+}})
