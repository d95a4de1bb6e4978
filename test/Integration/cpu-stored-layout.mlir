// Execution: contractions on weights in their stored layout (nothing packs
// them: here, as in a checkpoint or an argument, the weights are computed at
// run time). Those read along k in both inputs (an N x K weight) run on
// flashnorm-cpu-codegen's split-k kernel, and transposes feeding them are
// read in place (flashnorm-cpu-fold-transposes): decode and prefill (in
// blocks), N x K through indexing maps, through linalg.transpose and through
// torch-mlir's yield-only generic, bf16 weights, q k^T of two heads (k stored
// [S, H, D] too); k = 24 (not a multiple of two vectors) stays on the
// micro-kernel. Decode on a K x N weight streams whole rows of it, k outside
// the output tiles (8 rows at a time; 6 where k = 12, bf16); prefill on
// one copies blocks of it (256 rows by 128 KiB of outputs) into a
// contiguous buffer that every row block reads (each core's chunk its own), bf16
// widened by the copies (the activation once).
// Numbers unchanged against the sequential reference lowering, with the
// split-k blocks in a loop and on the cores.
// RUN: flashnorm-opt %s %lower-to-llvm | %run > %t.ref
// RUN: flashnorm-opt %s --flashnorm-cpu-pipeline | %async-run > %t.out
// RUN: %compare %t.ref %t.out --rtol 1e-4 --atol 1e-5 | FileCheck %s --check-prefix=CMP
// The split-k blocks and the K x N outputs on the cores (OpenMP threads;
// here from any size).
// RUN: flashnorm-opt %s --flashnorm-cpu-to-buffers | flashnorm-opt --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{parallel-min-bytes=0 threads=2}))' > %t.par.mlir
// RUN: FileCheck %s --check-prefix=PAR < %t.par.mlir
// RUN: flashnorm-opt %t.par.mlir --flashnorm-cpu-buffers-to-llvm | %async-run > %t.par
// RUN: %compare %t.ref %t.par --rtol 1e-4 --atol 1e-5 | FileCheck %s --check-prefix=CMP
// PAR-LABEL: func.func @prefill_blocks
// PAR: scf.parallel
// PAR-LABEL: func.func @decode_kn
// PAR: scf.parallel
// PAR-LABEL: func.func @prefill_kn
// PAR: scf.parallel
// PAR: memref.alloc() {alignment = 64 : i64} : memref<256x96xf32>
// The kernels' checks are for 512-bit vector registers (16 lanes).
// RUN: flashnorm-opt %s --flashnorm-cpu-to-buffers=vector-bits=512 | FileCheck %s --check-prefix=BUF
// RUN: flashnorm-opt %s --flashnorm-cpu-to-buffers=vector-bits=512 | flashnorm-opt --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{vector-bits=512}))' | FileCheck %s --check-prefix=KERNEL
// CMP: MATCH

// The transposes are gone, except where the kernel would not take the
// contraction (k = 24).
// BUF-LABEL: func.func @decode_nk
// BUF-NOT: linalg.transpose
// BUF-LABEL: func.func @prefill_transposed
// BUF-NOT: linalg.transpose
// BUF-LABEL: func.func @decode_torch_bf16
// BUF-NOT: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins({{.*}}bf16{{.*}}outs(
// BUF-LABEL: func.func @qk
// BUF-NOT: linalg.transpose
// BUF-LABEL: func.func @qk_heads
// BUF-NOT: linalg.transpose
// BUF-LABEL: func.func @qk_heads_generic
// BUF-NOT: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]}
// BUF-LABEL: func.func @k24
// BUF: linalg.transpose

