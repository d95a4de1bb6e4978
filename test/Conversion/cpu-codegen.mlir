// flashnorm-cpu-codegen: projections as register-blocked micro-kernels (the
// accumulator a vector carried across the k loop, read and written once per
// tile), split along k where both inputs are contiguous along k, other
// linalg ops vectorized, dynamic sizes left alone.
// Tiles are sized for the vector registers (vector-bits; by default this
// machine's): the checks below are for 512-bit registers, AVX2's after them.
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{vector-bits=512}))' | FileCheck %s
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{vector-bits=256}))' | FileCheck %s --check-prefix=AVX2
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen))' -o /dev/null
// RUN: not flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{vector-bits=384}))' 2>&1 | FileCheck %s --check-prefix=BADBITS
// BADBITS: vector-bits must be 0 (this machine's), 128, 256 or 512, not 384
// RUN: not flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{tile-sizes=8,32}))' 2>&1 | FileCheck %s --check-prefix=BADTILES
// RUN: not flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{vector-width=-8}))' 2>&1 | FileCheck %s --check-prefix=BADWIDTH
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{vector-bits=512 parallel-min-bytes=0 threads=2}))' | FileCheck %s --check-prefix=PAR
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{vector-bits=512 parallel-min-bytes=0 threads=1}))' | FileCheck %s --check-prefix=ONE
// RUN: not flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{threads=-1}))' 2>&1 | FileCheck %s --check-prefix=BADTHREADS
// BADTILES: tile-sizes needs 3 values (m, n, k), got 2
// BADWIDTH: tile-sizes must be positive and vector-width must not be negative
// BADTHREADS: threads and parallel-min-bytes must not be negative

// Prefill: 8 x 32 tiles. The K x N weight in its stored layout is first
// copied into a contiguous buffer on the stack (rows of it a power of two
// apart would share cache sets and pages), which both row blocks then read.
// CHECK-LABEL: func.func @prefill
// CHECK: %[[BYTES:.*]] = memref.alloca() {alignment = 64 : i64} : memref<16384xi8>
// CHECK: %[[BUF:.*]] = memref.view %[[BYTES]][%c0][] : memref<16384xi8> to memref<64x64xf32>
// CHECK: scf.for %[[R:.*]] = %c0 to %c64 step %c1
// CHECK: %[[ROW:.*]] = vector.transfer_read %arg1[%[[R]], %[[C:[[:alnum:]_]+]]]{{.*}} vector<1x16xf32>
// CHECK: vector.transfer_write %[[ROW]], %[[BUF]][%[[R]], %[[C]]]
// CHECK: scf.for %[[M:.*]] = %c0 to %c16 step %c8
// CHECK: scf.for %[[N:.*]] = %c0 to %c64 step %c32
// CHECK: %[[INIT:.*]] = vector.transfer_read %arg2[%[[M]], %[[N]]]{{.*}} : memref<16x64xf32>, vector<8x32xf32>
// CHECK: %[[ACC:.*]] = scf.for %[[K:.*]] = %c0 to %c64 step %c1 iter_args(%[[A:.*]] = %[[INIT]]) -> (vector<8x32xf32>)
// CHECK: vector.transfer_read %arg0[%[[M]], %[[K]]]{{.*}} vector<8x1xf32>
// CHECK: vector.transfer_read %[[BUF]][%[[K]], %[[N]]]{{.*}} vector<1x32xf32>
// CHECK: vector.contract {{.*}} %[[A]] : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: scf.yield
// CHECK: vector.transfer_write %[[ACC]], %arg2[%[[M]], %[[N]]]
// AVX2 (16 registers of 8 lanes): 4 x 16 tiles, 8 accumulators.
// AVX2-LABEL: func.func @prefill
// AVX2: scf.for %{{.*}} = %c0 to %c64 step %c16
// AVX2: scf.for %{{.*}} = %c0 to %c16 step %c4
// AVX2: scf.for {{.*}} -> (vector<4x16xf32>)
// AVX2: vector.contract {{.*}} : vector<4x1xf32>, vector<1x16xf32> into vector<4x16xf32>
// PAR-LABEL: func.func @prefill
// PAR: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%c32{{.*}})
// PAR: vector.contract
func.func @prefill(%x: memref<16x64xf32>, %w: memref<64x64xf32>, %y: memref<16x64xf32>) {
  linalg.matmul ins(%x, %w : memref<16x64xf32>, memref<64x64xf32>) outs(%y : memref<16x64xf32>)
  return
}

