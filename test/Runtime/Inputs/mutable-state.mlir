// Each call returns the state and stores its argument in it (a one-step
// delay line): copies, which the fake driver performs. The kernel beside
// them (twice the argument, not printed: the fake driver runs no kernel)
// makes @step a device function.
ml_program.global private mutable @state(dense<0.0> : tensor<4xf32>) : tensor<4xf32>

func.func @step(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %old = ml_program.global_load @state : tensor<4xf32>
  ml_program.global_store @state = %x : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %twice = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>)
                      outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %old, %twice : tensor<4xf32>, tensor<4xf32>
}

func.func @main() {
  %a = arith.constant dense<1.0> : tensor<4xf32>
  %b = arith.constant dense<2.0> : tensor<4xf32>
  %c = arith.constant dense<3.0> : tensor<4xf32>
  %0:2 = call @step(%a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %1:2 = call @step(%b) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %2:2 = call @step(%c) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %u0 = tensor.cast %0#0 : tensor<4xf32> to tensor<*xf32>
  call @printMemrefF32(%u0) : (tensor<*xf32>) -> ()
  %u1 = tensor.cast %1#0 : tensor<4xf32> to tensor<*xf32>
  call @printMemrefF32(%u1) : (tensor<*xf32>) -> ()
  %u2 = tensor.cast %2#0 : tensor<4xf32> to tensor<*xf32>
  call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