// KERNEL-LABEL: func.func @decode_nk
// KERNEL: vector.fma {{.*}} : vector<1x8x16xf32>
// KERNEL-LABEL: func.func @prefill_transposed
// KERNEL: vector.fma {{.*}} : vector<4x4x16xf32>
// KERNEL-LABEL: func.func @prefill_blocks
// KERNEL: memref.alloc() : memref<16x32x16xf32>
// KERNEL: scf.for {{.*}} step %c32
// KERNEL: scf.for {{.*}} step %c16
// KERNEL: vector.fma {{.*}} : vector<4x4x16xf32>
// KERNEL-LABEL: func.func @decode_torch_bf16
// KERNEL: arith.extf {{.*}}bf16
// KERNEL: vector.fma {{.*}} : vector<1x8x16xf32>
// KERNEL-LABEL: func.func @qk
// KERNEL: vector.fma {{.*}} : vector<1x4x3x16xf32>
// KERNEL-LABEL: func.func @qk_heads
// KERNEL: vector.fma
// KERNEL-LABEL: func.func @k24
// KERNEL-NOT: vector.fma
// KERNEL: vector.contract
// KERNEL-LABEL: func.func @decode_kn
// KERNEL: scf.for {{.*}} = %c0 to %c64 step %c8
// KERNEL: vector.contract {{.*}} : vector<1x8xf32>, vector<8x48xf32> into vector<1x48xf32>
// KERNEL-LABEL: func.func @prefill_kn
// KERNEL: memref.view {{.*}} to memref<256x96xf32>
// KERNEL: scf.for {{.*}} = %c0 to %c192 step %c96
// KERNEL: scf.for {{.*}} = %c0 to %c512 step %c256
// bf16: the activation widened once into an f32 buffer (freed after), the
// weight widened block by block by the copy: FMAs on f32 in the loop.
// KERNEL-LABEL: func.func @prefill_kn_bf16
// KERNEL: memref.view {{.*}} to memref<256x128xf32>
// KERNEL: %[[X:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x256xf32>
// KERNEL: arith.extf {{.*}} : vector<1x16xbf16> to vector<1x16xf32>
// KERNEL: arith.extf {{.*}} : vector<1x16xbf16> to vector<1x16xf32>
// KERNEL: scf.for {{.*}} -> (vector<8x32xf32>)
// KERNEL-NOT: arith.extf
// KERNEL: vector.fma {{.*}} : vector<8x32xf32>
// KERNEL: memref.dealloc %[[X]]
// KERNEL-LABEL: func.func @decode_kn_bf16
// KERNEL: scf.for {{.*}} = %c0 to %c12 step %c6
// KERNEL: vector.contract {{.*}} : vector<1x6xf32>, vector<6x48xf32> into vector<1x48xf32>

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

func.func @decode_nk(%x: tensor<1x64xf32>, %w: tensor<48x64xf32>) -> tensor<1x48xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x48xf32>) -> tensor<1x48xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<1x64xf32>, tensor<48x64xf32>) outs(%z : tensor<1x48xf32>) -> tensor<1x48xf32>
  return %y : tensor<1x48xf32>
}

func.func @prefill_transposed(%x: tensor<8x64xf32>, %w: tensor<48x64xf32>) -> tensor<8x48xf32> {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<64x48xf32>
  %wt = linalg.transpose ins(%w : tensor<48x64xf32>) outs(%et : tensor<64x48xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<8x48xf32>) -> tensor<8x48xf32>
  %y = linalg.matmul ins(%x, %wt : tensor<8x64xf32>, tensor<64x48xf32>) outs(%z : tensor<8x48xf32>) -> tensor<8x48xf32>
  return %y : tensor<8x48xf32>
}

// 32 rows, 96 outputs: 2 x 3 blocks of 16 rows by 32 outputs, one buffer of
// partial sums for all six.
func.func @prefill_blocks(%x: tensor<32x64xf32>, %w: tensor<96x64xf32>) -> tensor<32x96xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x96xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<32x96xf32>) -> tensor<32x96xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<32x64xf32>, tensor<96x64xf32>) outs(%z : tensor<32x96xf32>) -> tensor<32x96xf32>
  return %y : tensor<32x96xf32>
}

