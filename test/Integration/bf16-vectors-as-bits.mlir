// The test lowering that runs the tensor-core kernels on the CPU moves
// their bf16 fragments as i16 vectors on the LLVM dialect
// (flashnorm-test-bf16-vectors-as-bits): LLVM's x86 backend promotes each
// bf16 vector to f32, and each store of one to N roundings, so the kernels'
// compilation took twenty times their run.
//
// A program that carries bf16 rows through a loop (swapping them each
// iteration, three times) and stores them prints the same numbers with and
// without the rewrite: the bits moved are the same.
// RUN: flashnorm-opt %s --flashnorm-cpu-buffers-to-llvm=vectorize=false | %run | FileCheck %s --check-prefix=ROWS
// RUN: flashnorm-opt %s --flashnorm-cpu-buffers-to-llvm=vectorize=false --flashnorm-test-bf16-vectors-as-bits | %run | FileCheck %s --check-prefix=ROWS
// ROWS-LABEL: rows
// ROWS: {{\[}}[-3.5,   0.0078125,   1.04858e+06,   -0,   inf,   2,   3,   4],
// ROWS-NEXT: [1,   0.5,   -2.25,   1.17549e-38,   65536,   -inf,   9.18355e-41,   nan]
// RUN: flashnorm-opt %s --flashnorm-cpu-buffers-to-llvm=vectorize=false --flashnorm-test-bf16-vectors-as-bits | FileCheck %s --check-prefix=LOWERED
// LOWERED-LABEL: llvm.func @rows
// LOWERED-NOT: xbf16>
// LOWERED: llvm.return
//
// On hand-written LLVM dialect: what is only moved (loads, block arguments,
// aggregates, a constant of zeros, stores) becomes its bits in place.
// RUN: flashnorm-opt %s --flashnorm-test-bf16-vectors-as-bits --split-input-file | FileCheck %s
// CHECK-LABEL: llvm.func @moves
// CHECK: llvm.mlir.constant(dense<0> : vector<2x4xi16>) : !llvm.array<2 x vector<4xi16>>
// CHECK: %[[V:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<4xi16>
// CHECK: llvm.br ^[[LOOP:.*]](%{{.*}}, %[[V]], %{{.*}} : i64, vector<4xi16>, !llvm.array<2 x vector<4xi16>>)
// CHECK: ^[[LOOP]](%{{.*}}: i64, %[[C:.*]]: vector<4xi16>, %[[ACC:.*]]: !llvm.array<2 x vector<4xi16>>):
// CHECK: llvm.insertvalue %[[C]], %[[ACC]][1] : !llvm.array<2 x vector<4xi16>>
// CHECK: %[[OUT:.*]] = llvm.extractvalue %{{.*}}[1] : !llvm.array<2 x vector<4xi16>>
// CHECK: llvm.store %[[OUT]], %{{.*}} : vector<4xi16>, !llvm.ptr
// An op that computes on a bf16 vector takes it through a bitcast back, and
// one that makes one gives it to the moves through a bitcast.
// CHECK-LABEL: llvm.func @computes
// CHECK: %[[BITS:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<4xi16>
// CHECK: %[[V:.*]] = llvm.bitcast %[[BITS]] : vector<4xi16> to vector<4xbf16>
// CHECK: %[[WIDE:.*]] = llvm.fpext %[[V]] : vector<4xbf16> to vector<4xf32>
// CHECK: %[[NARROW:.*]] = llvm.fptrunc %[[WIDE]] : vector<4xf32> to vector<4xbf16>
// CHECK: %[[OUT:.*]] = llvm.bitcast %[[NARROW]] : vector<4xbf16> to vector<4xi16>
// CHECK: llvm.store %[[OUT]], %{{.*}} : vector<4xi16>, !llvm.ptr
// CHECK: llvm.return %[[WIDE]] : vector<4xf32>
// A function where an aggregate of bf16 vectors reaches an op that is not
// a move (no bitcast converts an aggregate) is left as it is.
// CHECK-LABEL: llvm.func @aggregate_result
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> !llvm.array<2 x vector<4xbf16>>
// CHECK: llvm.return %{{.*}} : !llvm.array<2 x vector<4xbf16>>

