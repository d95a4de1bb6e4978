// RUN: flashnorm-opt %s --flashnorm-verify-async -split-input-file -verify-diagnostics

// The bug of docs/MATH.md §6: the post-scale waits on the projection's
// stream only, not on the statistic's.

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @stat(%x: memref<4x16xf32>, %s: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%i, %c0] : memref<4x16xf32>
      memref.store %v, %s[%i] : memref<4xf32>
      gpu.return
    }
    gpu.func @proj(%x: memref<4x16xf32>, %y: memref<4x16xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i, %i] : memref<4x16xf32>
      memref.store %v, %y[%i, %i] : memref<4x16xf32>
      gpu.return
    }
    gpu.func @post(%y: memref<4x16xf32>, %s: memref<4xf32>, %o: memref<4x16xf32>) kernel {
      %i = gpu.thread_id x
      %a = memref.load %y[%i, %i] : memref<4x16xf32>
      %b = memref.load %s[%i] : memref<4xf32>
      %c = arith.mulf %a, %b : f32
      memref.store %c, %o[%i, %i] : memref<4x16xf32>
      gpu.return
    }
  }
  func.func @join_misses_the_statistic(%x: memref<4x16xf32>, %o: memref<4x16xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    // expected-note @below {{the buffer (%memref) is defined here}}
    %s, %t1 = gpu.alloc async [%t0] () : memref<4xf32>
    %y, %t2 = gpu.alloc async [%t1] () : memref<4x16xf32>
    %fork = gpu.wait async [%t2]
    // expected-note @below {{the other access: 'gpu.launch_func @k::@stat' writes %memref}}
    %ts = gpu.launch_func async [%fork] @k::@stat blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4x16xf32>, %s : memref<4xf32>)
    %tp = gpu.launch_func async [%t2] @k::@proj blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4x16xf32>, %y : memref<4x16xf32>)
    // expected-error @below {{'gpu.launch_func @k::@post' reads %memref while 'gpu.launch_func @k::@stat' writes it, with no happens-before order between them}}
    %tq = gpu.launch_func async [%tp] @k::@post blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%y : memref<4x16xf32>, %s : memref<4xf32>, %o : memref<4x16xf32>)
    gpu.wait [%tq, %ts]
    return
  }

  // The fix: an explicit join of both streams.
  func.func @joined(%x: memref<4x16xf32>, %o: memref<4x16xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %s, %t1 = gpu.alloc async [%t0] () : memref<4xf32>
    %y, %t2 = gpu.alloc async [%t1] () : memref<4x16xf32>
    %fork = gpu.wait async [%t2]
    // The statistic and the projection both read %x: read-read is fine.
    %ts = gpu.launch_func async [%fork] @k::@stat blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4x16xf32>, %s : memref<4xf32>)
    %tp = gpu.launch_func async [%t2] @k::@proj blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4x16xf32>, %y : memref<4x16xf32>)
    %join = gpu.wait async [%tp, %ts]
    %tq = gpu.launch_func async [%join] @k::@post blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%y : memref<4x16xf32>, %s : memref<4xf32>, %o : memref<4x16xf32>)
    %t3 = gpu.dealloc async [%tq] %s : memref<4xf32>
    %t4 = gpu.dealloc async [%t3] %y : memref<4x16xf32>
    gpu.wait [%t4, %ts]
    return
  }

  // A host wait orders too: everything it waited for is complete before the
  // host issues more work.
  func.func @host_wait_orders(%x: memref<4x16xf32>, %o: memref<4x16xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %s, %t1 = gpu.alloc async [%t0] () : memref<4xf32>
    %y, %t2 = gpu.alloc async [%t1] () : memref<4x16xf32>
    %ts = gpu.launch_func async [%t2] @k::@stat blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4x16xf32>, %s : memref<4xf32>)
    %tp = gpu.launch_func async [%t2] @k::@proj blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4x16xf32>, %y : memref<4x16xf32>)
    gpu.wait [%ts]
    %t5 = gpu.wait async
    %tq = gpu.launch_func async [%t5, %tp] @k::@post blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%y : memref<4x16xf32>, %s : memref<4xf32>, %o : memref<4x16xf32>)
    gpu.wait [%tq]
    return
  }
}

// -----

