// The kit's runner helpers (runtime/kit, libflashnorm_kit_runner_utils) stand
// in for upstream's runner libraries in programs compiled ahead of time:
// the same program, run by mlir-runner with upstream's libraries and compiled
// to an executable against ours, prints the same numbers (upstream prints 6
// significant digits, ours 9). Covers printMemrefF32 on a strided view with
// an offset, a rank-0 memref, vector.print, memrefCopy between
// layouts, and the f32 -> bf16 truncation of a bf16 model's host code.
// REQUIRES: cuda-runtime
// RUN: flashnorm-opt %s --flashnorm-lower-to-llvm -o %t.llvm.mlir
// RUN: %run %t.llvm.mlir > %t.jit
// RUN: mlir-translate --mlir-to-llvmir %t.llvm.mlir -o %t.ll
// RUN: llc -filetype=obj -relocation-model=pic %t.ll -o %t.o
// RUN: objcopy --redefine-sym main=flashnorm_kit_main %t.o
// RUN: printf 'void flashnorm_kit_main(void);\nint main(void) { flashnorm_kit_main(); return 0; }\n' > %t.main.c
// RUN: %host-cc %t.o %t.main.c -o %t.exe %kit-runner-utils-lib -Wl,-rpath,%flashnorm-obj-root/lib -lm
// RUN: %t.exe > %t.aot
// RUN: FileCheck %s < %t.aot
// RUN: %compare %t.jit %t.aot --rtol 1e-5 --atol 0 | FileCheck %s --check-prefix=SAME
// RUN: flashnorm-gen --family=llama --flavor=linalg --dtype=bf16 --layers=1 -o %t.bf16.mlir
// RUN: flashnorm-opt %t.bf16.mlir --flashnorm-lower-to-llvm -o %t.bf16.llvm.mlir
// RUN: %async-run %t.bf16.llvm.mlir > %t.bf16.jit
// RUN: mlir-translate --mlir-to-llvmir %t.bf16.llvm.mlir -o %t.bf16.ll
// RUN: llc -filetype=obj -relocation-model=pic %t.bf16.ll -o %t.bf16.o
// RUN: objcopy --redefine-sym main=flashnorm_kit_main %t.bf16.o
// RUN: %host-cc %t.bf16.o %t.main.c -o %t.bf16.exe %kit-runner-utils-lib -Wl,-rpath,%flashnorm-obj-root/lib -lm
// RUN: %t.bf16.exe > %t.bf16.aot
// RUN: %compare %t.bf16.jit %t.bf16.aot --rtol 1e-5 --atol 0 | FileCheck %s --check-prefix=SAME

// CHECK: rank = 2 offset = 1 sizes = [2, 2] strides = [3, 1] data =
// CHECK-NEXT: {{\[}}[1, 2],
// CHECK-NEXT:  [4, 5]]
// CHECK: rank = 0 offset = 0 sizes = [] strides = [] data =
// CHECK-NEXT: [0.333333343]
// CHECK: 2.5
// CHECK-NEXT: -7
// CHECK: rank = 2 offset = 0 sizes = [2, 2] strides = [2, 1] data =
// CHECK-NEXT: {{\[}}[1, 2],
// CHECK-NEXT:  [4, 5]]
// SAME: MATCH

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %m = memref.alloc() : memref<2x3xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c3 step %c1 {
      %k = arith.muli %i, %c3 : index
      %l = arith.addi %k, %j : index
      %li = arith.index_cast %l : index to i32
      %f = arith.sitofp %li : i32 to f32
      memref.store %f, %m[%i, %j] : memref<2x3xf32>
    }
  }
  %view = memref.subview %m[0, 1] [2, 2] [1, 1]
    : memref<2x3xf32> to memref<2x2xf32, strided<[3, 1], offset: 1>>
  %u = memref.cast %view : memref<2x2xf32, strided<[3, 1], offset: 1>> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()

  %s = memref.alloc() : memref<f32>
  %third = arith.constant 0.333333343 : f32
  memref.store %third, %s[] : memref<f32>
  %su = memref.cast %s : memref<f32> to memref<*xf32>
  call @printMemrefF32(%su) : (memref<*xf32>) -> ()

  %v = arith.constant 2.5 : f32
  vector.print %v : f32
  %n = arith.constant -7 : i64
  vector.print %n : i64

  // A strided source: not one memcpy, so the lowering calls memrefCopy.
  %dense = memref.alloc() : memref<2x2xf32>
  memref.copy %view, %dense : memref<2x2xf32, strided<[3, 1], offset: 1>> to memref<2x2xf32>
  %du = memref.cast %dense : memref<2x2xf32> to memref<*xf32>
  call @printMemrefF32(%du) : (memref<*xf32>) -> ()
  memref.dealloc %dense : memref<2x2xf32>
  memref.dealloc %s : memref<f32>
  memref.dealloc %m : memref<2x3xf32>
  return
}
