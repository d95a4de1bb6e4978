// f16 and bf16 projections whose sizes are multiples of the 16 x 8 x 16
// tile run on tensor cores: one warp per 16 x 8 output tile, mma.sync in the
// PTX; for K x N and N x K weights. Their numbers are checked on the CPU in
// test/Integration/gpu-tensor-cores-on-cpu.test (same inputs).
// REQUIRES: cuda-toolkit
// (Serial mode: fused mode, and so auto, the default, takes a norm's
// statistic into these kernels: gpu-fused-kernel.mlir, and FUSED-PTX below.)
// RUN: flashnorm-opt %S/../Integration/Inputs/f16-projection.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=serial format=isa gemm=codegen" | FileCheck %s
// RUN: flashnorm-opt %S/../Integration/Inputs/f16-projection.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=serial format=isa tensor-cores=false gemm=codegen" | FileCheck %s --check-prefix=OFF
// The kernels before the binary: nvgpu.mma.sync became nvvm.mma.sync.
// RUN: flashnorm-opt %S/../Integration/Inputs/f16-projection.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=serial format=isa gemm=codegen" --mlir-print-ir-before=gpu-module-to-binary -o /dev/null 2>&1 | FileCheck %s --check-prefix=NVVM
// bf16: each lane's registers written from upstream's f16 fragment maps
// (the same layout), nvvm.mma.sync with bf16 multiplicands. The N x K
// weight's pairs along k are one 32-bit load each, the K x N weight's two
// 16-bit loads. Eight mma.sync in the k loop and eight after it.
// RUN: flashnorm-opt %S/../Integration/Inputs/bf16-projection.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=serial format=isa gemm=codegen" | FileCheck %s --check-prefix=BF16
// RUN: flashnorm-opt %S/../Integration/Inputs/bf16-projection.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=serial format=isa gemm=codegen" --mlir-print-ir-before=gpu-module-to-binary -o /dev/null 2>&1 | FileCheck %s --check-prefix=BF16-NVVM
// An f16 accumulator with an N x K weight: not a row reduction (the
// all-reduce shuffles 32-bit values), not tensor cores (f32 accumulators
// only); it compiles in every mode.
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="defer-mode=serial format=isa gemm=codegen" -o /dev/null
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="defer-mode=streams format=isa gemm=codegen" -o /dev/null
// 2-15 rows (5 and 7 tokens) run in one tile of padded rows: A's fragment
// read and the output tile's write are masked along the rows; with slices
// of k, the partial tiles' sum covers the real rows only (5 x 16 = 80
// elements). flashnorm-gpu-mma clamps the padded rows' loads to the last
// row (a row of A reaches only its own row of the product) and stores a
// lane's pair only where its row is real. The numbers: gpu-kernels-on-cpu.
// RUN: flashnorm-opt %S/../Integration/Inputs/bf16-few-tokens.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-to-kernels="defer-mode=serial gemm=codegen" | FileCheck %s --check-prefix=PADDED
// RUN: flashnorm-opt %S/../Integration/Inputs/bf16-few-tokens.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-to-kernels="defer-mode=serial gemm=codegen" | flashnorm-opt --pass-pipeline='builtin.module(func.func(flashnorm-gpu-mma))' | FileCheck %s --check-prefix=PADDED-MMA
// RUN: flashnorm-opt %S/../Integration/Inputs/bf16-few-tokens.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=serial format=isa gemm=codegen" | FileCheck %s --check-prefix=PADDED-PTX
// PADDED: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1, %{{.*}} = %c1, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c2, %{{.*}} = %c4) {{.*}} function(@f_proj_mma_0) workgroup(%{{.*}} : memref<64x16xf32, #gpu.address_space<workgroup>>)
// PADDED: vector.transfer_read %{{.*}} {in_bounds = [false, true]} : memref<5x2560xbf16>, vector<16x16xbf16>
// PADDED: vector.transfer_read %{{.*}} {in_bounds = [true, true], permutation_map = #{{.*}}} : memref<2560x16xbf16>, vector<8x16xbf16>
// PADDED: gpu.barrier
// PADDED: scf.for %{{.*}} = %{{.*}} to %c80 step %c256
// PADDED: function(@f_proj_mma_2)
// PADDED: vector.transfer_read %{{.*}} {in_bounds = [false, true]} : memref<7x512xbf16>, vector<16x16xbf16>
// PADDED: vector.transfer_write %{{.*}} {in_bounds = [false, true]} : vector<16x8xf32>, memref<7x64xf32>
// The N x K weight's kernel reads fragments two steps wide: a lane's 16
// bytes of each of its rows, the padded ones clamped to the last row too.
// PADDED-MMA: function(@f_proj_mma_1)
// PADDED-MMA: %[[ROW1:.*]] = arith.minui %{{.*}}, %c4{{.*}} : index
// PADDED-MMA-NEXT: vector.load %{{.*}}[%[[ROW1]], %{{.*}}] {alignment = 16 : i64} : memref<5x2560xbf16>, vector<8xbf16>
// PADDED-MMA: function(@f_proj_mma_2)
// PADDED-MMA: %[[ROW:.*]] = arith.minui %{{.*}}, %c6{{.*}} : index
// PADDED-MMA-NEXT: vector.load %{{.*}}[%[[ROW]], %{{.*}}] {alignment = 4 : i64} : memref<7x512xbf16>, vector<2xbf16>
// PADDED-MMA: %[[REAL:.*]] = arith.cmpi ult, %{{.*}}, %c7{{.*}} : index
// PADDED-MMA-NEXT: scf.if %[[REAL]] {
// PADDED-MMA: vector.store %{{.*}} {alignment = 8 : i64} : memref<7x64xf32>, vector<2xf32>
// PADDED-PTX-COUNT-3: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// The same in auto mode: a norm + projection is one tensor-core kernel
// whose sums of squares are mma.sync too (each A fragment times its own
// halves: three per step where the projection alone has one), 1/RMS in
// its epilogue (the second projection of the first norm shares its
// product's zero fill with the first, and stays unfused).
// RUN: flashnorm-opt %S/../Integration/Inputs/bf16-few-tokens.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="format=isa gemm=codegen" | FileCheck %s --check-prefix=FUSED-PTX
// FUSED-PTX: .entry f_fused_norm_proj_mma_0(
// FUSED-PTX-COUNT-3: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// FUSED-PTX-NOT: fma.rn.f32
// FUSED-PTX: rsqrt.approx.f32
// FUSED-PTX: .entry f_fused_norm_proj_mma_1(
// Weights N x K (fragments two steps wide: a half is a row of the lane's
// part), 16 tokens and 12 (a masked A times its own halves).
// RUN: flashnorm-opt %S/../Integration/Inputs/bf16-decode-fused.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="format=isa gemm=codegen" | FileCheck %s --check-prefix=DECODE-PTX
// DECODE-PTX-NOT: norm_stat
// DECODE-PTX-COUNT-2: .entry f_fused_norm_proj_mma_{{[01]}}(
// DECODE-PTX-NOT: norm_stat
// Outputs that are not a multiple of the tile's 8 (here N = 100; rows need
// not be, M = 130) keep the generated SIMT kernels, and say why.
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-gpu-to-streams="defer-mode=streams gemm=codegen" --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=SIZES

// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @f_kernels::@f_proj_mma_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}})
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @f_kernels::@f_proj_mma_1
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// OFF-NOT: mma.sync
// OFF-NOT: proj_mma
// NVVM: llvm.func @f_proj_mma_0(
// Two warps per block here (N / 8 = 6 tiles): the lane id comes from the
// hardware, the warp from thread y.
// NVVM-SAME: gpu.known_block_size = array<i32: 32, 2, 1>
// NVVM: nvvm.read.ptx.sreg.tid.y
// NVVM: nvvm.read.ptx.sreg.laneid
// NVVM: nvvm.mma.sync
// NVVM: llvm.return
// BF16: gpu.launch_func <%{{.*}} : !llvm.ptr> @f_kernels::@f_proj_mma_0
// BF16: gpu.launch_func <%{{.*}} : !llvm.ptr> @f_kernels::@f_proj_mma_1
// BF16-COUNT-16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// BF16-NVVM: llvm.func @f_proj_mma_0(
// BF16-NVVM: nvvm.read.ptx.sreg.laneid
// BF16-NVVM: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// BF16-NVVM: llvm.return
// SIZES: remark: [Missed] flashnorm-gpu-kernels {{.*}}projection not on tensor cores: the outputs are not a multiple of 8 or k of 16 (the m16n8k16 tile)
func.func @g(%x: tensor<130x64xf16>, %w: tensor<64x100xf16>) -> tensor<130x100xf16> {
  %n = flashnorm.rms_norm %x eps(1.0e-5) : tensor<130x64xf16>
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<130x100xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<130x100xf16>) -> tensor<130x100xf16>
  %y = linalg.matmul ins(%n, %w : tensor<130x64xf16>, tensor<64x100xf16>) outs(%f : tensor<130x100xf16>) -> tensor<130x100xf16>
  return %y : tensor<130x100xf16>
}

