// f16 and bf16 prefill projections with N x K weights, 64 tokens or more
// and outputs and k that are multiples of 64 and 32 take the staged
// tensor-core kernel: a block per output tile, eight warps (32 x 4 x 2
// threads), k tiles of A and the weight copied by cp.async into rings of
// shared-memory stages and read as fragments by ldmatrix. Its numbers are
// checked on the CPU in test/Integration/gpu-tensor-cores-on-cpu.test
// (Inputs/bf16-prefill.mlir, Inputs/ragged-prefill.mlir), its PTX in
// gpu-tensor-cores.mlir.
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=gemm=codegen | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=gemm=codegen | flashnorm-opt --pass-pipeline='builtin.module(func.func(flashnorm-gpu-mma))' | FileCheck %s --check-prefix=MMA
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=gemm=codegen --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARKS

#nk = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]

// 256 tokens x 4096 -> 4096: 128 x 128 tiles would make 64 blocks, so the
// tiles halve (n, then m) to 64 x 64: 256 blocks. A stage of both operands
// is 2 x 64 rows of 40 halves (80 bytes: 16 of padding), 10 KB: four
// stages. The prologue fills stages 0-2 (a commit group each) and waits for
// tile 0 (at most 2 groups pending); each iteration copies tile t + 3 (the
// last tile again past the end: affine.min) into stage (t + 3) mod 4,
// multiplies stage t mod 4, waits for tile t + 1 and meets the block at a
// barrier. The weight's fragments are read two n-tiles (16 rows) at a
// time and split in halves. After the loop the block waits for every copy
// still in flight (the ones past the last tile); the accumulators are
// written once. The rings are views of the block's dynamic shared memory
// (40 KB), the weight's from A's 20 KB on.
// Maps of @ragged below: the row A's copies read, clamped to the last
// (129); the bound of the last loop, the real rows of its block's 16 (20 -
// 16 * block x) times the block's row of 32.
// CHECK: #[[LAST_ROW:.*]] = affine_map<()[s0, s1, s2, s3] -> ({{.*}}, 129)>
// CHECK: #[[END_MAP:.*]] = affine_map<()[s0] -> (s0 * -512 + 640, 512)>
// CHECK-LABEL: func.func @large
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c4, %{{.*}} = %c64, %{{.*}} = %c1) threads(%{{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c4, %{{.*}} = %c2) dynamic_shared_memory_size %c40960_i32 {{.*}} function(@large_proj_mma_block_0) {
// CHECK-NEXT: %[[SHARED:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[A:.*]] = memref.view %[[SHARED]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x64x40xf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[W:.*]] = memref.view %[[SHARED]][%c20480][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x64x40xf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-2: nvgpu.device_async_copy %arg{{[01]}}[%{{.*}}, %{{.*}}], %{{.*}}[%c0, %{{.*}}, %{{.*}}], 8 {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK-COUNT-2: nvgpu.device_async_copy {{.*}}[%c1,
// CHECK: nvgpu.device_async_create_group
// CHECK-COUNT-2: nvgpu.device_async_copy {{.*}}[%c2,
// CHECK: %[[G:.*]] = nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[G]] {numGroups = 2 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[SUMS:.*]]:4 = scf.for %[[K0:.*]] = %c0 to %c4096 step %c32 iter_args
// CHECK: %[[AHEAD:.*]] = affine.min #{{.*}}(%[[K0]])
// CHECK: %[[NEXT:.*]] = affine.apply #{{.*}}(%[[K0]])
// CHECK: nvgpu.device_async_copy %arg0[%{{.*}}, %{{.*}}], %[[A]][%[[NEXT]], %{{.*}}, %{{.*}}], 8 {bypassL1}
// CHECK-NEXT: nvgpu.device_async_copy %arg1[%{{.*}}, %{{.*}}], %[[W]][%[[NEXT]], %{{.*}}, %{{.*}}], 8 {bypassL1}
// CHECK-NEXT: %[[G1:.*]] = nvgpu.device_async_create_group
// CHECK: %[[STAGE:.*]] = affine.apply #{{.*}}(%[[K0]])
// CHECK: vector.transfer_read %[[A]][%[[STAGE]], %{{.*}}, %c0], %{{.*}} {in_bounds = [true, true]} : memref<4x64x40xf16, #gpu.address_space<workgroup>>, vector<16x16xf16>
// CHECK: %[[BOTH:.*]] = vector.transfer_read %[[W]][%[[STAGE]], %{{.*}}, %c0], %{{.*}} {in_bounds = [true, true]} : memref<4x64x40xf16, #gpu.address_space<workgroup>>, vector<16x16xf16>
// CHECK-NEXT: vector.extract_strided_slice %[[BOTH]] {offsets = [0, 0], sizes = [8, 16], strides = [1, 1]}
// CHECK-NEXT: vector.extract_strided_slice %[[BOTH]] {offsets = [8, 0], sizes = [8, 16], strides = [1, 1]}
// CHECK-COUNT-4: vector.contract
// CHECK: vector.transfer_read %[[A]][%[[STAGE]], %{{.*}}, %c16]
// CHECK-COUNT-4: vector.contract
// CHECK-NEXT: nvgpu.device_async_wait %[[G1]] {numGroups = 2 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.yield
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: %[[LAST:.*]] = nvgpu.device_async_create_group{{ *$}}
// CHECK-NEXT: nvgpu.device_async_wait %[[LAST]] {numGroups = 0 : i32}
// CHECK-NOT: nvgpu.device_async_copy
// CHECK-COUNT-4: vector.transfer_write %[[SUMS]]#{{[0-3]}}, %arg2[{{.*}}] {in_bounds = [true, true]} : vector<16x8xf32>, memref<256x4096xf32>
// CHECK-NEXT: gpu.terminator
// Each fragment of a stage is one ldmatrix.x4 per lane, at its stage: A's
// 16 x 16, and the weight's 16 rows of two n-tiles, whose halves are
// registers 0 and 2 (the first n-tile's k 0-7 and 8-15) and 1 and 3 (the
// second's); no other read of shared memory is left.
// MMA-LABEL: func.func @large
// MMA: %[[AV:.*]] = memref.view %{{.*}}[%c0][]
// MMA: %[[WV:.*]] = memref.view %{{.*}}[%c20480][]
// MMA-NOT: vector.transfer_read
// MMA: scf.for
// MMA: nvgpu.ldmatrix %[[AV]][%{{.*}}, %{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<4x64x40xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// MMA: %[[WF:.*]] = nvgpu.ldmatrix %[[WV]][%{{.*}}, %{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<4x64x40xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// MMA: %[[R0:.*]] = vector.extract %[[WF]][0]
// MMA-NEXT: %[[H0:.*]] = vector.insert %[[R0]], %{{.*}} [0]
// MMA-NEXT: %[[R2:.*]] = vector.extract %[[WF]][2]
// MMA-NEXT: %[[FIRST:.*]] = vector.insert %[[R2]], %[[H0]] [1]
// MMA: %[[R1:.*]] = vector.extract %[[WF]][1]
// MMA-NEXT: %[[H1:.*]] = vector.insert %[[R1]], %{{.*}} [0]
// MMA-NEXT: %[[R3:.*]] = vector.extract %[[WF]][3]
// MMA-NEXT: %[[SECOND:.*]] = vector.insert %[[R3]], %[[H1]] [1]
// MMA-NEXT: %[[B0:.*]] = vector.extract %[[FIRST]][0]
// MMA-NEXT: %[[B1:.*]] = vector.extract %[[FIRST]][1]
// MMA: nvvm.mma.sync A[{{.*}}]  B[%[[B0]], %[[B1]]]
// MMA: %[[B2:.*]] = vector.extract %[[SECOND]][0]
// MMA-NEXT: %[[B3:.*]] = vector.extract %[[SECOND]][1]
// MMA: nvvm.mma.sync A[{{.*}}]  B[%[[B2]], %[[B3]]]
// MMA-NOT: numTiles = 2
// MMA-NOT: vector.transfer_read
// MMA: scf.yield
// MMA-NOT: vector.transfer_read
// MMA-LABEL: func.func @wide
func.func @large(%x: memref<256x4096xf16>, %w: memref<4096x4096xf16>, %y: memref<256x4096xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%y : memref<256x4096xf32>)
  linalg.matmul indexing_maps = #nk ins(%x, %w : memref<256x4096xf16>, memref<4096x4096xf16>) outs(%y : memref<256x4096xf32>)
  return
}

// 2048 tokens: 128 x 128 tiles (512 blocks), two pieces of each operand per
// thread per tile, four stages too: 80 KB, past the 48 KB a kernel may
// declare statically (the runtime's launch opts in). Warps are 64 x 32
// patches: 4 x 4 fragments.
// CHECK-LABEL: func.func @wide
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c16, %{{.*}} = %c32, %{{.*}} = %c1) {{.*}} dynamic_shared_memory_size %c81920_i32
// CHECK: memref.view %{{.*}}[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x128x40xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: memref.view %{{.*}}[%c40960][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x128x40xbf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-4: nvgpu.device_async_copy
// CHECK-NEXT: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 2 : i32}
// CHECK: scf.for
// CHECK-COUNT-4: nvgpu.device_async_copy
// CHECK-NOT: nvgpu.device_async_copy
// CHECK-COUNT-32: vector.contract
// CHECK-NEXT: nvgpu.device_async_wait %{{.*}} {numGroups = 2 : i32}
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NOT: nvgpu.device_async
// CHECK-COUNT-16: vector.transfer_write
func.func @wide(%x: memref<2048x4096xbf16>, %w: memref<4096x4096xbf16>, %y: memref<2048x4096xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%y : memref<2048x4096xf32>)
  linalg.matmul indexing_maps = #nk ins(%x, %w : memref<2048x4096xbf16>, memref<4096x4096xbf16>) outs(%y : memref<2048x4096xf32>)
  return
}

