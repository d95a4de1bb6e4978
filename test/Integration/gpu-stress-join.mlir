// The join under stress on the GPU (docs/MATH.md §6): the recurrent loop of
// stress-join.mlir for 1000 steps, device buffers recycled across steps by
// the runtime. In streams mode the statistic and the projection run on two
// streams joined before the post-scale; every step's checksum must match the
// CPU's. The mutant drops the statistic's stream from the join
// (flashnorm-test-drop-join): the race verifier rejects it. (Run anyway, its
// post-scale may read a scale the statistic has not written yet; on an H200
// the statistic finished first on all 1000 steps, so the race is not
// checked by running it.)
// REQUIRES: gpu, cuda-runtime
// RUN: flashnorm-opt %s %lower-to-llvm | %async-run > %t.ref
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=streams gemm=codegen" | %gpu-run > %t.streams
// RUN: %compare %t.ref %t.streams --rtol 1e-4 --atol 1e-4 | FileCheck %s --check-prefix=JOINED
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=fused gemm=codegen" | %gpu-run > %t.fused
// RUN: %compare %t.ref %t.fused --rtol 1e-4 --atol 1e-4 | FileCheck %s --check-prefix=JOINED
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-gpu-to-streams="defer-mode=streams gemm=codegen" \
// RUN:   | flashnorm-opt --flashnorm-test-drop-join \
// RUN:   | not flashnorm-opt --flashnorm-gpu-streams-to-llvm -o /dev/null 2>&1 | FileCheck %s --check-prefix=MUTANT
// JOINED: MATCH: 1000 numbers
// MUTANT: with no happens-before order between them

func.func @step(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %g = arith.constant dense<[0.952, 1.060, 1.424, 0.966, 1.008, 1.087, 0.685, 1.012, 1.130, 1.293, 0.594, 0.803, 0.591, 1.310, 1.193, 0.542, 1.482, 1.465, 1.154, 1.116, 0.657, 0.515, 1.028, 0.560, 0.690, 0.742, 0.530, 0.964, 0.941, 1.342, 1.019, 1.140, 1.000, 1.162, 0.957, 0.778, 1.498, 1.496, 1.340, 1.208, 0.815, 0.730, 0.789, 0.570, 1.266, 0.900, 1.347, 0.887, 1.458, 1.347, 0.501, 0.710, 1.410, 0.970, 1.480, 0.897, 0.573, 1.129, 1.279, 0.770, 0.587, 0.833, 1.464, 1.258, 0.618, 0.746, 0.601, 0.560, 1.297, 0.678, 1.059, 0.947, 0.691, 1.232, 0.631, 1.144, 0.617, 0.921, 0.713, 0.770, 1.471, 1.303, 0.804, 1.385, 0.711, 0.894, 1.354, 1.142, 0.600, 1.489, 0.713, 0.758, 1.273, 0.829, 0.796, 0.573, 0.590, 1.083, 0.743, 1.101, 0.872, 0.953, 1.459, 0.984, 1.075, 1.367, 0.683, 0.654, 1.408, 1.318, 0.749, 0.690, 1.239, 1.440, 0.697, 1.450, 1.382, 1.104, 0.921, 0.604, 0.539, 1.463, 0.738, 1.205, 0.757, 1.324, 1.096, 0.793, 0.675, 1.220, 0.569, 0.728, 1.059, 1.352, 1.114, 0.780, 1.417, 0.704, 0.517, 0.769, 0.946, 0.560, 0.676, 0.869, 1.072, 0.632, 0.862, 1.391, 1.480, 1.157, 1.191, 1.084, 0.640, 0.535, 0.518, 1.410, 1.201, 1.463, 0.521, 1.136, 0.982, 1.230, 0.819, 1.499, 0.575, 1.046, 1.237, 1.400, 1.237, 1.204, 1.293, 1.415, 0.852, 1.185, 1.401, 1.371, 0.917, 1.291, 1.363, 1.073, 1.125, 0.882, 1.083, 1.109, 0.580, 1.139, 1.493, 1.380, 1.228, 0.888, 1.235, 1.081, 0.941, 1.338, 0.584, 1.250, 0.530, 1.101, 0.981, 0.730, 1.198, 0.997, 1.115, 1.420, 0.756, 0.511, 0.801, 1.178, 0.703, 0.670, 1.406, 1.160, 0.942, 1.392, 0.827, 1.166, 0.699, 0.931, 1.306, 1.414, 1.380, 0.884, 1.083, 0.816, 0.636, 0.996, 1.337, 1.349, 1.211, 1.450, 0.777, 0.669, 0.951, 0.775, 0.714, 0.914, 1.126, 0.994, 0.815, 1.339, 1.482, 0.952, 0.575, 0.531, 1.373, 0.541, 1.209, 1.071, 0.809, 1.292, 0.519, 0.636, 0.955, 0.525, 1.330, 0.737]> : tensor<256xf32>
  %w = arith.constant dense<0.0625> : tensor<256x256xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<256xf32>) eps(1.0e-05) : tensor<64x256xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x256xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<64x256xf32>) -> tensor<64x256xf32>
  %y = linalg.matmul ins(%n, %w : tensor<64x256xf32>, tensor<256x256xf32>) outs(%z : tensor<64x256xf32>) -> tensor<64x256xf32>
  %half = arith.constant dense<0.5> : tensor<64x256xf32>
  %s = arith.addf %x, %y : tensor<64x256xf32>
  %r = arith.mulf %s, %half : tensor<64x256xf32>
  return %r : tensor<64x256xf32>
}

func.func @main() {
  %e = tensor.empty() : tensor<64x256xf32>
  %x0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<64x256xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %a = arith.constant 0.37 : f32
    %b = arith.constant 0.11 : f32
    %t0 = arith.mulf %fi, %a : f32
    %t1 = arith.mulf %fj, %b : f32
    %t2 = arith.addf %t0, %t1 : f32
    %s = math.sin %t2 : f32
    linalg.yield %s : f32
  } -> tensor<64x256xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %steps = arith.constant 1000 : index
  %zero = arith.constant 0.0 : f32
  %last = scf.for %t = %c0 to %steps step %c1 iter_args(%x = %x0) -> (tensor<64x256xf32>) {
    %next = func.call @step(%x) : (tensor<64x256xf32>) -> tensor<64x256xf32>
    %init = tensor.empty() : tensor<f32>
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<f32>) -> tensor<f32>
    %sum = linalg.reduce ins(%next : tensor<64x256xf32>) outs(%acc : tensor<f32>) dimensions = [0, 1]
      (%in: f32, %out: f32) {
        %s = arith.addf %in, %out : f32
        linalg.yield %s : f32
      }
    %v = tensor.extract %sum[] : tensor<f32>
    vector.print %v : f32
    scf.yield %next : tensor<64x256xf32>
  }
  return
}