#nk = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
func.func @h(%x: tensor<32x64xf16>, %w: tensor<48x64xf16>) -> tensor<32x48xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<32x48xf16>
  %c0 = linalg.fill ins(%z : f16) outs(%e : tensor<32x48xf16>) -> tensor<32x48xf16>
  %c1 = linalg.matmul indexing_maps = #nk ins(%x, %w : tensor<32x64xf16>, tensor<48x64xf16>) outs(%c0 : tensor<32x48xf16>) -> tensor<32x48xf16>
  return %c1 : tensor<32x48xf16>
}

// K = 512 is 32 k steps, 8 per iteration, prefetched: the first group's
// fragments are read before the loop; each iteration reads the next group
// and then multiplies the group it was given; the last group after it. The
// weight is N x K, so fragments span two steps (16 x 32 and 8 x 32): each
// lane loads 16 contiguous bytes of each row it holds (a vector<2x8xbf16>
// of A's rows g and g + 8, a vector<1x8xbf16> of B's row g, carried), where
// 16-wide fragments took a 4-byte load per register, and each paired
// fragment makes two mma.sync.
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels="defer-mode=serial gemm=codegen" | flashnorm-opt --pass-pipeline='builtin.module(func.func(flashnorm-gpu-mma))' | FileCheck %s --check-prefix=LOOP
// LOOP-LABEL: func.func @loop
// LOOP: gpu.lane_id
// LOOP-COUNT-8: vector.load {{.*}} {alignment = 16 : i64} : memref<16x512xbf16>, vector<8xbf16>
// LOOP-COUNT-4: vector.load {{.*}} {alignment = 16 : i64} : memref<64x512xbf16>, vector<8xbf16>
// LOOP-NOT: vector.load
// LOOP-NOT: nvvm.mma.sync
// LOOP: scf.for %{{.*}} = %c128 to %c512 step %c128 iter_args({{.*}}) -> (vector<4xf32>, vector<2x8xbf16>, {{.*}}, vector<1x8xbf16>)
// LOOP-COUNT-8: vector.load {{.*}} : memref<16x512xbf16>, vector<8xbf16>
// LOOP-COUNT-4: vector.load {{.*}} : memref<64x512xbf16>, vector<8xbf16>
// LOOP-NOT: vector.load
// Step 0 of a pair takes values 0-3 of each row, step 1 values 4-7.
// LOOP: vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [2], strides = [1]} : vector<8xbf16> to vector<2xbf16>
// LOOP: vector.extract_strided_slice %{{.*}} {offsets = [2], sizes = [2], strides = [1]}
// LOOP: nvvm.mma.sync
// LOOP: vector.extract_strided_slice %{{.*}} {offsets = [4], sizes = [2], strides = [1]}
// LOOP: vector.extract_strided_slice %{{.*}} {offsets = [6], sizes = [2], strides = [1]}
// LOOP: nvvm.mma.sync
// LOOP-COUNT-6: nvvm.mma.sync
// LOOP-NOT: vector.load
// LOOP: scf.yield
// LOOP-NOT: vector.load
// LOOP-COUNT-8: nvvm.mma.sync
// LOOP-COUNT-2: vector.store {{.*}} {alignment = 8 : i64} : memref<16x64xf32>, vector<2xf32>
#nk16 = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
func.func @loop(%x: memref<16x512xbf16>, %w: memref<64x512xbf16>, %y: memref<16x64xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%y : memref<16x64xf32>)
  linalg.matmul indexing_maps = #nk16 ins(%x, %w : memref<16x512xbf16>, memref<64x512xbf16>) outs(%y : memref<16x64xf32>)
  return
}

