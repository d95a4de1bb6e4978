// flashnorm-pack-weights' panels by shape are sized for the vector
// registers (vector-bits; by default this machine's): a decode step's
// panel holds 8 vectors of f32 outputs (128 on AVX-512, 64 on AVX2), a
// prefill panel two (32 and 16).
// RUN: flashnorm-opt %s --flashnorm-pack-weights='vector-bits=512 threads=1' | FileCheck %s --check-prefix=AVX512
// RUN: flashnorm-opt %s --flashnorm-pack-weights='vector-bits=256 threads=1' | FileCheck %s --check-prefix=AVX2
// RUN: flashnorm-opt %s --flashnorm-pack-weights='threads=1' -o /dev/null
// AVX512-LABEL: func.func @decode
// AVX512: tensor<2x64x128xf32>
// AVX2-LABEL: func.func @decode
// AVX2: tensor<4x64x64xf32>
func.func @decode(%x: tensor<1x64xf32>) -> tensor<1x256xf32> {
  %w = arith.constant dense<0.5> : tensor<64x256xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x256xf32>) -> tensor<1x256xf32>
  %y = linalg.matmul ins(%x, %w : tensor<1x64xf32>, tensor<64x256xf32>) outs(%f : tensor<1x256xf32>) -> tensor<1x256xf32>
  return %y : tensor<1x256xf32>
}

// AVX512-LABEL: func.func @prefill
// AVX512: tensor<8x64x32xf32>
// AVX2-LABEL: func.func @prefill
// AVX2: tensor<16x64x16xf32>
func.func @prefill(%x: tensor<16x64xf32>) -> tensor<16x256xf32> {
  %w = arith.constant dense<0.5> : tensor<64x256xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x256xf32>) -> tensor<16x256xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x256xf32>) outs(%f : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %y : tensor<16x256xf32>
}
