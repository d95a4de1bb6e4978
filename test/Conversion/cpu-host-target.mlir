// flashnorm-cpu-host-target: the module says which machine its kernels
// were sized for. The triple is this process's; each defined function gets
// this CPU's name and features; a declaration gets none, and what a module
// already says is kept.
// RUN: flashnorm-opt %s --flashnorm-cpu-host-target | FileCheck %s
// The last pass of flashnorm-cpu-pipeline unless host-target=false.
// RUN: flashnorm-opt %S/../../examples/llama-block.mlir --flashnorm-cpu-pipeline | FileCheck %s --check-prefix=PIPE
// RUN: flashnorm-opt %S/../../examples/llama-block.mlir --flashnorm-cpu-pipeline=host-target=false | FileCheck %s --check-prefix=GENERIC

// CHECK: module attributes {llvm.target_triple = "{{[^"]+}}"}
// CHECK-LABEL: llvm.func @kernel(
// CHECK-SAME: target_cpu = "{{[^"]+}}"
// CHECK-SAME: target_features = #llvm.target_features<[{{"[+-].*"}}]>
// CHECK-LABEL: llvm.func @tuned(
// CHECK-SAME: target_cpu = "x86-64-v3"
// CHECK-SAME: target_features = #llvm.target_features<["+avx2"]>
// CHECK: llvm.func @helper(f32) -> f32
// CHECK-NOT: target_cpu
module {
  llvm.func @kernel(%x: f32) -> f32 {
    %y = llvm.call @helper(%x) : (f32) -> f32
    llvm.return %y : f32
  }
  llvm.func @tuned(%x: f32) -> f32 attributes {target_cpu = "x86-64-v3", target_features = #llvm.target_features<["+avx2"]>} {
    llvm.return %x : f32
  }
  llvm.func @helper(f32) -> f32
}

// PIPE: module attributes {{{.*}}llvm.target_triple = "{{.+}}"
// PIPE: llvm.func @block({{.*}}target_cpu = "{{[^"]+}}", target_features = #llvm.target_features<
// GENERIC-NOT: llvm.target_triple
// GENERIC-NOT: target_cpu