// A packed panel (one tile wide, contiguous) is read in place: no copy.
// CHECK-LABEL: func.func @prefill_panel
// CHECK-NOT: memref.alloca
// CHECK: vector.transfer_read %arg1{{.*}} vector<1x16xf32>
// CHECK: return
func.func @prefill_panel(%x: memref<16x64xf32>, %w: memref<64x16xf32, strided<[16, 1], offset: ?>>, %y: memref<16x16xf32>) {
  linalg.matmul ins(%x, %w : memref<16x64xf32>, memref<64x16xf32, strided<[16, 1], offset: ?>>) outs(%y : memref<16x16xf32>)
  return
}

// A larger K x N weight: blocks of 256 rows by the outputs of 128 KiB,
// outputs outside k, each block copied once and read by every row block;
// the accumulator read and written once per block. Split over two cores,
// each core's chunk copies into its own buffer, on the heap (one stack
// would hold as many as there are cores). One row block
// reads the weight in place (nothing to share a copy with).
// ONE-LABEL: func.func @prefill_blocks
// ONE: %[[BYTES:.*]] = memref.alloca() {alignment = 64 : i64} : memref<131072xi8>
// ONE: %[[BUF:.*]] = memref.view %[[BYTES]][%c0][] : memref<131072xi8> to memref<256x128xf32>
// ONE: scf.for %[[NB:.*]] = %c0 to %c1024 step %c128
// ONE: scf.for %[[KB:.*]] = %c0 to %c512 step %c256
// ONE: vector.transfer_read %arg1{{.*}} vector<1x16xf32>
// ONE: vector.transfer_write {{.*}}, %[[BUF]]
// ONE: scf.for %{{.*}} = %c0 to %c16 step %c8
// ONE: scf.for %{{.*}} = %c0 to %c128 step %c32
// ONE: scf.for %{{.*}} = %c0 to %c256 step %c1
// ONE: vector.transfer_read %[[BUF]]{{.*}} vector<1x32xf32>
// PAR-LABEL: func.func @prefill_blocks
// PAR-NOT: memref.alloca
// PAR: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c1024) step
// PAR: %[[BUF:.*]] = memref.alloc() {alignment = 64 : i64} : memref<256x128xf32>
// PAR: vector.transfer_write {{.*}}, %[[BUF]]
// PAR: vector.transfer_read %[[BUF]]{{.*}} vector<1x32xf32>
// PAR: memref.dealloc %[[BUF]]
// PAR: scf.reduce
// 160 outputs (five 32-wide tiles; 128 KiB would hold four): blocks of
// whole tiles that divide them, one tile each, never a partial tile.
// ONE-LABEL: func.func @prefill_odd
// ONE: scf.for %{{.*}} = %c0 to %c160 step %c32
// ONE: scf.for %{{.*}} = %c0 to %c512 step %c256
// ONE: vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
// ONE-NOT: linalg.matmul
// ONE: return
// CHECK-LABEL: func.func @prefill_rows
// CHECK-NOT: memref.alloca
// CHECK: vector.transfer_read %arg1{{.*}} vector<1x32xf32>
func.func @prefill_blocks(%x: memref<16x512xf32>, %w: memref<512x1024xf32>, %y: memref<16x1024xf32>) {
  linalg.matmul ins(%x, %w : memref<16x512xf32>, memref<512x1024xf32>) outs(%y : memref<16x1024xf32>)
  return
}
func.func @prefill_odd(%x: memref<16x512xf32>, %w: memref<512x160xf32>, %y: memref<16x160xf32>) {
  linalg.matmul ins(%x, %w : memref<16x512xf32>, memref<512x160xf32>) outs(%y : memref<16x160xf32>)
  return
}
func.func @prefill_rows(%x: memref<8x512xf32>, %w: memref<512x1024xf32>, %y: memref<8x1024xf32>) {
  linalg.matmul ins(%x, %w : memref<8x512xf32>, memref<512x1024xf32>) outs(%y : memref<8x1024xf32>)
  return
}

