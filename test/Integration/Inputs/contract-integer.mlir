// An integer contraction: flashnorm-test-gpu-launch-to-loops runs float
// ones only (launch-to-loops-contract.mlir).
func.func @integer(%a: vector<2x4xi32>, %b: vector<3x4xi32>,
                   %acc: vector<2x3xi32>) -> vector<2x3xi32> {
  %r = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                         affine_map<(m, n, k) -> (n, k)>,
                                         affine_map<(m, n, k) -> (m, n)>],
                        iterator_types = ["parallel", "parallel", "reduction"],
                        kind = #vector.kind<add>} %a, %b, %acc
    : vector<2x4xi32>, vector<3x4xi32> into vector<2x3xi32>
  return %r : vector<2x3xi32>
}
