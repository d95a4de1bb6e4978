// RUN: flashnorm-opt %s --flashnorm-ml-program-to-memref --split-input-file --verify-diagnostics | FileCheck %s

// An extern global becomes a public external memref.global (the runner
// binds it by name), one with a value a private constant; loads become
// read-only tensors of memref.get_global.
// CHECK: memref.global constant @w.weight : memref<2x3xf32>
// CHECK-NOT: =
// CHECK: memref.global "private" constant @g : memref<2xf32> = dense<[1.000000e+00, 2.000000e+00]>
// CHECK-LABEL: func.func @f
// CHECK: %[[W:.*]] = memref.get_global @w.weight : memref<2x3xf32>
// CHECK: bufferization.to_tensor %[[W]] restrict : memref<2x3xf32> to tensor<2x3xf32>
// CHECK: %[[G:.*]] = memref.get_global @g : memref<2xf32>
// CHECK: bufferization.to_tensor %[[G]] restrict
// CHECK-NOT: ml_program
ml_program.global private @"w.weight"(#ml_program.extern : tensor<2x3xf32>) : tensor<2x3xf32>
ml_program.global private @g(dense<[1.0, 2.0]> : tensor<2xf32>) : tensor<2xf32>
func.func @f() -> (tensor<2x3xf32>, tensor<2xf32>) {
  %w = ml_program.global_load_const @"w.weight" : tensor<2x3xf32>
  %g = ml_program.global_load @g : tensor<2xf32>
  return %w, %g : tensor<2x3xf32>, tensor<2xf32>
}

// -----

// A mutable global (a model's state) becomes a writable memref.global; a
// store copies the value's buffer into it where the store stands (upstream's
// bufferization of global_store copied an uninitialized buffer instead; a
// materialize_in_destination let empty-tensor elimination compute the value
// into the global before the loads between), and a load of a global the
// module stores into is a copy: the store that follows must not change it.
// CHECK: memref.global "private" @state : memref<4xf32> = dense<0.000000e+00>
// CHECK: memref.global @public_state : memref<4xf32> = uninitialized
// CHECK: memref.global "private" @read_only : memref<4xf32> = dense<1.000000e+00>
// CHECK-LABEL: func.func @mutable
// CHECK: %[[S:.*]] = memref.get_global @state : memref<4xf32>
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[S]] restrict : memref<4xf32> to tensor<4xf32>
// CHECK: %[[OLD:.*]] = bufferization.alloc_tensor() copy(%[[T]]) : tensor<4xf32>
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %[[OLD]]
// CHECK: %[[S2:.*]] = memref.get_global @state : memref<4xf32>
// CHECK: %[[NEWBUF:.*]] = bufferization.to_buffer %[[NEW]] read_only : tensor<4xf32> to memref<4xf32>
// CHECK: memref.copy %[[NEWBUF]], %[[S2]]
// CHECK: %[[P:.*]] = memref.get_global @public_state
// CHECK: %[[OLDBUF:.*]] = bufferization.to_buffer %[[OLD]] read_only
// CHECK: memref.copy %[[OLDBUF]], %[[P]]
// A mutable global nothing stores into is read in place.
// CHECK: %[[R:.*]] = memref.get_global @read_only : memref<4xf32>
// CHECK: %[[RT:.*]] = bufferization.to_tensor %[[R]] restrict
// CHECK-NOT: alloc_tensor
// CHECK: return %[[OLD]], %[[RT]]
// CHECK-NOT: ml_program
ml_program.global private mutable @state(dense<0.0> : tensor<4xf32>) : tensor<4xf32>
ml_program.global public mutable @public_state : tensor<4xf32>
ml_program.global private mutable @read_only(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
func.func @mutable() -> (tensor<4xf32>, tensor<4xf32>) {
  %s = ml_program.global_load @state : tensor<4xf32>
  %n = arith.addf %s, %s : tensor<4xf32>
  ml_program.global_store @state = %n : tensor<4xf32>
  ml_program.global_store @public_state = %s : tensor<4xf32>
  %r = ml_program.global_load @read_only : tensor<4xf32>
  return %s, %r : tensor<4xf32>, tensor<4xf32>
}

// -----

// The token-ordered forms are not lowered.
ml_program.global private mutable @graph_state(dense<0.0> : tensor<4xf32>) : tensor<4xf32>
func.func @graph(%t: !ml_program.token) -> tensor<4xf32> {
  // expected-error @below {{the graph form of a global's load or store cannot be lowered}}
  %s, %t2 = ml_program.global_load_graph @graph_state ordering(%t -> !ml_program.token) : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// expected-error @below {{a mutable extern global cannot be lowered}}
ml_program.global private mutable @ext(#ml_program.extern : tensor<4xf32>) : tensor<4xf32>

// -----

// expected-error @below {{a global's value must be elements or #ml_program.extern}}
ml_program.global private mutable @scalar_value(1.0 : f32) : tensor<4xf32>

// -----

// expected-error @below {{a global needs a statically shaped tensor type}}
ml_program.global private @dyn(#ml_program.extern : tensor<?xf32>) : tensor<?xf32>

// -----

// A nested module's load names that module's global of the same name: it
// stays as it is (the top-level load was matched by name and became a
// get_global of the inner, still ml_program, global: invalid IR).
// CHECK: memref.global "private" constant @w : memref<4xf32> = dense<1.000000e+00>
// CHECK-LABEL: func.func @outer
// CHECK: memref.get_global @w : memref<4xf32>
// CHECK: module @inner
// CHECK: ml_program.global private @w(dense<2.000000e+00> : tensor<4xf32>)
// CHECK-LABEL: func.func @inner_load
// CHECK: ml_program.global_load_const @w : tensor<4xf32>
ml_program.global private @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
func.func @outer() -> tensor<4xf32> {
  %0 = ml_program.global_load_const @w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
module @inner {
  ml_program.global private @w(dense<2.0> : tensor<4xf32>) : tensor<4xf32>
  func.func @inner_load() -> tensor<4xf32> {
    %0 = ml_program.global_load_const @w : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
