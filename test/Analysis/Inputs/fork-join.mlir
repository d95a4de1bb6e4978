// A fork and a join whose host wait names one token of each stream.
module attributes {gpu.container_module} {
  func.func @fork_join(%x: memref<16xf32>) {
    %t0 = gpu.wait async
    %d, %t1 = gpu.alloc async [%t0] () : memref<16xf32>
    %fork = gpu.wait async [%t1]
    %t2 = gpu.memcpy async [%fork] %d, %x : memref<16xf32>, memref<16xf32>
    %join = gpu.wait async [%t1, %t2]
    %t3 = gpu.dealloc async [%join] %d : memref<16xf32>
    gpu.wait [%t1, %t2, %t3]
    return
  }
}