// A weight stored K x N (an argument; constants are made N x K): a stage of
// it is 32 rows of k, each 128 outputs long and padded by 16 bytes (272
// bytes: the eight rows an ldmatrix.trans reads at one column fall in
// different banks), copied two 16-byte pieces per thread along n; 74 KB of
// rings. The warps read 16 outputs x 16 of k transposed: one
// ldmatrix.trans.x4 for two n-tiles.
// CHECK-LABEL: func.func @kn
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c16, %{{.*}} = %c32, %{{.*}} = %c1) {{.*}} dynamic_shared_memory_size %c75776_i32
// CHECK: memref.view %{{.*}}[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x128x40xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[KN:.*]] = memref.view %{{.*}}[%c40960][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x32x136xbf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-2: nvgpu.device_async_copy %arg0
// CHECK-COUNT-2: nvgpu.device_async_copy %arg1[%{{.*}}, %{{.*}}], %[[KN]][%c0, %{{.*}}, %{{.*}}], 8 {bypassL1}
// CHECK-NEXT: nvgpu.device_async_create_group
// CHECK: scf.for
// CHECK: vector.transfer_read %[[KN]][%{{.*}}, %c0, %{{.*}}], %{{.*}} {in_bounds = [true, true], permutation_map = #{{.*}}} : memref<4x32x136xbf16, #gpu.address_space<workgroup>>, vector<16x16xbf16>
// CHECK-NEXT: vector.extract_strided_slice
// CHECK-NEXT: vector.extract_strided_slice
// CHECK-COUNT-32: vector.contract
// CHECK-NEXT: nvgpu.device_async_wait %{{.*}} {numGroups = 2 : i32}
// MMA-LABEL: func.func @kn
// MMA: %[[KNV:.*]] = memref.view %{{.*}}[%c40960][]
// MMA: scf.for
// MMA: nvgpu.ldmatrix %[[KNV]][%{{.*}}, %{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = true} : memref<4x32x136xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// MMA-NOT: vector.transfer_read
// MMA: scf.yield
func.func @kn(%x: memref<2048x4096xbf16>, %w: memref<4096x4096xbf16>, %y: memref<2048x4096xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%y : memref<2048x4096xf32>)
  linalg.matmul ins(%x, %w : memref<2048x4096xbf16>, memref<4096x4096xbf16>) outs(%y : memref<2048x4096xf32>)
  return
}