// A fork whose branches write a buffer the other reads.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @copy(%a: memref<16xf32>, %b: memref<16xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %a[%i] : memref<16xf32>
      memref.store %v, %b[%i] : memref<16xf32>
      gpu.return
    }
  }
  func.func @fork_branches_conflict(%a: memref<16xf32>, %c: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    // expected-note @below {{the buffer (%memref) is defined here}}
    %b, %t1 = gpu.alloc async [%t0] () : memref<16xf32>
    %f1 = gpu.wait async [%t1]
    %f2 = gpu.wait async [%t1]
    // expected-note @below {{the other access: 'gpu.launch_func @k::@copy' writes %memref}}
    %x1 = gpu.launch_func async [%f1] @k::@copy blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<16xf32>, %b : memref<16xf32>)
    // expected-error @below {{'gpu.memcpy' reads %memref while 'gpu.launch_func @k::@copy' writes it, with no happens-before order between them}}
    %x2 = gpu.memcpy async [%f2] %c, %b : memref<16xf32>, memref<16xf32>
    %j = gpu.wait async [%x1, %x2]
    %t2 = gpu.dealloc async [%j] %b : memref<16xf32>
    gpu.wait [%t2, %x1, %x2]
    return
  }
}

// -----

// A write after a read with no ordering (the next step's input overwritten
// while the statistic may still read it), through a view.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @read(%a: memref<16xf32>, %out: memref<16xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %a[%i] : memref<16xf32>
      memref.store %v, %out[%i] : memref<16xf32>
      gpu.return
    }
  }
  // expected-note @below {{the buffer (%arg1) is defined here}}
  func.func @write_after_read(%host: memref<4x4xf32>, %a: memref<16xf32>, %out: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    // expected-note @below {{the other access: 'gpu.launch_func @k::@read' reads %arg1}}
    %r = gpu.launch_func async [%t0] @k::@read blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<16xf32>, %out : memref<16xf32>)
    %t1 = gpu.wait async
    %view = memref.expand_shape %a [[0, 1]] output_shape [4, 4] : memref<16xf32> into memref<4x4xf32>
    // expected-error @below {{'gpu.memcpy' writes %expand_shape while 'gpu.launch_func @k::@read' reads it, with no happens-before order between them}}
    %w = gpu.memcpy async [%t1] %view, %host : memref<4x4xf32>, memref<4x4xf32>
    gpu.wait [%r, %w]
    return
  }
}

// -----

// A dealloc that does not wait for a user, and a use after a dealloc.
module attributes {gpu.container_module} {
  func.func @dealloc_too_early(%host: memref<16xf32>) {
    %t0 = gpu.wait async
    // expected-note @below {{the buffer (%memref) is defined here}}
    %b, %t1 = gpu.alloc async [%t0] () : memref<16xf32>
    // expected-note @below {{the other access: 'gpu.memcpy' reads %memref}}
    %t2 = gpu.memcpy async [%t1] %host, %b : memref<16xf32>, memref<16xf32>
    %f = gpu.wait async [%t1]
    // expected-error @below {{'gpu.dealloc' deallocates %memref while 'gpu.memcpy' may still read it}}
    %t3 = gpu.dealloc async [%f] %b : memref<16xf32>
    gpu.wait [%t2, %t3]
    return
  }

  func.func @use_after_dealloc(%host: memref<16xf32>) {
    %zero = arith.constant 0.0 : f32
    %t0 = gpu.wait async
    // expected-note @below {{the buffer (%memref) is defined here}}
    %b, %t1 = gpu.alloc async [%t0] () : memref<16xf32>
    // expected-note @below {{the other access: 'gpu.dealloc' deallocates %memref}}
    %t2 = gpu.dealloc async [%t1] %b : memref<16xf32>
    // expected-error @below {{'gpu.memset' writes %memref after it was deallocated}}
    %t3 = gpu.memset async [%t2] %b, %zero : memref<16xf32>, f32
    gpu.wait [%t3]
    return
  }
}

// -----

// A use before the allocation is ordered before it.
module attributes {gpu.container_module} {
  func.func @use_before_alloc(%host: memref<16xf32>) {
    %t0 = gpu.wait async
    %t1 = gpu.wait async
    // expected-note @below {{the buffer (%memref) is defined here}}
    // expected-note @below {{the other access: 'gpu.alloc' allocates %memref}}
    %b, %t2 = gpu.alloc async [%t0] () : memref<16xf32>
    // expected-error @below {{'gpu.memcpy' writes %memref before its allocation is ordered before it}}
    %t3 = gpu.memcpy async [%t1] %b, %host : memref<16xf32>, memref<16xf32>
    gpu.wait [%t2, %t3]
    return
  }
}

// -----

// Host reads of a downloaded result need a host wait first.
module attributes {gpu.container_module} {
  func.func @host_reads_too_early(%dev: memref<16xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %t0 = gpu.wait async
    // expected-note @below {{the buffer (%alloc) is defined here}}
    %host = memref.alloc() : memref<16xf32>
    // expected-note @below {{the other access: 'gpu.memcpy' writes %alloc}}
    %t1 = gpu.memcpy async [%t0] %host, %dev : memref<16xf32>, memref<16xf32>
    // expected-error @below {{'memref.load' reads %alloc while 'gpu.memcpy' writes it, with no happens-before order between them}}
    %v = memref.load %host[%c0] : memref<16xf32>
    gpu.wait [%t1]
    %w = memref.load %host[%c0] : memref<16xf32>
    %s = arith.addf %v, %w : f32
    return %s : f32
  }
}