// torch-mlir: nn.Linear's weight transposed by a yield-only generic, bf16.
func.func @decode_torch_bf16(%x: tensor<1x64xbf16>, %w: tensor<48x64xbf16>) -> tensor<1x48xf32> {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<64x48xbf16>
  %wt = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<48x64xbf16>) outs(%et : tensor<64x48xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  } -> tensor<64x48xbf16>
  %e = tensor.empty() : tensor<1x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x48xf32>) -> tensor<1x48xf32>
  %y = linalg.matmul ins(%x, %wt : tensor<1x64xbf16>, tensor<64x48xbf16>) outs(%z : tensor<1x48xf32>) -> tensor<1x48xf32>
  return %y : tensor<1x48xf32>
}

// Attention logits: q [H, T, D] times k [H, S, D] transposed to [H, D, S].
func.func @qk(%q: tensor<2x4x32xf32>, %k: tensor<2x6x32xf32>) -> tensor<2x4x6xf32> {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<2x32x6xf32>
  %kt = linalg.transpose ins(%k : tensor<2x6x32xf32>) outs(%et : tensor<2x32x6xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<2x4x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x32xf32>, tensor<2x32x6xf32>) outs(%z : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  return %s : tensor<2x4x6xf32>
}

// k stored [S, H, D] (as projected, before the heads are split off) and
// permuted to [H, D, S]: a permutation that is not its own inverse.
func.func @qk_heads(%q: tensor<2x4x32xf32>, %k: tensor<6x2x32xf32>) -> tensor<2x4x6xf32> {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<2x32x6xf32>
  %kt = linalg.transpose ins(%k : tensor<6x2x32xf32>) outs(%et : tensor<2x32x6xf32>) permutation = [1, 2, 0]
  %e = tensor.empty() : tensor<2x4x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x32xf32>, tensor<2x32x6xf32>) outs(%z : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  return %s : tensor<2x4x6xf32>
}

// The same permutation as a generic that reads in order and writes
// permuted (its output map is the permutation).
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#cyc = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
func.func @qk_heads_generic(%q: tensor<2x4x32xf32>, %k: tensor<6x2x32xf32>) -> tensor<2x4x6xf32> {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<2x32x6xf32>
  %kt = linalg.generic {indexing_maps = [#id3, #cyc], iterator_types = ["parallel", "parallel", "parallel"]} ins(%k : tensor<6x2x32xf32>) outs(%et : tensor<2x32x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x32x6xf32>
  %e = tensor.empty() : tensor<2x4x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x32xf32>, tensor<2x32x6xf32>) outs(%z : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  return %s : tensor<2x4x6xf32>
}

// k = 24: one and a half vectors; the transpose stays, the micro-kernel runs.
func.func @k24(%x: tensor<8x24xf32>, %w: tensor<48x24xf32>) -> tensor<8x48xf32> {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<24x48xf32>
  %wt = linalg.transpose ins(%w : tensor<48x24xf32>) outs(%et : tensor<24x48xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<8x48xf32>) -> tensor<8x48xf32>
  %y = linalg.matmul ins(%x, %wt : tensor<8x24xf32>, tensor<24x48xf32>) outs(%z : tensor<8x48xf32>) -> tensor<8x48xf32>
  return %y : tensor<8x48xf32>
}

// Decode on K x N weights.
func.func @decode_kn(%x: tensor<1x64xf32>, %w: tensor<64x48xf32>) -> tensor<1x48xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x48xf32>) -> tensor<1x48xf32>
  %y = linalg.matmul ins(%x, %w : tensor<1x64xf32>, tensor<64x48xf32>) outs(%z : tensor<1x48xf32>) -> tensor<1x48xf32>
  return %y : tensor<1x48xf32>
}

// Prefill on K x N weights: two blocks of k by two of outputs (f32); one
// block of k by two of 128 outputs (bf16 widened: the block's 128 KiB
// holds f32), each read by the row blocks.
func.func @prefill_kn(%x: tensor<16x512xf32>, %w: tensor<512x192xf32>) -> tensor<16x192xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x192xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<16x192xf32>) -> tensor<16x192xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x512xf32>, tensor<512x192xf32>) outs(%z : tensor<16x192xf32>) -> tensor<16x192xf32>
  return %y : tensor<16x192xf32>
}