// Decode on a K x N weight in its stored layout, bf16: k outside the
// output tiles, 8 rows of W at a time, each pass streaming 8 whole rows into
// one row by 256 outputs (the accumulator read and written per tile), the
// weight widened to the f32 accumulator.
// CHECK-LABEL: func.func @decode_bf16
// CHECK: scf.for %[[K:.*]] = %c0 to %c64 step %c8
// CHECK: scf.for %[[N:.*]] = %c0 to %c512 step %c256
// CHECK: %[[W:.*]] = vector.transfer_read %arg1[%[[K]], %[[N]]]{{.*}} vector<8x256xbf16>
// CHECK: %[[A:.*]] = vector.transfer_read %arg2[%c0, %[[N]]]{{.*}} vector<1x256xf32>
// CHECK: %[[WIDE:.*]] = arith.extf %[[W]] : vector<8x256xbf16> to vector<8x256xf32>
// CHECK: %[[R:.*]] = vector.contract {{.*}} %[[WIDE]], %[[A]]
// CHECK: vector.transfer_write %[[R]], %arg2[%c0, %[[N]]]
// On AVX2, one row by 64 outputs.
// AVX2-LABEL: func.func @decode_bf16
// AVX2: scf.for %{{.*}} = %c0 to %c512 step %c64
// AVX2: vector.transfer_read %arg1{{.*}} vector<8x64xbf16>
// From parallel-min-bytes with more than one thread, the outputs in one
// chunk per core first.
// PAR-LABEL: func.func @decode_bf16
// PAR: scf.parallel (%[[C:.*]]) = (%{{.*}}) to (%c512) step (%c256)
// PAR: scf.for %{{.*}} = %c0 to %c64 step %c8
// PAR: vector.transfer_read %arg1[%{{.*}}, %[[C]]]{{.*}} vector<8x256xbf16>
// ONE-LABEL: func.func @decode_bf16
// ONE-NOT: scf.parallel
// ONE: return
func.func @decode_bf16(%x: memref<1x64xf32>, %w: memref<64x512xbf16>, %y: memref<1x512xf32>) {
  linalg.matmul ins(%x, %w : memref<1x64xf32>, memref<64x512xbf16>) outs(%y : memref<1x512xf32>)
  return
}

// Decode on packed panels [N / P][K][P] (flashnorm-pack-weights): a panel
// is contiguous, so one panel by one k at a time, the accumulator in
// registers across k.
// CHECK-LABEL: func.func @decode_panels
// CHECK: scf.for %[[P:.*]] = %c0 to %c4 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<1x1x16xf32>)
// CHECK: vector.transfer_read %arg1[%[[P]], %{{.*}}, %c0]{{.*}} vector<1x1x16xf32>
// CHECK: vector.contract
// PAR-LABEL: func.func @decode_panels
// PAR-NOT: scf.parallel
// PAR: return
func.func @decode_panels(%x: memref<1x64xf32>, %w: memref<4x64x16xf32>, %y: memref<1x4x16xf32>) {
  linalg.contract indexing_maps = [affine_map<(m, p, q, k) -> (m, k)>, affine_map<(m, p, q, k) -> (p, k, q)>, affine_map<(m, p, q, k) -> (m, p, q)>]
    ins(%x, %w : memref<1x64xf32>, memref<4x64x16xf32>) outs(%y : memref<1x4x16xf32>)
  return
}

// An N x K weight (both inputs contiguous along k): split along k into 16
// lanes of partial sums, 8 outputs by 16 lanes in registers across ko, one
// multiply-add per step on contiguous vectors, then each output's lanes
// summed once; the partial sums' buffer (one block here) is freed.
// CHECK-LABEL: func.func @decode_nk
// CHECK: %[[P:.*]] = memref.alloc() : memref<1x32x16xf32>
// CHECK-DAG: %[[XS:.*]] = memref.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [1, 4, 16]
// CHECK-DAG: %[[WS:.*]] = memref.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [32, 4, 16]
// CHECK: scf.for %[[N:.*]] = %c0 to %c32 step %c8
// CHECK: %[[INIT:.*]] = vector.transfer_read %[[P]][%c0, %[[N]], %c0]
// CHECK: scf.for %[[KO:.*]] = %c0 to %c4 step %c1 iter_args(%[[A:.*]] = %[[INIT]]) -> (vector<1x8x16xf32>)
// CHECK: vector.transfer_read %[[XS]][%c0, %[[KO]], %c0]
// CHECK: %[[W:.*]] = vector.transfer_read %[[WS]][%[[N]], %[[KO]], %c0]{{.*}} vector<1x8x1x16xbf16>
// CHECK: arith.extf %[[W]]
// CHECK: vector.fma {{.*}}, %[[A]] : vector<1x8x16xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: scf.yield
// CHECK: vector.transfer_write {{.*}}, %[[P]][%c0, %[[N]], %c0]
// CHECK: vector.multi_reduction <add>, {{.*}} [2] : vector<1x1x16xf32> to vector<1x1xf32>
// CHECK: memref.dealloc %[[P]]
func.func @decode_nk(%x: memref<1x64xf32>, %w: memref<32x64xbf16>, %y: memref<1x32xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<1x64xf32>, memref<32x64xbf16>) outs(%y : memref<1x32xf32>)
  return
}

// Prefill: 4 rows by 4 outputs of 16 lanes (16 accumulators, half of the
// registers); on AVX2 2 rows by 4 outputs of 8 lanes (8 of 16).
// CHECK-LABEL: func.func @prefill_nk
// CHECK: vector.fma {{.*}} : vector<4x4x16xf32>
// AVX2-LABEL: func.func @prefill_nk
// AVX2: memref.alloc() : memref<8x32x8xf32>
// AVX2: vector.fma {{.*}} : vector<2x4x8xf32>
func.func @prefill_nk(%x: memref<8x64xf32>, %w: memref<32x64xf32>, %y: memref<8x32xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<8x64xf32>, memref<32x64xf32>) outs(%y : memref<8x32xf32>)
  return
}

