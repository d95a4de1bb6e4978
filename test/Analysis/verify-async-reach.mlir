// RUN: not flashnorm-opt %s --flashnorm-verify-async -split-input-file -o /dev/null 2>&1 | FileCheck %s

// What the race verifier sees beyond launches on straight-line host code:
// work inside regions and callees, kernels' globals and pointers, buffers
// a launch derives, and what it cannot order (said so, not passed). Each
// case here was once passed silently.

// CHECK: warning: flashnorm-verify-async: not verified: 'scf.if' at {{.*}} holds GPU operations
// CHECK: warning: flashnorm-verify-async: not verified: the call at {{.*}} passes GPU tokens
// CHECK: error: 'func.call' reads @g while 'gpu.launch_func @k::@w' writes it, with no happens-before order between them
// CHECK: error: 'gpu.launch_func @k::@r' reads %{{.*}} while 'gpu.launch' writes it
// CHECK: error: 'gpu.launch_func @k::@r' reads %{{.*}} while 'gpu.launch' writes it
// CHECK: error: 'gpu.launch_func @k::@r' reads @dg while 'gpu.launch_func @k::@w' writes it
// CHECK-NOT: error
// CHECK: warning: flashnorm-verify-async: not verified: 'async.execute' at {{.*}} runs host code concurrently with it
// CHECK: error: 'gpu.launch_func @k::@r' reads %arg0 while 'gpu.launch_func @k::@w' writes it
// CHECK: error: 'gpu.launch_func @k::@r' reads %{{.*}} while 'gpu.launch_func @k::@w' writes it

// A cuBLASLt GEMM (asynchronous, not a gpu dialect op) inside an scf.if:
// the host code is no longer straight-line; not verified, said so.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @r(%c: memref<4x4xf32>, %o: memref<4x4xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %c[%i, %i] : memref<4x4xf32>
      memref.store %v, %o[%i, %i] : memref<4x4xf32>
      gpu.return
    }
  }
  func.func @f(%p: i1, %a: memref<4x4xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>, %o: memref<4x4xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    scf.if %p {
      %g = flashnorm.gemm_lt [%t0] %a, %b, %c : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
    }
    %t1 = gpu.wait async
    %r = gpu.launch_func async [%t1] @k::@r blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%c : memref<4x4xf32>, %o : memref<4x4xf32>)
    gpu.wait [%r, %t0]
    return
  }
}

// -----

// A callee launches work on a token it is given and returns with the
// work in flight: the caller cannot be verified; said so.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @w(%b: memref<16xf32>) kernel {
      %i = gpu.thread_id x
      %v = arith.constant 1.0 : f32
      memref.store %v, %b[%i] : memref<16xf32>
      gpu.return
    }
  }
  func.func @callee(%b: memref<16xf32>, %t: !gpu.async.token) {
    %c1 = arith.constant 1 : index
    %w = gpu.launch_func async [%t] @k::@w blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%b : memref<16xf32>)
    return
  }
  func.func @caller(%b: memref<16xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %t0 = gpu.wait async
    func.call @callee(%b, %t0) : (memref<16xf32>, !gpu.async.token) -> ()
    %v = memref.load %b[%c0] : memref<16xf32>
    gpu.wait [%t0]
    return %v : f32
  }
}

// -----

// A callee reads a global a kernel is still writing.
module attributes {gpu.container_module} {
  memref.global "private" @g : memref<16xf32> = uninitialized
  gpu.module @k {
    gpu.func @w(%b: memref<16xf32>) kernel {
      %i = gpu.thread_id x
      %v = arith.constant 1.0 : f32
      memref.store %v, %b[%i] : memref<16xf32>
      gpu.return
    }
  }
  func.func @reader() -> f32 {
    %c0 = arith.constant 0 : index
    %g = memref.get_global @g : memref<16xf32>
    %v = memref.load %g[%c0] : memref<16xf32>
    return %v : f32
  }
  func.func @caller() -> f32 {
    %c1 = arith.constant 1 : index
    %g = memref.get_global @g : memref<16xf32>
    %t0 = gpu.wait async
    %w = gpu.launch_func async [%t0] @k::@w blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%g : memref<16xf32>)
    %v = func.call @reader() : () -> f32
    gpu.wait [%w]
    return %v : f32
  }
}

