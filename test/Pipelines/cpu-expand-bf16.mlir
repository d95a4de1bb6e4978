// flashnorm-cpu-pipeline's expand-bf16: f32 -> bf16 conversions become
// integer vector code (upstream arith-expand's bf16 patterns) instead of
// LLVM's fptrunc, which x86 without AVX512-BF16 lowers to a call of
// __truncsfbf2 per element, even in a vector loop (a bf16 model's norm
// output, 262144 calls per 128 x 2048 activation). The expansion rounds
// to nearest even exactly: the right bits on edge cases (ties to even
// both ways, the largest finite f32 to infinity, NaN, signed zero,
// subnormals rounding into the normal range). LLVM's own conversion gives
// the same bits except on subnormal inputs, which its lowering for
// AVX-512 without BF16 flushes to zero (2 and 128 become 0 and 0; the
// __truncsfbf2 call of an AVX2 host keeps them).
// RUN: flashnorm-opt %s --flashnorm-cpu-pipeline=expand-bf16=true -o %t.expanded.mlir
// RUN: FileCheck %s --check-prefix=EXPANDED < %t.expanded.mlir
// RUN: flashnorm-opt %s --flashnorm-cpu-pipeline=expand-bf16=false -o %t.call.mlir
// RUN: FileCheck %s --check-prefix=CALL < %t.call.mlir
// RUN: %async-run %t.expanded.mlir | FileCheck %s
// RUN: %async-run %t.call.mlir | FileCheck %s --check-prefix=CALLED
// EXPANDED-LABEL: llvm.func @trunc
// EXPANDED-NOT: llvm.fptrunc
// EXPANDED: llvm.fcmp "une" %[[V:.*]], %[[V]] : vector<{{[0-9]+}}xf32>
// EXPANDED-NOT: llvm.fptrunc
// EXPANDED-LABEL: llvm.func @main
// CALL-LABEL: llvm.func @trunc
// CALL: llvm.fptrunc %{{.*}} : vector<[[W:[0-9]+]]xf32> to vector<[[W]]xbf16>
// 1.0, ties to even (down, up), above a tie, the largest finite (to inf),
// NaN, inf, -inf, -0, the smallest subnormal (to 0), a subnormal tie (up),
// -pi, 65536, 65536 + a tie (down), the largest subnormal (to the smallest
// normal), -1.0:
// CHECK: ( 16256, 16256, 16258, 16257, 32640, 32704, 32640, -128, -32768, 0, 2, -16311, 18304, 18304, 128, -16512 )
// CALLED: ( 16256, 16256, 16258, 16257, 32640, 32704, 32640, -128, -32768, 0, {{2|0}}, -16311, 18304, 18304, {{128|0}}, -16512 )
func.func @trunc(%x: tensor<16xf32>) -> tensor<16xi16> {
  %e = tensor.empty() : tensor<16xi16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xi16>) {
  ^bb0(%in: f32, %out: i16):
    %t = arith.truncf %in : f32 to bf16
    %b = arith.bitcast %t : bf16 to i16
    linalg.yield %b : i16
  } -> tensor<16xi16>
  return %r : tensor<16xi16>
}

func.func @main() {
  // 0x3F800000, 0x3F808000, 0x3F818000, 0x3F808001, 0x7F7FFFFF, 0x7FC00000,
  // 0x7F800000, 0xFF800000, 0x80000000, 0x00000001, 0x00018000, 0xC0490FDB,
  // 0x47800000, 0x47808000, 0x007FFFFF, 0xBF800000
  %bits = arith.constant dense<[1065353216, 1065385984, 1065451520, 1065385985, 2139095039, 2143289344, 2139095040, -8388608, -2147483648, 1, 98304, -1068953637, 1199570944, 1199603712, 8388607, -1082130432]> : tensor<16xi32>
  %x = arith.bitcast %bits : tensor<16xi32> to tensor<16xf32>
  %r = func.call @trunc(%x) : (tensor<16xf32>) -> tensor<16xi16>
  %c0 = arith.constant 0 : index
  %p = arith.constant 0 : i16
  %v = vector.transfer_read %r[%c0], %p : tensor<16xi16>, vector<16xi16>
  vector.print %v : vector<16xi16>
  return
}
