// Execution: deferring 1/RMS past the projections keeps the numbers, in f32
// (rtol 1e-5) and in f16, where the widened f32 accumulator is rounded once
// after the post-scale (rtol 2e-3, f16's precision).
// RUN: flashnorm-opt %s %lower-to-llvm | %run > %t.ref
// RUN: flashnorm-opt %s --flashnorm-defer-scale | flashnorm-opt %lower-to-llvm | %run > %t.out
// RUN: %compare %t.ref %t.out --rtol 2e-3 --atol 1e-3 | FileCheck %s --check-prefix=CMP
// The same on the concurrent CPU pipeline (statistics as async tasks):
// RUN: flashnorm-opt %s --flashnorm-defer-scale | flashnorm-opt --flashnorm-cpu-pipeline | %async-run > %t.async
// RUN: %compare %t.ref %t.async --rtol 2e-3 --atol 1e-3 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-opt %s --flashnorm-defer-scale | flashnorm-opt '--flashnorm-cpu-pipeline=concurrent=false' | %async-run > %t.serial
// RUN: %compare %t.ref %t.serial --rtol 2e-3 --atol 1e-3 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-opt %s --flashnorm-defer-scale | FileCheck %s
// CMP: MATCH
// CHECK-LABEL: func.func @block
// CHECK-COUNT-2: flashnorm.post_scale
// CHECK-NOT: flashnorm.rms_norm
// CHECK-LABEL: func.func @block_f16
// CHECK: flashnorm.post_scale {{.*}} -> tensor<4x8xf16>