// -----

// Unknown control flow is reported, not guessed.
module attributes {gpu.container_module} {
  // expected-warning @below {{flashnorm-verify-async: not verified: 'scf.for'}}
  func.func @in_a_loop(%b: memref<16xf32>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %v = arith.constant 0.0 : f32
    scf.for %i = %c0 to %n step %c1 {
      %t = gpu.wait async
      %t1 = gpu.memset async [%t] %b, %v : memref<16xf32>, f32
      gpu.wait [%t1]
    }
    return
  }
}

// -----

// A buffer chosen at run time (select) may be either: it aliases both, on
// the host and inside a kernel.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @w(%s: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %c = arith.constant 1.0 : f32
      memref.store %c, %s[%i] : memref<4xf32>
      gpu.return
    }
    gpu.func @r(%s: memref<4xf32>, %o: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %s[%i] : memref<4xf32>
      memref.store %v, %o[%i] : memref<4xf32>
      gpu.return
    }
    gpu.func @write_one_of(%a: memref<4xf32>, %b: memref<4xf32>, %c: i1) kernel {
      %i = gpu.thread_id x
      %v = arith.constant 1.0 : f32
      %m = arith.select %c, %a, %b : memref<4xf32>
      memref.store %v, %m[%i] : memref<4xf32>
      gpu.return
    }
  }
  func.func @host_select(%c: i1, %o: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %a, %t1 = gpu.alloc async [%t0] () : memref<4xf32>
    %b, %t2 = gpu.alloc async [%t1] () : memref<4xf32>
    // expected-note @below {{the buffer (%1) is defined here}}
    %m = arith.select %c, %a, %b : memref<4xf32>
    %f1 = gpu.wait async [%t2]
    %f2 = gpu.wait async [%t2]
    // expected-note @below {{the other access: 'gpu.launch_func @k::@w' writes %1}}
    %tw = gpu.launch_func async [%f1] @k::@w blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%m : memref<4xf32>)
    // expected-error @below {{'gpu.launch_func @k::@r' reads %memref while 'gpu.launch_func @k::@w' writes it, with no happens-before order between them}}
    %tr = gpu.launch_func async [%f2] @k::@r blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>, %o : memref<4xf32>)
    gpu.wait [%tw, %tr, %t2]
    return
  }
  func.func @kernel_select(%c: i1, %o: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    // expected-note @below {{the buffer (%memref) is defined here}}
    %a, %t1 = gpu.alloc async [%t0] () : memref<4xf32>
    %b, %t2 = gpu.alloc async [%t1] () : memref<4xf32>
    %f1 = gpu.wait async [%t2]
    %f2 = gpu.wait async [%t2]
    // expected-note @below {{the other access: 'gpu.launch_func @k::@write_one_of' writes %memref}}
    %tw = gpu.launch_func async [%f1] @k::@write_one_of blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>, %b : memref<4xf32>, %c : i1)
    // expected-error @below {{'gpu.launch_func @k::@r' reads %memref while 'gpu.launch_func @k::@write_one_of' writes it, with no happens-before order between them}}
    %tr = gpu.launch_func async [%f2] @k::@r blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>, %o : memref<4xf32>)
    gpu.wait [%tw, %tr, %t2]
    return
  }
}

// -----

// A kernel's dynamic shared memory is its own: a kernel staging %a through
// it only reads %a, so two of them may read %a at once (were the view's
// root unknown, each would be taken to write every argument).
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @stage(%a: memref<16xf32>, %out: memref<16xf32>) kernel {
      %c0 = arith.constant 0 : index
      %i = gpu.thread_id x
      %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %s = memref.view %raw[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
      %v = memref.load %a[%i] : memref<16xf32>
      memref.store %v, %s[%i] : memref<16xf32, #gpu.address_space<workgroup>>
      %w = memref.load %s[%i] : memref<16xf32, #gpu.address_space<workgroup>>
      memref.store %w, %out[%i] : memref<16xf32>
      gpu.return
    }
  }
  func.func @dynamic_shared_is_private(%a: memref<16xf32>, %o1: memref<16xf32>, %o2: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %bytes = arith.constant 64 : i32
    %t0 = gpu.wait async
    %x1 = gpu.launch_func async [%t0] @k::@stage blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %bytes args(%a : memref<16xf32>, %o1 : memref<16xf32>)
    %t1 = gpu.wait async
    %x2 = gpu.launch_func async [%t1] @k::@stage blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %bytes args(%a : memref<16xf32>, %o2 : memref<16xf32>)
    gpu.wait [%x1, %x2]
    return
  }
}
