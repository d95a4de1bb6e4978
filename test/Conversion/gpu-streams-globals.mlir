// Mutable globals in device functions (a model's state): one device copy of
// each per call, however many ops name it, stored back at the end where a
// kernel writes it; a function whose helper uses such a global stays on the
// host, with a remark (the helper would see, or write, the host's copy while
// the kernels use theirs).
// RUN: flashnorm-opt %s --split-input-file --flashnorm-gpu-to-streams | FileCheck %s
// RUN: flashnorm-opt %s --split-input-file --flashnorm-gpu-to-streams --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

memref.global "private" @state : memref<4xf32> = dense<0.0>
memref.global "private" @seen : memref<4xf32> = dense<1.0>

// CHECK-LABEL: func.func @update(
// CHECK: %[[HOST:.*]] = memref.get_global @state
// CHECK: %[[DEV:.*]], %{{.*}} = gpu.alloc async
// CHECK: gpu.memcpy async [%{{.*}}] %[[DEV]], %[[HOST]]
// CHECK: %[[SEEN:.*]] = memref.get_global @seen
// CHECK: %[[SEENDEV:.*]], %{{.*}} = gpu.alloc async
// CHECK: gpu.memcpy async [%{{.*}}] %[[SEENDEV]], %[[SEEN]]
// CHECK-NOT: memref.get_global
// CHECK: gpu.launch async
// CHECK: memref.store %{{.*}}, %[[DEV]]
// CHECK: gpu.launch async
// CHECK: memref.load %[[DEV]]
// The kernels wrote the state, not @seen: only the state goes back.
// CHECK: gpu.memcpy async [%{{.*}}] %[[HOST]], %[[DEV]]
// CHECK-NOT: gpu.memcpy
// CHECK: gpu.wait [
func.func @update(%x: memref<4xf32>, %out: memref<4xf32>) {
  %s = memref.get_global @state : memref<4xf32>
  %seen = memref.get_global @seen : memref<4xf32>
  linalg.add ins(%s, %x : memref<4xf32>, memref<4xf32>) outs(%s : memref<4xf32>)
  %again = memref.get_global @state : memref<4xf32>
  linalg.mul ins(%again, %seen : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
  return
}

// -----

memref.global "private" @state : memref<4xf32> = dense<0.0>

func.func private @bump() {
  %g = memref.get_global @state : memref<4xf32>
  %c0 = arith.constant 0 : index
  %v = arith.constant 5.0 : f32
  memref.store %v, %g[%c0] : memref<4xf32>
  return
}
func.func private @timer()

// REMARK: remark: [Missed] flashnorm-gpu-kernels | Category:flashnorm | Function=uses_helper | Remark="@uses_helper stays on the host: it calls @bump, which uses the mutable global @state its kernels would work on a device copy of"
// CHECK-LABEL: func.func @uses_helper(
// CHECK-NOT: gpu.
// CHECK: call @bump
// CHECK-NOT: gpu.
// CHECK: return
func.func @uses_helper(%x: memref<4xf32>, %out: memref<4xf32>) {
  %s = memref.get_global @state : memref<4xf32>
  linalg.add ins(%s, %x : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
  call @bump() : () -> ()
  linalg.add ins(%s, %out : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
  return
}

// REMARK: remark: [Missed] flashnorm-gpu-kernels | Category:flashnorm | Function=uses_timer | Remark="@uses_timer stays on the host: it calls @timer (no body to read), which may use the mutable global @state its kernels would work on a device copy of"
// CHECK-LABEL: func.func @uses_timer(
// CHECK-NOT: gpu.
// CHECK: return
func.func @uses_timer(%x: memref<4xf32>, %out: memref<4xf32>) {
  %s = memref.get_global @state : memref<4xf32>
  call @timer() : () -> ()
  linalg.add ins(%s, %x : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
  call @timer() : () -> ()
  return
}

// A timer in a function that names no mutable global stays a host call in
// a device function.
// CHECK-LABEL: func.func @timed(
// CHECK: call @timer
// CHECK: gpu.launch async
// CHECK: call @timer
func.func @timed(%x: memref<4xf32>, %out: memref<4xf32>) {
  call @timer() : () -> ()
  linalg.add ins(%x, %x : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
  call @timer() : () -> ()
  return
}