func.func @block(%x: tensor<4x16xf32>, %bias: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>) {
  %w = arith.constant dense<[[-0.1762, -0.3492, 0.1509, -0.4276, 0.0359, -0.1343, -0.4420, 0.0074], [-0.4625, -0.0664, -0.4301, -0.4093, -0.0755, 0.3269, -0.3762, -0.2768], [0.1274, 0.4477, 0.0771, -0.1033, 0.4763, -0.4534, 0.3585, -0.2104], [-0.3557, -0.3822, -0.1915, 0.3161, -0.3193, 0.0816, 0.1389, -0.1276], [0.0477, -0.4372, -0.4404, -0.2940, 0.1804, -0.0724, -0.1859, 0.0856], [-0.0468, -0.2002, 0.2944, 0.1990, -0.2559, 0.0744, 0.0252, 0.3751], [0.2294, -0.2121, 0.4802, -0.3819, -0.0819, 0.2571, -0.3480, -0.0110], [-0.4608, 0.1682, 0.2646, 0.0730, 0.3755, -0.1863, 0.1953, 0.0944], [0.0799, -0.0438, 0.3400, 0.4447, -0.0259, 0.1642, -0.4393, 0.2015], [0.1471, 0.4931, 0.3219, -0.2154, -0.1142, 0.1687, -0.4774, -0.0383], [-0.3320, -0.3829, -0.4410, 0.2682, -0.3707, -0.2524, -0.1091, 0.3714], [-0.4194, -0.0508, 0.0494, 0.3834, 0.3193, 0.3640, -0.2216, -0.0847], [-0.1412, 0.3842, 0.4577, -0.3491, -0.3238, -0.2680, -0.2667, -0.0150], [0.0891, -0.2373, -0.4959, -0.0811, -0.1307, 0.0663, 0.4531, 0.1905], [0.0155, 0.1176, 0.1762, -0.4460, 0.3995, 0.2800, 0.3745, 0.2979], [-0.1076, -0.1010, -0.3965, 0.1343, -0.4378, -0.4327, -0.2912, -0.3377]]> : tensor<16x8xf32>
  %w2 = arith.constant dense<[[0.0595, 0.4433, 0.3400, -0.3629, -0.3784, -0.0579, -0.4275, -0.2594, -0.4269, 0.1695, 0.2839, 0.3970, -0.3456, 0.2161, 0.1603, -0.3570], [0.3828, 0.4675, -0.2804, 0.4525, -0.1017, -0.0127, 0.4899, 0.3324, -0.3385, -0.0685, 0.0156, -0.1609, -0.3043, -0.1815, 0.2222, -0.4805], [0.0541, -0.0595, -0.4819, -0.1685, 0.1239, 0.0123, -0.4357, 0.4851, 0.2884, 0.4717, -0.3952, -0.2344, -0.4604, 0.2790, -0.2296, -0.3704], [-0.0777, 0.4114, 0.3190, -0.2414, -0.3506, 0.4192, 0.0706, 0.2004, -0.4105, -0.4425, 0.1882, -0.0747, -0.4276, 0.4383, 0.1344, 0.3016], [-0.4163, 0.3562, -0.4334, 0.3628, -0.0462, -0.1608, 0.0531, 0.4267, -0.2321, -0.3708, 0.0269, -0.2616, -0.3905, -0.3386, -0.4496, -0.2982], [-0.1880, -0.1950, 0.2595, -0.2100, 0.0001, -0.3221, -0.1530, -0.4818, -0.2496, -0.4847, 0.2331, 0.0510, -0.3105, -0.0252, 0.4346, -0.3937], [0.3189, -0.0678, -0.0050, 0.3346, -0.1069, 0.0067, 0.1877, 0.4824, -0.1573, 0.3323, 0.2067, 0.1360, -0.0953, -0.1524, -0.4456, -0.3702], [-0.4293, 0.2409, -0.2444, -0.3368, -0.4155, 0.3413, 0.3705, 0.1705, -0.2181, -0.2578, -0.2069, -0.0405, -0.3425, -0.0542, -0.2368, 0.4618], [0.4726, 0.0471, -0.2556, 0.4657, -0.1905, -0.1434, -0.4989, -0.1184, -0.0254, 0.0028, -0.2990, 0.0047, -0.4950, -0.2358, -0.4102, -0.1005], [-0.4583, -0.4775, -0.1958, -0.2672, 0.0856, 0.0292, 0.2505, 0.1575, 0.2160, 0.3791, -0.1105, -0.1739, 0.4847, -0.3505, 0.2242, 0.1432], [-0.4562, 0.3353, 0.3919, 0.1273, 0.2339, 0.3122, -0.3607, 0.0238, 0.0044, 0.3349, 0.3047, 0.3264, 0.0841, 0.3928, 0.1829, 0.1933], [-0.2701, -0.4688, -0.3669, -0.1393, -0.3951, 0.3358, 0.0585, 0.1278, 0.1262, 0.1807, -0.0107, -0.4967, 0.2977, 0.2483, 0.0030, 0.0352], [0.1593, -0.4339, 0.2368, -0.2478, -0.4256, -0.2344, 0.2293, -0.2948, 0.2398, 0.4757, -0.0061, -0.1174, -0.0210, 0.1837, 0.2670, 0.1170], [0.1428, -0.4225, -0.3526, -0.2461, 0.2432, -0.1956, 0.0678, -0.4875, -0.4393, -0.2312, 0.1720, 0.1922, 0.1757, -0.2091, 0.0165, -0.0353], [-0.0337, -0.3815, 0.3937, -0.3007, 0.4781, 0.4363, -0.4825, -0.0410, 0.3199, 0.4681, -0.0505, -0.2313, -0.2902, 0.4456, -0.2893, 0.0815], [-0.3583, 0.0241, 0.4527, -0.3674, 0.3202, 0.0087, 0.3869, 0.2033, -0.2686, 0.3977, -0.0139, -0.4752, -0.4964, -0.0083, -0.0492, -0.1980]]> : tensor<16x16xf32>
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x16xf32>
  %z_c0 = arith.constant 0.0 : f32
  %z_e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%z_c0 : f32) outs(%z_e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %yb = arith.addf %y, %bias : tensor<4x8xf32>
  %z2_c0 = arith.constant 0.0 : f32
  %z2_e = tensor.empty() : tensor<4x16xf32>
  %z2 = linalg.fill ins(%z2_c0 : f32) outs(%z2_e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y2 = linalg.matmul ins(%n, %w2 : tensor<4x16xf32>, tensor<16x16xf32>) outs(%z2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %yb, %y2 : tensor<4x8xf32>, tensor<4x16xf32>
}

func.func @block_f16(%x: tensor<4x16xf16>) -> tensor<4x8xf16> {
  %w32 = arith.constant dense<[[-0.1762, -0.3492, 0.1509, -0.4276, 0.0359, -0.1343, -0.4420, 0.0074], [-0.4625, -0.0664, -0.4301, -0.4093, -0.0755, 0.3269, -0.3762, -0.2768], [0.1274, 0.4477, 0.0771, -0.1033, 0.4763, -0.4534, 0.3585, -0.2104], [-0.3557, -0.3822, -0.1915, 0.3161, -0.3193, 0.0816, 0.1389, -0.1276], [0.0477, -0.4372, -0.4404, -0.2940, 0.1804, -0.0724, -0.1859, 0.0856], [-0.0468, -0.2002, 0.2944, 0.1990, -0.2559, 0.0744, 0.0252, 0.3751], [0.2294, -0.2121, 0.4802, -0.3819, -0.0819, 0.2571, -0.3480, -0.0110], [-0.4608, 0.1682, 0.2646, 0.0730, 0.3755, -0.1863, 0.1953, 0.0944], [0.0799, -0.0438, 0.3400, 0.4447, -0.0259, 0.1642, -0.4393, 0.2015], [0.1471, 0.4931, 0.3219, -0.2154, -0.1142, 0.1687, -0.4774, -0.0383], [-0.3320, -0.3829, -0.4410, 0.2682, -0.3707, -0.2524, -0.1091, 0.3714], [-0.4194, -0.0508, 0.0494, 0.3834, 0.3193, 0.3640, -0.2216, -0.0847], [-0.1412, 0.3842, 0.4577, -0.3491, -0.3238, -0.2680, -0.2667, -0.0150], [0.0891, -0.2373, -0.4959, -0.0811, -0.1307, 0.0663, 0.4531, 0.1905], [0.0155, 0.1176, 0.1762, -0.4460, 0.3995, 0.2800, 0.3745, 0.2979], [-0.1076, -0.1010, -0.3965, 0.1343, -0.4378, -0.4327, -0.2912, -0.3377]]> : tensor<16x8xf32>
  %w = arith.truncf %w32 : tensor<16x8xf32> to tensor<16x8xf16>
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x16xf16>
  %z_c0 = arith.constant 0.0 : f16
  %z_e = tensor.empty() : tensor<4x8xf16>
  %z = linalg.fill ins(%z_c0 : f16) outs(%z_e : tensor<4x8xf16>) -> tensor<4x8xf16>
  %y = linalg.matmul ins(%n, %w : tensor<4x16xf16>, tensor<16x8xf16>) outs(%z : tensor<4x8xf16>) -> tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

func.func @main() {
  %s = arith.constant 3.0 : f32
  %o = arith.constant -0.5 : f32
  %x = call @input(%s, %o) : (f32, f32) -> tensor<4x16xf32>
  %bias = arith.constant dense<0.125> : tensor<4x8xf32>
  %y, %y2 = call @block(%x, %bias) : (tensor<4x16xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>)
  %u = tensor.cast %y : tensor<4x8xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  %u2 = tensor.cast %y2 : tensor<4x16xf32> to tensor<*xf32>
  call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()
  %xh = arith.truncf %x : tensor<4x16xf32> to tensor<4x16xf16>
  %h = call @block_f16(%xh) : (tensor<4x16xf16>) -> tensor<4x8xf16>
  %hf = arith.extf %h : tensor<4x8xf16> to tensor<4x8xf32>
  %u3 = tensor.cast %hf : tensor<4x8xf32> to tensor<*xf32>
  call @printMemrefF32(%u3) : (tensor<*xf32>) -> ()
  return
}

// Deterministic input: x[i, j] = scale * sin(1.3 i + 0.7 j + 0.1) + offset.
func.func @input(%scale: f32, %offset: f32) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x16xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %a = arith.constant 1.3 : f32
    %b = arith.constant 0.7 : f32
    %c = arith.constant 0.1 : f32
    %t0 = arith.mulf %fi, %a : f32
    %t1 = arith.mulf %fj, %b : f32
    %t2 = arith.addf %t0, %t1 : f32
    %t3 = arith.addf %t2, %c : f32
    %s = math.sin %t3 : f32
    %v = arith.mulf %s, %scale : f32
    %r = arith.addf %v, %offset : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %x : tensor<4x16xf32>
}
func.func private @printMemrefF32(tensor<*xf32>)