func.func @rows(%in: memref<2x8xbf16>, %out: memref<2x8xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %pad = arith.constant 0.0 : bf16
  %a = vector.transfer_read %in[%c0, %c0], %pad {in_bounds = [true, true]} : memref<2x8xbf16>, vector<1x8xbf16>
  %b = vector.transfer_read %in[%c1, %c0], %pad {in_bounds = [true, true]} : memref<2x8xbf16>, vector<1x8xbf16>
  %r:2 = scf.for %i = %c0 to %c3 step %c1 iter_args(%x = %a, %y = %b) -> (vector<1x8xbf16>, vector<1x8xbf16>) {
    scf.yield %y, %x : vector<1x8xbf16>, vector<1x8xbf16>
  }
  vector.transfer_write %r#0, %out[%c0, %c0] {in_bounds = [true, true]} : vector<1x8xbf16>, memref<2x8xbf16>
  vector.transfer_write %r#1, %out[%c1, %c0] {in_bounds = [true, true]} : vector<1x8xbf16>, memref<2x8xbf16>
  return
}

memref.global "private" constant @values : memref<2x8xbf16> = dense<[[1.0, 0.5, -2.25, 1.17549435e-38, 65536.0, 0xFF80, 0x0001, 0x7FC0], [-3.5, 0.0078125, 1048576.0, -0.0, 0x7F80, 2.0, 3.0, 4.0]]>

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %in = memref.get_global @values : memref<2x8xbf16>
  %out = memref.alloc() : memref<2x8xbf16>
  %wide = memref.alloc() : memref<2x8xf32>
  call @rows(%in, %out) : (memref<2x8xbf16>, memref<2x8xbf16>) -> ()
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%out : memref<2x8xbf16>) outs(%wide : memref<2x8xf32>) {
  ^bb0(%x: bf16, %w: f32):
    %e = arith.extf %x : bf16 to f32
    linalg.yield %e : f32
  }
  %cast = memref.cast %wide : memref<2x8xf32> to memref<*xf32>
  vector.print str "rows\n"
  call @printMemrefF32(%cast) : (memref<*xf32>) -> ()
  memref.dealloc %out : memref<2x8xbf16>
  memref.dealloc %wide : memref<2x8xf32>
  return
}

// -----

llvm.func @moves(%p: !llvm.ptr, %q: !llvm.ptr, %n: i64) {
  %zero = llvm.mlir.constant(dense<0.0> : vector<2x4xbf16>) : !llvm.array<2 x vector<4xbf16>>
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %v = llvm.load %p : !llvm.ptr -> vector<4xbf16>
  llvm.br ^loop(%c0, %v, %zero : i64, vector<4xbf16>, !llvm.array<2 x vector<4xbf16>>)
^loop(%i: i64, %carried: vector<4xbf16>, %acc: !llvm.array<2 x vector<4xbf16>>):
  %next = llvm.add %i, %c1 : i64
  %row = llvm.insertvalue %carried, %acc[1] : !llvm.array<2 x vector<4xbf16>>
  %more = llvm.icmp "slt" %next, %n : i64
  llvm.cond_br %more, ^loop(%next, %carried, %row : i64, vector<4xbf16>, !llvm.array<2 x vector<4xbf16>>), ^done
^done:
  %out = llvm.extractvalue %row[1] : !llvm.array<2 x vector<4xbf16>>
  llvm.store %out, %q : vector<4xbf16>, !llvm.ptr
  llvm.return
}

llvm.func @computes(%p: !llvm.ptr, %q: !llvm.ptr) -> vector<4xf32> {
  %v = llvm.load %p : !llvm.ptr -> vector<4xbf16>
  %wide = llvm.fpext %v : vector<4xbf16> to vector<4xf32>
  %narrow = llvm.fptrunc %wide : vector<4xf32> to vector<4xbf16>
  llvm.store %narrow, %q : vector<4xbf16>, !llvm.ptr
  llvm.return %wide : vector<4xf32>
}

llvm.func @aggregate_result(%p: !llvm.ptr) -> !llvm.array<2 x vector<4xbf16>> {
  %v = llvm.load %p : !llvm.ptr -> !llvm.array<2 x vector<4xbf16>>
  llvm.return %v : !llvm.array<2 x vector<4xbf16>>
}
