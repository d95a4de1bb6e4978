// The Llama block of torch-mlir-llama-matmul.mlir with Qwen2's q, k and v
// biases (aten.linear's matmul, then a generic adding the bias along d2)
// and every parameter a function argument, as torch-mlir's fx importer
// passes a module's parameters: gains, weights [out, in] and biases.
// @main passes constants and prints the result.
func.func @block(%x: tensor<1x3x8xf32>, %g1: tensor<8xf32>, %w_q: tensor<8x8xf32>, %bias_q: tensor<8xf32>, %w_k: tensor<8x8xf32>, %bias_k: tensor<8xf32>, %w_vv: tensor<8x8xf32>, %bias_vv: tensor<8xf32>, %w_oproj: tensor<8x8xf32>, %g2: tensor<8xf32>, %w_gate: tensor<12x8xf32>, %w_up: tensor<12x8xf32>, %w_down: tensor<8x12xf32>) -> tensor<1x3x8xf32> {
  %cst = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %e_pow1 = tensor.empty() : tensor<1x3x8xf32>
  %pow1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x3x8xf32>) outs(%e_pow1 : tensor<1x3x8xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %sq = math.powf %a0, %two : f32
    linalg.yield %sq : f32
  } -> tensor<1x3x8xf32>
  %er1 = tensor.empty() : tensor<1x3x1xf32>
  %z1 = linalg.fill ins(%cst : f32) outs(%er1 : tensor<1x3x1xf32>) -> tensor<1x3x1xf32>
  %e_sum1 = tensor.empty() : tensor<1x3x1xf32>
  %sum1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, 0)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%pow1 : tensor<1x3x8xf32>) outs(%z1 : tensor<1x3x1xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %s = arith.addf %a0, %o : f32
    linalg.yield %s : f32
  } -> tensor<1x3x1xf32>
  %e_rs1 = tensor.empty() : tensor<1x3x1xf32>
  %rs1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sum1 : tensor<1x3x1xf32>) outs(%e_rs1 : tensor<1x3x1xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %kf = arith.constant 8.0 : f32
    %eps = arith.constant 1.0e-05 : f32
    %m = arith.divf %a0, %kf : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    linalg.yield %r : f32
  } -> tensor<1x3x1xf32>
  %e_bc1 = tensor.empty() : tensor<1x3x8xf32>
  %bc1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e_bc1 : tensor<1x3x8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 1 : index
    %v = tensor.extract %rs1[%c0, %i, %c0] : tensor<1x3x1xf32>
    linalg.yield %v : f32
  } -> tensor<1x3x8xf32>
  %e_normed1 = tensor.empty() : tensor<1x3x8xf32>
  %normed1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %bc1 : tensor<1x3x8xf32>, tensor<1x3x8xf32>) outs(%e_normed1 : tensor<1x3x8xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %v = arith.mulf %a0, %a1 : f32
    linalg.yield %v : f32
  } -> tensor<1x3x8xf32>
  %e_gained1 = tensor.empty() : tensor<1x3x8xf32>
  %gained1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%normed1, %g1 : tensor<1x3x8xf32>, tensor<8xf32>) outs(%e_gained1 : tensor<1x3x8xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %v = arith.mulf %a0, %a1 : f32
    linalg.yield %v : f32
  } -> tensor<1x3x8xf32>
  %te_q = tensor.empty() : tensor<8x8xf32>
  %t_q = linalg.transpose ins(%w_q : tensor<8x8xf32>) outs(%te_q : tensor<8x8xf32>) permutation = [1, 0]
  %e_b_q = tensor.empty() : tensor<1x8x8xf32>
  %b_q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t_q : tensor<8x8xf32>) outs(%e_b_q : tensor<1x8x8xf32>) {
  ^bb0(%a0: f32, %o: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x8x8xf32>
  %oe_q = tensor.empty() : tensor<1x3x8xf32>
  %of_q = linalg.fill ins(%cst : f32) outs(%oe_q : tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %q_mm = linalg.batch_matmul ins(%gained1, %b_q : tensor<1x3x8xf32>, tensor<1x8x8xf32>) outs(%of_q : tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %e_q = tensor.empty() : tensor<1x3x8xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%q_mm, %bias_q : tensor<1x3x8xf32>, tensor<8xf32>) outs(%e_q : tensor<1x3x8xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %v = arith.addf %a0, %a1 : f32
    linalg.yield %v : f32
  } -> tensor<1x3x8xf32>
  %te_k = tensor.empty() : tensor<8x8xf32>
  %t_k = linalg.transpose ins(%w_k : tensor<8x8xf32>) outs(%te_k : tensor<8x8xf32>) permutation = [1, 0]
  %e_b_k = tensor.empty() : tensor<1x8x8xf32>
  %b_k = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t_k : tensor<8x8xf32>) outs(%e_b_k : tensor<1x8x8xf32>) {
  ^bb0(%a0: f32, %o: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x8x8xf32>
  %oe_k = tensor.empty() : tensor<1x3x8xf32>
  %of_k = linalg.fill ins(%cst : f32) outs(%oe_k : tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %k_mm = linalg.batch_matmul ins(%gained1, %b_k : tensor<1x3x8xf32>, tensor<1x8x8xf32>) outs(%of_k : tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %e_k = tensor.empty() : tensor<1x3x8xf32>
  %k = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%k_mm, %bias_k : tensor<1x3x8xf32>, tensor<8xf32>) outs(%e_k : tensor<1x3x8xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %v = arith.addf %a0, %a1 : f32
    linalg.yield %v : f32
  } -> tensor<1x3x8xf32>
  %te_vv = tensor.empty() : tensor<8x8xf32>
  %t_vv = linalg.transpose ins(%w_vv : tensor<8x8xf32>) outs(%te_vv : tensor<8x8xf32>) permutation = [1, 0]
  %e_b_vv = tensor.empty() : tensor<1x8x8xf32>
  %b_vv = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t_vv : tensor<8x8xf32>) outs(%e_b_vv : tensor<1x8x8xf32>) {
  ^bb0(%a0: f32, %o: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x8x8xf32>
  %oe_vv = tensor.empty() : tensor<1x3x8xf32>
  %of_vv = linalg.fill ins(%cst : f32) outs(%oe_vv : tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %vv_mm = linalg.batch_matmul ins(%gained1, %b_vv : tensor<1x3x8xf32>, tensor<1x8x8xf32>) outs(%of_vv : tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %e_vv = tensor.empty() : tensor<1x3x8xf32>
  %vv = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%vv_mm, %bias_vv : tensor<1x3x8xf32>, tensor<8xf32>) outs(%e_vv : tensor<1x3x8xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %v = arith.addf %a0, %a1 : f32
    linalg.yield %v : f32
  } -> tensor<1x3x8xf32>
  %h_q = tensor.expand_shape %q [[0], [1], [2, 3]] output_shape [1, 3, 2, 4] : tensor<1x3x8xf32> into tensor<1x3x2x4xf32>
  %h_k = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [1, 3, 2, 4] : tensor<1x3x8xf32> into tensor<1x3x2x4xf32>
  %h_v = tensor.expand_shape %vv [[0], [1], [2, 3]] output_shape [1, 3, 2, 4] : tensor<1x3x8xf32> into tensor<1x3x2x4xf32>
  %tq_e = tensor.empty() : tensor<1x2x3x4xf32>
  %tq = linalg.transpose ins(%h_q : tensor<1x3x2x4xf32>) outs(%tq_e : tensor<1x2x3x4xf32>) permutation = [0, 2, 1, 3]
  %tv_e = tensor.empty() : tensor<1x2x3x4xf32>
  %tv = linalg.transpose ins(%h_v : tensor<1x3x2x4xf32>) outs(%tv_e : tensor<1x2x3x4xf32>) permutation = [0, 2, 1, 3]
  %cos = arith.constant dense<[[[[1.000000, 1.000000, 1.000000, 1.000000], [0.540302, 0.995004, 0.540302, 0.995004], [-0.416147, 0.980067, -0.416147, 0.980067]]]]> : tensor<1x1x3x4xf32>
  %sin = arith.constant dense<[[[[0.000000, 0.000000, 0.000000, 0.000000], [0.841471, 0.099833, 0.841471, 0.099833], [0.909297, 0.198669, 0.909297, 0.198669]]]]> : tensor<1x1x3x4xf32>
  %rq_lo = tensor.extract_slice %tq[0, 0, 0, 0] [1, 2, 3, 2] [1, 1, 1, 1] : tensor<1x2x3x4xf32> to tensor<1x2x3x2xf32>
  %rq_hi = tensor.extract_slice %tq[0, 0, 0, 2] [1, 2, 3, 2] [1, 1, 1, 1] : tensor<1x2x3x4xf32> to tensor<1x2x3x2xf32>
  %e_rq_neg = tensor.empty() : tensor<1x2x3x2xf32>
  %rq_neg = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%rq_hi : tensor<1x2x3x2xf32>) outs(%e_rq_neg : tensor<1x2x3x2xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %v = arith.negf %a0 : f32
    linalg.yield %v : f32
  } -> tensor<1x2x3x2xf32>
  %rq_rot = tensor.concat dim(3) %rq_neg, %rq_lo : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
  %e_rq_r = tensor.empty() : tensor<1x2x3x4xf32>
  %rq_r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%tq, %cos, %rq_rot, %sin : tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) outs(%e_rq_r : tensor<1x2x3x4xf32>) {
  ^bb0(%a0: f32, %a1: f32, %a2: f32, %a3: f32, %o: f32):
    %m0 = arith.mulf %a0, %a1 : f32
    %m1 = arith.mulf %a2, %a3 : f32
    %v = arith.addf %m0, %m1 : f32
    linalg.yield %v : f32
  } -> tensor<1x2x3x4xf32>
  %tk2_e = tensor.empty() : tensor<1x2x3x4xf32>
  %tk2 = linalg.transpose ins(%h_k : tensor<1x3x2x4xf32>) outs(%tk2_e : tensor<1x2x3x4xf32>) permutation = [0, 2, 1, 3]
  %rk_lo = tensor.extract_slice %tk2[0, 0, 0, 0] [1, 2, 3, 2] [1, 1, 1, 1] : tensor<1x2x3x4xf32> to tensor<1x2x3x2xf32>
  %rk_hi = tensor.extract_slice %tk2[0, 0, 0, 2] [1, 2, 3, 2] [1, 1, 1, 1] : tensor<1x2x3x4xf32> to tensor<1x2x3x2xf32>
  %e_rk_neg = tensor.empty() : tensor<1x2x3x2xf32>
  %rk_neg = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%rk_hi : tensor<1x2x3x2xf32>) outs(%e_rk_neg : tensor<1x2x3x2xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %v = arith.negf %a0 : f32
    linalg.yield %v : f32
  } -> tensor<1x2x3x2xf32>
  %rk_rot = tensor.concat dim(3) %rk_neg, %rk_lo : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
  %e_rk_r = tensor.empty() : tensor<1x2x3x4xf32>
  %rk_r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%tk2, %cos, %rk_rot, %sin : tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) outs(%e_rk_r : tensor<1x2x3x4xf32>) {
  ^bb0(%a0: f32, %a1: f32, %a2: f32, %a3: f32, %o: f32):
    %m0 = arith.mulf %a0, %a1 : f32
    %m1 = arith.mulf %a2, %a3 : f32
    %v = arith.addf %m0, %m1 : f32
    linalg.yield %v : f32
  } -> tensor<1x2x3x4xf32>
  %tk_e = tensor.empty() : tensor<1x2x4x3xf32>
  %tk = linalg.transpose ins(%rk_r : tensor<1x2x3x4xf32>) outs(%tk_e : tensor<1x2x4x3xf32>) permutation = [0, 1, 3, 2]
  %cq = tensor.collapse_shape %rq_r [[0, 1], [2], [3]] : tensor<1x2x3x4xf32> into tensor<2x3x4xf32>
  %ck = tensor.collapse_shape %tk [[0, 1], [2], [3]] : tensor<1x2x4x3xf32> into tensor<2x4x3xf32>
  %se = tensor.empty() : tensor<2x3x3xf32>
  %sf = linalg.fill ins(%cst : f32) outs(%se : tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %s3 = linalg.batch_matmul ins(%cq, %ck : tensor<2x3x4xf32>, tensor<2x4x3xf32>) outs(%sf : tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %s4 = tensor.expand_shape %s3 [[0, 1], [2], [3]] output_shape [1, 2, 3, 3] : tensor<2x3x3xf32> into tensor<1x2x3x3xf32>
  %e_scaled = tensor.empty() : tensor<1x2x3x3xf32>
  %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s4 : tensor<1x2x3x3xf32>) outs(%e_scaled : tensor<1x2x3x3xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %c = arith.constant 5.000000e-01 : f64
    %ct = arith.truncf %c : f64 to f32
    %v = arith.mulf %a0, %ct : f32
    linalg.yield %v : f32
  } -> tensor<1x2x3x3xf32>
  %mask = arith.constant dense<[[[[0.0e+00, -1.0e+09, -1.0e+09], [0.0e+00, 0.0e+00, -1.0e+09], [0.0e+00, 0.0e+00, 0.0e+00]]]]> : tensor<1x1x3x3xf32>
  %e_masked = tensor.empty() : tensor<1x2x3x3xf32>
  %masked = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scaled, %mask : tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) outs(%e_masked : tensor<1x2x3x3xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %v = arith.addf %a0, %a1 : f32
    linalg.yield %v : f32
  } -> tensor<1x2x3x3xf32>
  %me = tensor.empty() : tensor<1x2x3x1xf32>
  %mf = linalg.fill ins(%ninf : f32) outs(%me : tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xf32>
  %e_mx = tensor.empty() : tensor<1x2x3x1xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%masked : tensor<1x2x3x3xf32>) outs(%mf : tensor<1x2x3x1xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %v = arith.maximumf %a0, %o : f32
    linalg.yield %v : f32
  } -> tensor<1x2x3x1xf32>
  %e_ex = tensor.empty() : tensor<1x2x3x3xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (0, d1, d2, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%masked, %mx : tensor<1x2x3x3xf32>, tensor<1x2x3x1xf32>) outs(%e_ex : tensor<1x2x3x3xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %d = arith.subf %a0, %a1 : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<1x2x3x3xf32>
  %zf = linalg.fill ins(%cst : f32) outs(%me : tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xf32>
  %e_den = tensor.empty() : tensor<1x2x3x1xf32>
  %den = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x3x3xf32>) outs(%zf : tensor<1x2x3x1xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %v = arith.addf %a0, %o : f32
    linalg.yield %v : f32
  } -> tensor<1x2x3x1xf32>
  %e_probs = tensor.empty() : tensor<1x2x3x3xf32>
  %probs = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (0, d1, d2, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %den : tensor<1x2x3x3xf32>, tensor<1x2x3x1xf32>) outs(%e_probs : tensor<1x2x3x3xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %v = arith.divf %a0, %a1 : f32
    linalg.yield %v : f32
  } -> tensor<1x2x3x3xf32>
  %cp = tensor.collapse_shape %probs [[0, 1], [2], [3]] : tensor<1x2x3x3xf32> into tensor<2x3x3xf32>
  %cv = tensor.collapse_shape %tv [[0, 1], [2], [3]] : tensor<1x2x3x4xf32> into tensor<2x3x4xf32>
  %ae = tensor.empty() : tensor<2x3x4xf32>
  %af = linalg.fill ins(%cst : f32) outs(%ae : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %a3 = linalg.batch_matmul ins(%cp, %cv : tensor<2x3x3xf32>, tensor<2x3x4xf32>) outs(%af : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %a4 = tensor.expand_shape %a3 [[0, 1], [2], [3]] output_shape [1, 2, 3, 4] : tensor<2x3x4xf32> into tensor<1x2x3x4xf32>
  %at_e = tensor.empty() : tensor<1x3x2x4xf32>
  %at = linalg.transpose ins(%a4 : tensor<1x2x3x4xf32>) outs(%at_e : tensor<1x3x2x4xf32>) permutation = [0, 2, 1, 3]
  %merged = tensor.collapse_shape %at [[0], [1], [2, 3]] : tensor<1x3x2x4xf32> into tensor<1x3x8xf32>
  %te_oproj = tensor.empty() : tensor<8x8xf32>
  %t_oproj = linalg.transpose ins(%w_oproj : tensor<8x8xf32>) outs(%te_oproj : tensor<8x8xf32>) permutation = [1, 0]
  %e_b_oproj = tensor.empty() : tensor<1x8x8xf32>
  %b_oproj = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t_oproj : tensor<8x8xf32>) outs(%e_b_oproj : tensor<1x8x8xf32>) {
  ^bb0(%a0: f32, %o: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x8x8xf32>
  %oe_oproj = tensor.empty() : tensor<1x3x8xf32>
  %of_oproj = linalg.fill ins(%cst : f32) outs(%oe_oproj : tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %oproj = linalg.batch_matmul ins(%merged, %b_oproj : tensor<1x3x8xf32>, tensor<1x8x8xf32>) outs(%of_oproj : tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %e_res = tensor.empty() : tensor<1x3x8xf32>
  %res = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %oproj : tensor<1x3x8xf32>, tensor<1x3x8xf32>) outs(%e_res : tensor<1x3x8xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %v = arith.addf %a0, %a1 : f32
    linalg.yield %v : f32
  } -> tensor<1x3x8xf32>
  %e_pow2 = tensor.empty() : tensor<1x3x8xf32>
  %pow2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%res : tensor<1x3x8xf32>) outs(%e_pow2 : tensor<1x3x8xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %sq = math.powf %a0, %two : f32
    linalg.yield %sq : f32
  } -> tensor<1x3x8xf32>
  %er2 = tensor.empty() : tensor<1x3x1xf32>
  %z2 = linalg.fill ins(%cst : f32) outs(%er2 : tensor<1x3x1xf32>) -> tensor<1x3x1xf32>
  %e_sum2 = tensor.empty() : tensor<1x3x1xf32>
  %sum2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, 0)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%pow2 : tensor<1x3x8xf32>) outs(%z2 : tensor<1x3x1xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %s = arith.addf %a0, %o : f32
    linalg.yield %s : f32
  } -> tensor<1x3x1xf32>
  %e_rs2 = tensor.empty() : tensor<1x3x1xf32>
  %rs2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sum2 : tensor<1x3x1xf32>) outs(%e_rs2 : tensor<1x3x1xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %kf = arith.constant 8.0 : f32
    %eps = arith.constant 1.0e-05 : f32
    %m = arith.divf %a0, %kf : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    linalg.yield %r : f32
  } -> tensor<1x3x1xf32>
  %e_bc2 = tensor.empty() : tensor<1x3x8xf32>
  %bc2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e_bc2 : tensor<1x3x8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 1 : index
    %v = tensor.extract %rs2[%c0, %i, %c0] : tensor<1x3x1xf32>
    linalg.yield %v : f32
  } -> tensor<1x3x8xf32>
  %e_normed2 = tensor.empty() : tensor<1x3x8xf32>
  %normed2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%res, %bc2 : tensor<1x3x8xf32>, tensor<1x3x8xf32>) outs(%e_normed2 : tensor<1x3x8xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %v = arith.mulf %a0, %a1 : f32
    linalg.yield %v : f32
  } -> tensor<1x3x8xf32>
  %e_gained2 = tensor.empty() : tensor<1x3x8xf32>
  %gained2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%normed2, %g2 : tensor<1x3x8xf32>, tensor<8xf32>) outs(%e_gained2 : tensor<1x3x8xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %v = arith.mulf %a0, %a1 : f32
    linalg.yield %v : f32
  } -> tensor<1x3x8xf32>
  %te_gate = tensor.empty() : tensor<8x12xf32>
  %t_gate = linalg.transpose ins(%w_gate : tensor<12x8xf32>) outs(%te_gate : tensor<8x12xf32>) permutation = [1, 0]
  %e_b_gate = tensor.empty() : tensor<1x8x12xf32>
  %b_gate = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t_gate : tensor<8x12xf32>) outs(%e_b_gate : tensor<1x8x12xf32>) {
  ^bb0(%a0: f32, %o: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x8x12xf32>
  %oe_gate = tensor.empty() : tensor<1x3x12xf32>
  %of_gate = linalg.fill ins(%cst : f32) outs(%oe_gate : tensor<1x3x12xf32>) -> tensor<1x3x12xf32>
  %gate = linalg.batch_matmul ins(%gained2, %b_gate : tensor<1x3x8xf32>, tensor<1x8x12xf32>) outs(%of_gate : tensor<1x3x12xf32>) -> tensor<1x3x12xf32>
  %te_up = tensor.empty() : tensor<8x12xf32>
  %t_up = linalg.transpose ins(%w_up : tensor<12x8xf32>) outs(%te_up : tensor<8x12xf32>) permutation = [1, 0]
  %e_b_up = tensor.empty() : tensor<1x8x12xf32>
  %b_up = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t_up : tensor<8x12xf32>) outs(%e_b_up : tensor<1x8x12xf32>) {
  ^bb0(%a0: f32, %o: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x8x12xf32>
  %oe_up = tensor.empty() : tensor<1x3x12xf32>
  %of_up = linalg.fill ins(%cst : f32) outs(%oe_up : tensor<1x3x12xf32>) -> tensor<1x3x12xf32>
  %up = linalg.batch_matmul ins(%gained2, %b_up : tensor<1x3x8xf32>, tensor<1x8x12xf32>) outs(%of_up : tensor<1x3x12xf32>) -> tensor<1x3x12xf32>
  %e_silu = tensor.empty() : tensor<1x3x12xf32>
  %silu = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%gate : tensor<1x3x12xf32>) outs(%e_silu : tensor<1x3x12xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %a0 : f32
    %e1 = math.exp %n : f32
    %d = arith.addf %e1, %one : f32
    %s = arith.divf %a0, %d : f32
    linalg.yield %s : f32
  } -> tensor<1x3x12xf32>
  %e_hid = tensor.empty() : tensor<1x3x12xf32>
  %hid = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%silu, %up : tensor<1x3x12xf32>, tensor<1x3x12xf32>) outs(%e_hid : tensor<1x3x12xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %v = arith.mulf %a0, %a1 : f32
    linalg.yield %v : f32
  } -> tensor<1x3x12xf32>
  %te_down = tensor.empty() : tensor<12x8xf32>
  %t_down = linalg.transpose ins(%w_down : tensor<8x12xf32>) outs(%te_down : tensor<12x8xf32>) permutation = [1, 0]
  %e_b_down = tensor.empty() : tensor<1x12x8xf32>
  %b_down = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t_down : tensor<12x8xf32>) outs(%e_b_down : tensor<1x12x8xf32>) {
  ^bb0(%a0: f32, %o: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x12x8xf32>
  %oe_down = tensor.empty() : tensor<1x3x8xf32>
  %of_down = linalg.fill ins(%cst : f32) outs(%oe_down : tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %down = linalg.batch_matmul ins(%hid, %b_down : tensor<1x3x12xf32>, tensor<1x12x8xf32>) outs(%of_down : tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %e_out = tensor.empty() : tensor<1x3x8xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%res, %down : tensor<1x3x8xf32>, tensor<1x3x8xf32>) outs(%e_out : tensor<1x3x8xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %v = arith.addf %a0, %a1 : f32
    linalg.yield %v : f32
  } -> tensor<1x3x8xf32>
  return %out : tensor<1x3x8xf32>
}

func.func @main() {
  %x = arith.constant dense<[[[0.0000, 0.1198, 0.2382, 0.3540, 0.4659, 0.5727, 0.6731, 0.7661], [0.3616, 0.4718, 0.5764, 0.6742, 0.7643, 0.8456, 0.9173, 0.9786], [0.6743, 0.7613, 0.8392, 0.9072, 0.9646, 1.0108, 1.0454, 1.0682]]]> : tensor<1x3x8xf32>
  %g1 = arith.constant dense<[1.0887, 1.2999, 1.0718, 0.7385, 0.7883, 1.1482, 1.2910, 1.0074]> : tensor<8xf32>
  %w_q = arith.constant dense<[[0.4456, 0.4869, 0.2992, -0.0292, -0.3439, -0.4968, -0.4161, -0.1397], [0.2024, 0.4494, 0.4849, 0.2925, -0.0376, -0.3499, -0.4977, -0.4114], [-0.1316, 0.2101, 0.4530, 0.4828, 0.2856, -0.0460, -0.3559, -0.4985], [-0.4066, -0.1235, 0.2177, 0.4565, 0.4806, 0.2787, -0.0543, -0.3617], [-0.4990, -0.4016, -0.1153, 0.2252, 0.4598, 0.4782, 0.2716, -0.0627], [-0.3675, -0.4995, -0.3966, -0.1071, 0.2327, 0.4631, 0.4757, 0.2645], [-0.0710, -0.3731, -0.4998, -0.3914, -0.0989, 0.2401, 0.4662, 0.4730], [0.2574, -0.0793, -0.3787, -0.5000, -0.3861, -0.0906, 0.2474, 0.4692]]> : tensor<8x8xf32>
  %bias_q = arith.constant dense<[0.0907, -0.0832, -0.1942, -0.1582, -0.0025, 0.1551, 0.1953, 0.0877]> : tensor<8xf32>
  %w_k = arith.constant dense<[[0.3729, 0.0706, -0.2649, -0.4758, -0.4629, -0.2323, 0.1076, 0.3968], [0.4995, 0.3672, 0.0622, -0.2720, -0.4783, -0.4597, -0.2248, 0.1158], [0.4019, 0.4990, 0.3614, 0.0539, -0.2790, -0.4807, -0.4563, -0.2173], [0.1239, 0.4068, 0.4984, 0.3556, 0.0455, -0.2860, -0.4829, -0.4528], [-0.2097, 0.1320, 0.4117, 0.4977, 0.3496, 0.0371, -0.2928, -0.4851], [-0.4492, -0.2020, 0.1401, 0.4164, 0.4968, 0.3436, 0.0287, -0.2996], [-0.4870, -0.4454, -0.1943, 0.1482, 0.4210, 0.4958, 0.3374, 0.0203], [-0.3063, -0.4889, -0.4415, -0.1865, 0.1562, 0.4255, 0.4946, 0.3312]]> : tensor<8x8xf32>
  %bias_k = arith.constant dense<[-0.1333, -0.1997, -0.1150, 0.0567, 0.1855, 0.1739, 0.0307, -0.1357]> : tensor<8xf32>
  %w_vv = arith.constant dense<[[0.0208, -0.3059, -0.4888, -0.4417, -0.1869, 0.1558, 0.4252, 0.4947], [0.3315, 0.0124, -0.3125, -0.4905, -0.4377, -0.1791, 0.1637, 0.4296], [0.4934, 0.3251, 0.0040, -0.3191, -0.4920, -0.4336, -0.1712, 0.1717], [0.4338, 0.4920, 0.3187, -0.0044, -0.3255, -0.4935, -0.4294, -0.1633], [0.1795, 0.4379, 0.4904, 0.3122, -0.0128, -0.3318, -0.4947, -0.4250], [-0.1553, 0.1874, 0.4419, 0.4887, 0.3056, -0.0212, -0.3381, -0.4959], [-0.4205, -0.1473, 0.1951, 0.4458, 0.4868, 0.2989, -0.0296, -0.3442], [-0.4969, -0.4159, -0.1393, 0.2028, 0.4495, 0.4848, 0.2921, -0.0380]]> : tensor<8x8xf32>
  %bias_vv = arith.constant dense<[-0.1998, -0.1307, 0.0373, 0.1771, 0.1829, 0.0503, -0.1204, -0.1999]> : tensor<8xf32>
  %w_oproj = arith.constant dense<[[-0.5000, -0.3864, -0.0911, 0.2471, 0.4690, 0.4704, 0.2505, -0.0872], [-0.3838, -0.5000, -0.3810, -0.0828, 0.2543, 0.4718, 0.4674, 0.2432], [-0.0954, -0.3892, -0.4999, -0.3755, -0.0745, 0.2615, 0.4746, 0.4644], [0.2358, -0.1037, -0.3944, -0.4996, -0.3699, -0.0662, 0.2687, 0.4771], [0.4612, 0.2284, -0.1119, -0.3995, -0.4992, -0.3642, -0.0578, 0.2757], [0.4796, 0.4579, 0.2209, -0.1201, -0.4045, -0.4987, -0.3584, -0.0495], [0.2827, 0.4819, 0.4545, 0.2133, -0.1282, -0.4094, -0.4980, -0.3525], [-0.0411, 0.2896, 0.4841, 0.4509, 0.2057, -0.1363, -0.4142, -0.4972]]> : tensor<8x8xf32>
  %g2 = arith.constant dense<[1.2975, 1.0423, 0.7252, 0.8106, 1.1735, 1.2822, 0.9775, 0.7057]> : tensor<8xf32>
  %w_gate = arith.constant dense<[[-0.4161, -0.1397, 0.2024, 0.4494, 0.4849, 0.2925, -0.0376, -0.3499], [-0.4977, -0.4114, -0.1316, 0.2101, 0.4530, 0.4828, 0.2856, -0.0460], [-0.3559, -0.4985, -0.4066, -0.1235, 0.2177, 0.4565, 0.4806, 0.2787], [-0.0543, -0.3617, -0.4990, -0.4016, -0.1153, 0.2252, 0.4598, 0.4782], [0.2716, -0.0627, -0.3675, -0.4995, -0.3966, -0.1071, 0.2327, 0.4631], [0.4757, 0.2645, -0.0710, -0.3731, -0.4998, -0.3914, -0.0989, 0.2401], [0.4662, 0.4730, 0.2574, -0.0793, -0.3787, -0.5000, -0.3861, -0.0906], [0.2474, 0.4692, 0.4702, 0.2501, -0.0876, -0.3841, -0.5000, -0.3807], [-0.0824, 0.2547, 0.4720, 0.4673, 0.2428, -0.0959, -0.3895, -0.4999], [-0.3752, -0.0741, 0.2619, 0.4747, 0.4642, 0.2354, -0.1041, -0.3947], [-0.4996, -0.3696, -0.0657, 0.2690, 0.4773, 0.4610, 0.2280, -0.1123], [-0.3998, -0.4992, -0.3639, -0.0574, 0.2761, 0.4797, 0.4577, 0.2205]]> : tensor<12x8xf32>
  %w_up = arith.constant dense<[[-0.0911, 0.2471, 0.4690, 0.4704, 0.2505, -0.0872, -0.3838, -0.5000], [-0.3810, -0.0828, 0.2543, 0.4718, 0.4674, 0.2432, -0.0954, -0.3892], [-0.4999, -0.3755, -0.0745, 0.2615, 0.4746, 0.4644, 0.2358, -0.1037], [-0.3944, -0.4996, -0.3699, -0.0662, 0.2687, 0.4771, 0.4612, 0.2284], [-0.1119, -0.3995, -0.4992, -0.3642, -0.0578, 0.2757, 0.4796, 0.4579], [0.2209, -0.1201, -0.4045, -0.4987, -0.3584, -0.0495, 0.2827, 0.4819], [0.4545, 0.2133, -0.1282, -0.4094, -0.4980, -0.3525, -0.0411, 0.2896], [0.4841, 0.4509, 0.2057, -0.1363, -0.4142, -0.4972, -0.3464, -0.0327], [0.2964, 0.4861, 0.4472, 0.1980, -0.1444, -0.4188, -0.4963, -0.3403], [-0.0243, 0.3031, 0.4880, 0.4434, 0.1902, -0.1524, -0.4233, -0.4952], [-0.3341, -0.0159, 0.3098, 0.4898, 0.4394, 0.1824, -0.1604, -0.4278], [-0.4939, -0.3278, -0.0075, 0.3163, 0.4914, 0.4354, 0.1746, -0.1683]]> : tensor<12x8xf32>
  %w_down = arith.constant dense<[[0.4995, 0.3672, 0.0622, -0.2720, -0.4783, -0.4597, -0.2248, 0.1158, 0.4019, 0.4990, 0.3614, 0.0539], [-0.2790, -0.4807, -0.4563, -0.2173, 0.1239, 0.4068, 0.4984, 0.3556, 0.0455, -0.2860, -0.4829, -0.4528], [-0.2097, 0.1320, 0.4117, 0.4977, 0.3496, 0.0371, -0.2928, -0.4851, -0.4492, -0.2020, 0.1401, 0.4164], [0.4968, 0.3436, 0.0287, -0.2996, -0.4870, -0.4454, -0.1943, 0.1482, 0.4210, 0.4958, 0.3374, 0.0203], [-0.3063, -0.4889, -0.4415, -0.1865, 0.1562, 0.4255, 0.4946, 0.3312, 0.0119, -0.3129, -0.4906, -0.4375], [-0.1787, 0.1642, 0.4298, 0.4933, 0.3248, 0.0035, -0.3194, -0.4921, -0.4334, -0.1708, 0.1721, 0.4340], [0.4919, 0.3184, -0.0049, -0.3258, -0.4935, -0.4291, -0.1629, 0.1799, 0.4382, 0.4903, 0.3118, -0.0133], [-0.3321, -0.4948, -0.4248, -0.1549, 0.1878, 0.4421, 0.4886, 0.3052, -0.0217, -0.3384, -0.4959, -0.4203]]> : tensor<8x12xf32>
  %y = call @block(%x, %g1, %w_q, %bias_q, %w_k, %bias_k, %w_vv, %bias_vv, %w_oproj, %g2, %w_gate, %w_up, %w_down) : (tensor<1x3x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<12x8xf32>, tensor<12x8xf32>, tensor<8x12xf32>) -> tensor<1x3x8xf32>
  %u = tensor.cast %y : tensor<1x3x8xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