// Refused, to the warp-per-tile kernel: 96 outputs (not a multiple of a
// block's 64), and 48 tokens (fewer than a block's 64).
// CHECK-LABEL: func.func @refused
// CHECK: function(@refused_proj_mma_0)
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: function(@refused_proj_mma_1)
// CHECK-NOT: nvgpu.device_async_copy
// REMARKS: remark: {{.*}}kernel @large_proj_mma_block_0
// REMARKS: remark: {{.*}}kernel @wide_proj_mma_block_0
// REMARKS: remark: {{.*}}kernel @kn_proj_mma_block_0
// REMARKS: remark: {{.*}}kernel @refused_proj_mma_0
// REMARKS: remark: {{.*}}kernel @refused_proj_mma_1
// REMARKS: remark: {{.*}}kernel @ragged_proj_mma_block_0
// REMARKS: remark: {{.*}}kernel @ragged_proj_mma_1
func.func @refused(%x: memref<64x256xbf16>, %w96: memref<96x256xbf16>, %y: memref<64x96xf32>,
                   %x2: memref<48x256xbf16>, %w2: memref<128x256xbf16>, %y2: memref<48x128xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%y : memref<64x96xf32>)
  linalg.matmul indexing_maps = #nk ins(%x, %w96 : memref<64x256xbf16>, memref<96x256xbf16>) outs(%y : memref<64x96xf32>)
  linalg.fill ins(%z : f32) outs(%y2 : memref<48x128xf32>)
  linalg.matmul indexing_maps = #nk ins(%x2, %w2 : memref<48x256xbf16>, memref<128x256xbf16>) outs(%y2 : memref<48x128xf32>)
  return
}

