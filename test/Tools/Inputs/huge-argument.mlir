// A tensor argument larger than any memory.
func.func @f(%a: tensor<4000000000000xf32>) -> tensor<4000000000000xf32> {
  return %a : tensor<4000000000000xf32>
}