// Larger: blocks of 16 rows by 32 outputs (their partial sums 32 KiB),
// outputs outside rows, one buffer for all blocks; in each, 4 x 4 register
// tiles.
// CHECK-LABEL: func.func @blocks
// CHECK: %[[P:.*]] = memref.alloc() : memref<16x32x16xf32>
// CHECK: scf.for %[[N:.*]] = %c0 to %c64 step %c32
// CHECK: memref.subview %arg1[%[[N]], 0] [32, 64]
// CHECK: scf.for %[[M:.*]] = %c0 to %c32 step %c16
// CHECK: memref.subview %arg0[%[[M]], 0] [16, 64]
// CHECK: vector.transfer_write %{{.*}}, %[[P]]
// CHECK: vector.fma {{.*}} : vector<4x4x16xf32>
// CHECK: vector.multi_reduction <add>
// CHECK: memref.dealloc %[[P]]
// From parallel-min-bytes with more than one thread: the blocks run on the
// cores, each with its own buffer of partial sums. Not with one thread, one
// block (@decode_nk), or inside an async task (beside a statistic).
// PAR-LABEL: func.func @decode_nk
// PAR-NOT: scf.parallel
// PAR-LABEL: func.func @blocks
// PAR: scf.parallel (%[[N:.*]], %[[M:.*]]) = {{.*}} step (%{{.*}}, %{{.*}}) {
// PAR: %[[P:.*]] = memref.alloc() : memref<16x32x16xf32>
// PAR: vector.fma {{.*}} : vector<4x4x16xf32>
// PAR: memref.dealloc %[[P]]
// PAR-NEXT: scf.reduce
// PAR-LABEL: func.func @in_task
// PAR-NOT: scf.parallel
// PAR: vector.fma
// PAR-NOT: scf.parallel
// PAR: return
// ONE-LABEL: func.func @blocks
// ONE-NOT: scf.parallel
// ONE: return
func.func @blocks(%x: memref<32x64xf32>, %w: memref<64x64xf32>, %y: memref<32x64xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<32x64xf32>, memref<64x64xf32>) outs(%y : memref<32x64xf32>)
  return
}

func.func @in_task(%x: memref<32x64xf32>, %w: memref<64x64xf32>, %y: memref<32x64xf32>) {
  %t = async.execute {
    linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<32x64xf32>, memref<64x64xf32>) outs(%y : memref<32x64xf32>)
    async.yield
  }
  async.await %t : !async.token
  return
}

// Refused: a weight whose k is not contiguous (a column view), k = 24 (not
// two vectors), an integer accumulator; each takes the micro-kernel.
// CHECK-LABEL: func.func @strided_k
// CHECK-NOT: vector.fma
// CHECK: vector.contract
// CHECK-LABEL: func.func @short_k
// CHECK-NOT: vector.fma
// CHECK: vector.contract
// CHECK-LABEL: func.func @integer
// CHECK-NOT: vector.fma
// CHECK: vector.contract
func.func @strided_k(%x: memref<1x64xf32>, %w: memref<32x64xf32, strided<[1, 32]>>, %y: memref<1x32xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<1x64xf32>, memref<32x64xf32, strided<[1, 32]>>) outs(%y : memref<1x32xf32>)
  return
}
func.func @short_k(%x: memref<1x24xf32>, %w: memref<32x24xf32>, %y: memref<1x32xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<1x24xf32>, memref<32x24xf32>) outs(%y : memref<1x32xf32>)
  return
}
func.func @integer(%x: memref<1x64xi32>, %w: memref<32x64xi32>, %y: memref<1x32xi32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<1x64xi32>, memref<32x64xi32>) outs(%y : memref<1x32xi32>)
  return
}

// Element-wise: rows of 16-lane vectors.
// CHECK-LABEL: func.func @elementwise
// CHECK: scf.for
// CHECK: scf.for %{{.*}} step %c16
// CHECK: math.exp %{{.*}} : vector<1x16xf32>
func.func @elementwise(%x: memref<4x64xf32>, %y: memref<4x64xf32>) {
  linalg.exp ins(%x : memref<4x64xf32>) outs(%y : memref<4x64xf32>)
  return
}

// Dynamic sizes: left to convert-linalg-to-loops.
// CHECK-LABEL: func.func @dynamic
// CHECK-NEXT: linalg.matmul
func.func @dynamic(%x: memref<?x64xf32>, %w: memref<64x64xf32>, %y: memref<?x64xf32>) {
  linalg.matmul ins(%x, %w : memref<?x64xf32>, memref<64x64xf32>) outs(%y : memref<?x64xf32>)
  return
}