// -----

// A gpu.launch writes a buffer it selects from its operands: the
// buffer is defined in the launch but is not its own memory.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @r(%s: memref<4xf32>, %o: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %s[%i] : memref<4xf32>
      memref.store %v, %o[%i] : memref<4xf32>
      gpu.return
    }
  }
  func.func @f(%p: i1, %o: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %a, %t1 = gpu.alloc async [%t0] () : memref<4xf32>
    %b, %t2 = gpu.alloc async [%t1] () : memref<4xf32>
    %f1 = gpu.wait async [%t2]
    %f2 = gpu.wait async [%t2]
    %l = gpu.launch async [%f1] blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
                                threads(%tx, %ty, %tz) in (%u = %c1, %v = %c1, %w = %c1) {
      %m = arith.select %p, %a, %b : memref<4xf32>
      %one = arith.constant 1.0 : f32
      memref.store %one, %m[%tx] : memref<4xf32>
      gpu.terminator
    }
    %r = gpu.launch_func async [%f2] @k::@r blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>, %o : memref<4xf32>)
    gpu.wait [%l, %r, %t2]
    return
  }
}

// -----

// The same through memref.transpose.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @r(%s: memref<4xf32>, %o: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %s[%i] : memref<4xf32>
      memref.store %v, %o[%i] : memref<4xf32>
      gpu.return
    }
  }
  func.func @f(%p: i1, %o: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %a, %t1 = gpu.alloc async [%t0] () : memref<4xf32>
    %b, %t2 = gpu.alloc async [%t1] () : memref<4xf32>
    %f1 = gpu.wait async [%t2]
    %f2 = gpu.wait async [%t2]
    %l = gpu.launch async [%f1] blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
                                threads(%tx, %ty, %tz) in (%u = %c1, %v = %c1, %w = %c1) {
      %m = memref.transpose %a (d0) -> (d0) : memref<4xf32> to memref<4xf32, strided<[1]>>
      %one = arith.constant 1.0 : f32
      memref.store %one, %m[%tx] : memref<4xf32, strided<[1]>>
      gpu.terminator
    }
    %r = gpu.launch_func async [%f2] @k::@r blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>, %o : memref<4xf32>)
    gpu.wait [%l, %r, %t2]
    return
  }
}

// -----

// Two kernels on forked streams, one writing a global of the kernel
// module, one reading it.
module attributes {gpu.container_module} {
  gpu.module @k {
    memref.global "private" @dg : memref<16xf32> = uninitialized
    gpu.func @w() kernel {
      %i = gpu.thread_id x
      %g = memref.get_global @dg : memref<16xf32>
      %v = arith.constant 1.0 : f32
      memref.store %v, %g[%i] : memref<16xf32>
      gpu.return
    }
    gpu.func @r(%o: memref<16xf32>) kernel {
      %i = gpu.thread_id x
      %g = memref.get_global @dg : memref<16xf32>
      %v = memref.load %g[%i] : memref<16xf32>
      memref.store %v, %o[%i] : memref<16xf32>
      gpu.return
    }
  }
  func.func @f(%o: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %f1 = gpu.wait async [%t0]
    %f2 = gpu.wait async [%t0]
    %w = gpu.launch_func async [%f1] @k::@w blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    %r = gpu.launch_func async [%f2] @k::@r blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%o : memref<16xf32>)
    gpu.wait [%w, %r, %t0]
    return
  }
}

// -----