func.func @prefill_kn_bf16(%x: tensor<16x256xbf16>, %w: tensor<256x256xbf16>) -> tensor<16x256xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x256xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<16x256xf32>) -> tensor<16x256xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x256xbf16>, tensor<256x256xbf16>) outs(%z : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %y : tensor<16x256xf32>
}

func.func @decode_kn_bf16(%x: tensor<1x12xbf16>, %w: tensor<12x48xbf16>) -> tensor<1x48xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x48xf32>) -> tensor<1x48xf32>
  %y = linalg.matmul ins(%x, %w : tensor<1x12xbf16>, tensor<12x48xbf16>) outs(%z : tensor<1x48xf32>) -> tensor<1x48xf32>
  return %y : tensor<1x48xf32>
}

// Inputs computed at run time (nothing to pack at compile time):
// sin(0.37 i + 0.11 j + a).
func.func @ramp(%rows: index, %cols: index, %a: f32) -> tensor<?x?xf32> {
  %e = tensor.empty(%rows, %cols) : tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %ci = arith.constant 0.37 : f32
    %cj = arith.constant 0.11 : f32
    %mi = arith.mulf %fi, %ci : f32
    %mj = arith.mulf %fj, %cj : f32
    %s = arith.addf %mi, %mj : f32
    %t = arith.addf %s, %a : f32
    %v = math.sin %t : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

func.func @print(%t: tensor<?x?xf32>) {
  %u = tensor.cast %t : tensor<?x?xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c24 = arith.constant 24 : index
  %c48 = arith.constant 48 : index
  %c64 = arith.constant 64 : index
  %c32 = arith.constant 32 : index
  %c12 = arith.constant 12 : index
  %a0 = arith.constant 0.0 : f32
  %a1 = arith.constant 1.0 : f32
  %a2 = arith.constant 2.0 : f32
  %a3 = arith.constant 3.0 : f32

  %x1d = call @ramp(%c1, %c64, %a0) : (index, index, f32) -> tensor<?x?xf32>
  %x1 = tensor.cast %x1d : tensor<?x?xf32> to tensor<1x64xf32>
  %x8d = call @ramp(%c8, %c64, %a1) : (index, index, f32) -> tensor<?x?xf32>
  %x8 = tensor.cast %x8d : tensor<?x?xf32> to tensor<8x64xf32>
  %wd = call @ramp(%c48, %c64, %a2) : (index, index, f32) -> tensor<?x?xf32>
  %w = tensor.cast %wd : tensor<?x?xf32> to tensor<48x64xf32>

  %y1 = call @decode_nk(%x1, %w) : (tensor<1x64xf32>, tensor<48x64xf32>) -> tensor<1x48xf32>
  %p1 = tensor.cast %y1 : tensor<1x48xf32> to tensor<?x?xf32>
  call @print(%p1) : (tensor<?x?xf32>) -> ()

  %y2 = call @prefill_transposed(%x8, %w) : (tensor<8x64xf32>, tensor<48x64xf32>) -> tensor<8x48xf32>
  %p2 = tensor.cast %y2 : tensor<8x48xf32> to tensor<?x?xf32>
  call @print(%p2) : (tensor<?x?xf32>) -> ()

  %c32r = arith.constant 32 : index
  %c96 = arith.constant 96 : index
  %xbd = call @ramp(%c32r, %c64, %a3) : (index, index, f32) -> tensor<?x?xf32>
  %xbl = tensor.cast %xbd : tensor<?x?xf32> to tensor<32x64xf32>
  %wbd = call @ramp(%c96, %c64, %a1) : (index, index, f32) -> tensor<?x?xf32>
  %wbl = tensor.cast %wbd : tensor<?x?xf32> to tensor<96x64xf32>
  %yb = call @prefill_blocks(%xbl, %wbl) : (tensor<32x64xf32>, tensor<96x64xf32>) -> tensor<32x96xf32>
  %pb = tensor.cast %yb : tensor<32x96xf32> to tensor<?x?xf32>
  call @print(%pb) : (tensor<?x?xf32>) -> ()

  %xb = arith.truncf %x1 : tensor<1x64xf32> to tensor<1x64xbf16>
  %wb = arith.truncf %w : tensor<48x64xf32> to tensor<48x64xbf16>
  %y3 = call @decode_torch_bf16(%xb, %wb) : (tensor<1x64xbf16>, tensor<48x64xbf16>) -> tensor<1x48xf32>
  %p3 = tensor.cast %y3 : tensor<1x48xf32> to tensor<?x?xf32>
  call @print(%p3) : (tensor<?x?xf32>) -> ()

  %qd = call @ramp(%c8, %c32, %a3) : (index, index, f32) -> tensor<?x?xf32>
  %q2 = tensor.cast %qd : tensor<?x?xf32> to tensor<8x32xf32>
  %q = tensor.expand_shape %q2 [[0, 1], [2]] output_shape [2, 4, 32] : tensor<8x32xf32> into tensor<2x4x32xf32>
  %kd = call @ramp(%c12, %c32, %a1) : (index, index, f32) -> tensor<?x?xf32>
  %k2 = tensor.cast %kd : tensor<?x?xf32> to tensor<12x32xf32>
  %k = tensor.expand_shape %k2 [[0, 1], [2]] output_shape [2, 6, 32] : tensor<12x32xf32> into tensor<2x6x32xf32>
  %s = call @qk(%q, %k) : (tensor<2x4x32xf32>, tensor<2x6x32xf32>) -> tensor<2x4x6xf32>
  %s2 = tensor.collapse_shape %s [[0, 1], [2]] : tensor<2x4x6xf32> into tensor<8x6xf32>
  %p4 = tensor.cast %s2 : tensor<8x6xf32> to tensor<?x?xf32>
  call @print(%p4) : (tensor<?x?xf32>) -> ()

  %ks = tensor.expand_shape %k2 [[0, 1], [2]] output_shape [6, 2, 32] : tensor<12x32xf32> into tensor<6x2x32xf32>
  %sh = call @qk_heads(%q, %ks) : (tensor<2x4x32xf32>, tensor<6x2x32xf32>) -> tensor<2x4x6xf32>
  %sh2 = tensor.collapse_shape %sh [[0, 1], [2]] : tensor<2x4x6xf32> into tensor<8x6xf32>
  %p6 = tensor.cast %sh2 : tensor<8x6xf32> to tensor<?x?xf32>
  call @print(%p6) : (tensor<?x?xf32>) -> ()

  %sg = call @qk_heads_generic(%q, %ks) : (tensor<2x4x32xf32>, tensor<6x2x32xf32>) -> tensor<2x4x6xf32>
  %sg2 = tensor.collapse_shape %sg [[0, 1], [2]] : tensor<2x4x6xf32> into tensor<8x6xf32>
  %p7 = tensor.cast %sg2 : tensor<8x6xf32> to tensor<?x?xf32>
  call @print(%p7) : (tensor<?x?xf32>) -> ()

  %x24d = call @ramp(%c8, %c24, %a2) : (index, index, f32) -> tensor<?x?xf32>
  %x24 = tensor.cast %x24d : tensor<?x?xf32> to tensor<8x24xf32>
  %w24d = call @ramp(%c48, %c24, %a3) : (index, index, f32) -> tensor<?x?xf32>
  %w24 = tensor.cast %w24d : tensor<?x?xf32> to tensor<48x24xf32>
  %y5 = call @k24(%x24, %w24) : (tensor<8x24xf32>, tensor<48x24xf32>) -> tensor<8x48xf32>
  %p5 = tensor.cast %y5 : tensor<8x48xf32> to tensor<?x?xf32>
  call @print(%p5) : (tensor<?x?xf32>) -> ()

  %wknd = call @ramp(%c64, %c48, %a3) : (index, index, f32) -> tensor<?x?xf32>
  %wkn = tensor.cast %wknd : tensor<?x?xf32> to tensor<64x48xf32>
  %y8 = call @decode_kn(%x1, %wkn) : (tensor<1x64xf32>, tensor<64x48xf32>) -> tensor<1x48xf32>
  %p8 = tensor.cast %y8 : tensor<1x48xf32> to tensor<?x?xf32>
  call @print(%p8) : (tensor<?x?xf32>) -> ()

  %x12d = call @ramp(%c1, %c12, %a2) : (index, index, f32) -> tensor<?x?xf32>
  %x12 = tensor.cast %x12d : tensor<?x?xf32> to tensor<1x12xf32>
  %x12b = arith.truncf %x12 : tensor<1x12xf32> to tensor<1x12xbf16>
  %w12d = call @ramp(%c12, %c48, %a0) : (index, index, f32) -> tensor<?x?xf32>
  %w12 = tensor.cast %w12d : tensor<?x?xf32> to tensor<12x48xf32>
  %w12b = arith.truncf %w12 : tensor<12x48xf32> to tensor<12x48xbf16>
  %y9 = call @decode_kn_bf16(%x12b, %w12b) : (tensor<1x12xbf16>, tensor<12x48xbf16>) -> tensor<1x48xf32>
  %p9 = tensor.cast %y9 : tensor<1x48xf32> to tensor<?x?xf32>
  call @print(%p9) : (tensor<?x?xf32>) -> ()

  %c16 = arith.constant 16 : index
  %c192 = arith.constant 192 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %xkd = call @ramp(%c16, %c512, %a1) : (index, index, f32) -> tensor<?x?xf32>
  %xk = tensor.cast %xkd : tensor<?x?xf32> to tensor<16x512xf32>
  %wkd = call @ramp(%c512, %c192, %a2) : (index, index, f32) -> tensor<?x?xf32>
  %wk = tensor.cast %wkd : tensor<?x?xf32> to tensor<512x192xf32>
  %y10 = call @prefill_kn(%xk, %wk) : (tensor<16x512xf32>, tensor<512x192xf32>) -> tensor<16x192xf32>
  %p10 = tensor.cast %y10 : tensor<16x192xf32> to tensor<?x?xf32>
  call @print(%p10) : (tensor<?x?xf32>) -> ()

  %xhd = call @ramp(%c16, %c256, %a3) : (index, index, f32) -> tensor<?x?xf32>
  %xh = tensor.cast %xhd : tensor<?x?xf32> to tensor<16x256xf32>
  %xhb = arith.truncf %xh : tensor<16x256xf32> to tensor<16x256xbf16>
  %whd = call @ramp(%c256, %c256, %a0) : (index, index, f32) -> tensor<?x?xf32>
  %wh = tensor.cast %whd : tensor<?x?xf32> to tensor<256x256xf32>
  %whb = arith.truncf %wh : tensor<256x256xf32> to tensor<256x256xbf16>
  %y11 = call @prefill_kn_bf16(%xhb, %whb) : (tensor<16x256xbf16>, tensor<256x256xbf16>) -> tensor<16x256xf32>
  %p11 = tensor.cast %y11 : tensor<16x256xf32> to tensor<?x?xf32>
  call @print(%p11) : (tensor<?x?xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