// 16 tokens, N = 16: two tiles, too few warps for the weight's stream. K =
// 2560 (160 steps) is split into 4 slices of 40 steps (threads z), each a
// prefetched k loop from its own start; the partial tiles meet in shared
// memory and, after the barrier, each thread sums an element's 4 slices in
// slice order and writes it once.
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels="defer-mode=serial gemm=codegen" | FileCheck %s --check-prefix=SPLIT
// SPLIT-LABEL: func.func @split
// SPLIT: gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c1, {{.*}} = %c1) threads(%[[TX:.*]], %[[TY:.*]], %[[TZ:.*]]) in ({{.*}} = %c32, {{.*}} = %c2, {{.*}} = %c4) {{.*}} workgroup(%[[P:.*]] : memref<64x16xf32, #gpu.address_space<workgroup>>)
// SPLIT: %[[K0:.*]] = affine.apply #{{.*}}()[%[[TZ]]]
// SPLIT: vector.transfer_read %arg1[%{{.*}}, %[[K0]]]
// SPLIT: scf.for %[[S:.*]] = %c128 to %c640 step %c128 iter_args
// SPLIT: affine.apply #{{.*}}(%[[S]])[%[[TZ]]]
// SPLIT: scf.yield
// SPLIT: vector.transfer_write %{{.*}}, %[[P]][%{{.*}}, %{{.*}}] {in_bounds = [true, true]} : vector<16x8xf32>, memref<64x16xf32, #gpu.address_space<workgroup>>
// SPLIT-NEXT: gpu.barrier
// SPLIT: scf.for %{{.*}} = %{{.*}} to %c256 step %c256 {
// SPLIT-NEXT: affine.apply
// SPLIT-NEXT: affine.apply
// SPLIT-NEXT: %[[S0:.*]] = memref.load %[[P]]
// SPLIT: %[[S1:.*]] = memref.load %[[P]]
// SPLIT-NEXT: %[[A1:.*]] = arith.addf %[[S0]], %[[S1]]
// SPLIT: %[[S2:.*]] = memref.load %[[P]]
// SPLIT-NEXT: %[[A2:.*]] = arith.addf %[[A1]], %[[S2]]
// SPLIT: %[[S3:.*]] = memref.load %[[P]]
// SPLIT-NEXT: %[[A3:.*]] = arith.addf %[[A2]], %[[S3]]
// SPLIT-NEXT: memref.store %[[A3]], %arg2
// SPLIT-NEXT: }
// SPLIT-NEXT: gpu.terminator
// The partial tile goes to shared memory a value at a time (a workgroup
// buffer is aligned to its element only); in PTX, one barrier.
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels="defer-mode=serial gemm=codegen" | flashnorm-opt --pass-pipeline='builtin.module(func.func(flashnorm-gpu-mma))' | FileCheck %s --check-prefix=SPLIT-MMA
// SPLIT-MMA-LABEL: func.func @split
// SPLIT-MMA-NOT: vector.store {{.*}}#gpu.address_space<workgroup>
// SPLIT-MMA-COUNT-4: memref.store {{.*}} : memref<64x16xf32, #gpu.address_space<workgroup>>
// SPLIT-MMA-NOT: vector.store {{.*}}#gpu.address_space<workgroup>
// SPLIT-MMA: gpu.barrier
// Both layouts of test/Integration/Inputs/bf16-split-k.mlir (whose numbers
// gpu-tensor-cores-on-cpu.test checks) in PTX: 32 x 2 x 4 threads, the prologue
// and the loop's 8 mma.sync each, one barrier per kernel.
// RUN: flashnorm-opt %S/../Integration/Inputs/bf16-split-k.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=serial format=isa gemm=codegen" | FileCheck %s --check-prefix=SPLIT-PTX
// SPLIT-PTX: gpu.launch_func {{.*}} @f_kernels::@f_proj_mma_0
// SPLIT-PTX: gpu.launch_func {{.*}} @f_kernels::@f_proj_mma_1
// SPLIT-PTX: .entry f_proj_mma_0
// SPLIT-PTX: .maxntid 32, 2, 4
// The partial tiles' buffer is declared aligned for the v2 stores LLVM
// merges the lanes' pairs into (flashnorm-gpu-align-workgroup).
// SPLIT-PTX: .shared .align 16 .b8 __wg_f_proj_mma_0_0[4096];
// SPLIT-PTX-COUNT-16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// SPLIT-PTX: st.shared.v2.b32
// SPLIT-PTX: bar.sync
// SPLIT-PTX: .entry f_proj_mma_1
// SPLIT-PTX: .maxntid 32, 2, 4
// SPLIT-PTX-COUNT-16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// SPLIT-PTX: bar.sync
// Prefill through shared memory (test/Integration/Inputs/bf16-prefill.mlir,
// whose numbers gpu-tensor-cores-on-cpu.test checks; the kernel's structure in
// gpu-tensor-core-blocks.mlir): 32 x 4 x 2 threads, two rings of four
// 64 x 40 stages in the block's dynamic shared memory (its base aligned to
// 16 bytes, the weight's ring 20480 bytes on); the prologue commits three
// groups of cp.async copies and waits for the first (at most two pending);
// fragments come from ldmatrix.x4 (the activation's 16 x 16, the weight's
// 16 rows of two n-tiles), none from an x2.
// RUN: flashnorm-opt %S/../Integration/Inputs/bf16-prefill.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=serial format=isa gemm=codegen" | FileCheck %s --check-prefix=STAGED-PTX
// STAGED-PTX: .shared .align 16 .b8 __dynamic_shmem__0;
// STAGED-PTX: .entry f_proj_mma_block_0
// STAGED-PTX: .maxntid 32, 4, 2
// STAGED-PTX: mov.b64 \09%rd{{[0-9]+}}, __dynamic_shmem__0;
// STAGED-PTX: cp.async.cg.shared.global [%rd{{[0-9]+}}+20480], [%rd{{[0-9]+}}], 16;
// STAGED-PTX-COUNT-3: cp.async.commit_group;
// STAGED-PTX: cp.async.wait_group \092;
// STAGED-PTX: bar.sync
// STAGED-PTX-NOT: ldmatrix.sync.aligned.m8n8.x2
// STAGED-PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// STAGED-PTX-NOT: ldmatrix.sync.aligned.m8n8.x2
// STAGED-PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// STAGED-PTX-NOT: ldmatrix.sync.aligned.m8n8.x2
// STAGED-PTX: .entry f_proj_mma_block_1
// STAGED-PTX-NOT: ldmatrix.sync.aligned.m8n8.x2
// STAGED-PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// STAGED-PTX-NOT: ldmatrix.sync.aligned.m8n8.x2
// STAGED-PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// A weight stored K x N (Inputs/kn-prefill.mlir): its fragments come from
// ldmatrix.trans (rows of the stage along n), A's as before.
// RUN: flashnorm-opt %S/../Integration/Inputs/kn-prefill.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=serial format=isa gemm=codegen" | FileCheck %s --check-prefix=KN-PTX
// KN-PTX: .entry f_proj_mma_block_0
// KN-PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// KN-PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// KN-PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// KN-PTX: .entry f_proj_mma_block_1
// KN-PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// KN-PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
#nks = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
func.func @split(%x: memref<16x2560xbf16>, %w: memref<16x2560xbf16>, %y: memref<16x16xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%y : memref<16x16xf32>)
  linalg.matmul indexing_maps = #nks ins(%x, %w : memref<16x2560xbf16>, memref<16x2560xbf16>) outs(%y : memref<16x16xf32>)
  return
}