// A kernel with a workgroup attribution (a block argument past its
// arguments): its own memory; two launches reading the same input are fine.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @r(%s: memref<4xf32>, %o: memref<4xf32>) workgroup(%sh: memref<4xf32, #gpu.address_space<workgroup>>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %s[%i] : memref<4xf32>
      memref.store %v, %sh[%i] : memref<4xf32, #gpu.address_space<workgroup>>
      %w = memref.load %sh[%i] : memref<4xf32, #gpu.address_space<workgroup>>
      memref.store %w, %o[%i] : memref<4xf32>
      gpu.return
    }
  }
  func.func @f(%a: memref<4xf32>, %o1: memref<4xf32>, %o2: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %t1 = gpu.wait async
    %x1 = gpu.launch_func async [%t0] @k::@r blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>, %o1 : memref<4xf32>)
    %x2 = gpu.launch_func async [%t1] @k::@r blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>, %o2 : memref<4xf32>)
    gpu.wait [%x1, %x2]
    return
  }
}

// -----

// A host task (async.execute) beside the GPU work: not verified, said so.
module attributes {gpu.container_module} {
  func.func @f(%h: memref<16xf32>, %d: memref<16xf32>) {
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    %tok = async.execute {
      memref.store %one, %h[%c0] : memref<16xf32>
      async.yield
    }
    %t0 = gpu.wait async
    %t1 = gpu.memcpy async [%t0] %d, %h : memref<16xf32>, memref<16xf32>
    gpu.wait [%t1]
    async.await %tok : !async.token
    return
  }
}

// -----

// A kernel writes its argument through the pointer it extracts.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @w(%b: memref<16xf32>) kernel {
      %v = arith.constant 1.0 : f32
      %i = memref.extract_aligned_pointer_as_index %b : memref<16xf32> -> index
      %n = arith.index_cast %i : index to i64
      %p = llvm.inttoptr %n : i64 to !llvm.ptr
      llvm.store %v, %p : f32, !llvm.ptr
      gpu.return
    }
    gpu.func @r(%b: memref<16xf32>, %o: memref<16xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %b[%i] : memref<16xf32>
      memref.store %v, %o[%i] : memref<16xf32>
      gpu.return
    }
  }
  func.func @f(%b: memref<16xf32>, %o: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %t1 = gpu.wait async
    %w = gpu.launch_func async [%t0] @k::@w blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%b : memref<16xf32>)
    %r = gpu.launch_func async [%t1] @k::@r blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%b : memref<16xf32>, %o : memref<16xf32>)
    gpu.wait [%w, %r]
    return
  }
}

// -----

// A writable global and a function argument may be the same buffer
// (a caller may pass the global).
module attributes {gpu.container_module} {
  memref.global "private" @g : memref<16xf32> = uninitialized
  gpu.module @k {
    gpu.func @w(%b: memref<16xf32>) kernel {
      %i = gpu.thread_id x
      %v = arith.constant 1.0 : f32
      memref.store %v, %b[%i] : memref<16xf32>
      gpu.return
    }
    gpu.func @r(%b: memref<16xf32>, %o: memref<16xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %b[%i] : memref<16xf32>
      memref.store %v, %o[%i] : memref<16xf32>
      gpu.return
    }
  }
  func.func @f(%a: memref<16xf32>, %o: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %g = memref.get_global @g : memref<16xf32>
    %t0 = gpu.wait async
    %t1 = gpu.wait async
    %w = gpu.launch_func async [%t0] @k::@w blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<16xf32>)
    %r = gpu.launch_func async [%t1] @k::@r blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%g : memref<16xf32>, %o : memref<16xf32>)
    gpu.wait [%w, %r]
    return
  }
  func.func @main(%o: memref<16xf32>) {
    %g = memref.get_global @g : memref<16xf32>
    func.call @f(%g, %o) : (memref<16xf32>, memref<16xf32>) -> ()
    return
  }
}