// A prompt of 130 tokens: 64-row tiles (62 padded rows, where 128 would pad
// 126), three blocks along m. A's rows past the last copy the last again
// (a row of A reaches only its own row of the product); the stores are
// masked along the rows, and flashnorm-gpu-mma guards each lane's pair by
// its row.
// 20 tokens on the warp-per-tile kernel: two 16-row tiles, k in two
// slices; the block sums the slices' partial tiles over its real rows
// only: 16 x 32 elements (a block's four tiles side by side), or 4 x 32
// in the last tile.
// CHECK-LABEL: func.func @ragged
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c3, %{{.*}} = %c64, %{{.*}} = %c1) {{.*}} function(@ragged_proj_mma_block_0)
// CHECK: %[[ROW:.*]] = affine.min #[[LAST_ROW]]()[
// CHECK-NEXT: nvgpu.device_async_copy %arg0[%[[ROW]], %{{.*}}], %{{.*}}[%c0, %{{.*}}, %{{.*}}], 8 {bypassL1}
// CHECK: nvgpu.device_async_copy %arg1[%{{.*}}, %{{.*}}], %{{.*}}[%c0, %{{.*}}, %{{.*}}], 8 {bypassL1}
// CHECK: scf.for
// CHECK: nvgpu.device_async_copy %arg0[%[[ROW]],
// CHECK: vector.transfer_write {{.*}} {in_bounds = [false, true]} : vector<16x8xf32>, memref<130x4096xf32>
// CHECK: function(@ragged_proj_mma_1)
// CHECK: vector.transfer_read {{.*}} {in_bounds = [false, true]} : memref<20x1024xf16>, vector<16x32xf16>
// CHECK: gpu.barrier
// CHECK: %[[END:.*]] = affine.min #[[END_MAP]]()[%{{.*}}]
// CHECK-NEXT: scf.for %{{.*}} = %{{.*}} to %[[END]] step %c256
// MMA-LABEL: func.func @ragged
// MMA: scf.for
// MMA: %[[REAL:.*]] = arith.cmpi ult, %{{.*}}, %c130{{.*}} : index
// MMA-NEXT: scf.if %[[REAL]] {
// MMA: vector.store %{{.*}} : memref<130x4096xf32>, vector<2xf32>
func.func @ragged(%x: memref<130x256xbf16>, %w: memref<4096x256xbf16>, %y: memref<130x4096xf32>,
                  %x2: memref<20x1024xf16>, %w2: memref<64x1024xf16>, %y2: memref<20x64xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%y : memref<130x4096xf32>)
  linalg.matmul indexing_maps = #nk ins(%x, %w : memref<130x256xbf16>, memref<4096x256xbf16>) outs(%y : memref<130x4096xf32>)
  linalg.fill ins(%z : f32) outs(%y2 : memref<20x64xf32>)
  linalg.matmul indexing_maps = #nk ins(%x2, %w2 : memref<20x1024xf16>, memref<64x1024xf16>) outs(%y2 : memref<20x64xf32>)
  return
}

// CHECK-LABEL: func.func @z_end
func.func @z_end() {
  return
}
