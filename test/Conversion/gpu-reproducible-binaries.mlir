// gpu-module-to-binary records how long each kernel took to compile in its
// #gpu.object's properties, the only part of the GPU pipeline's output
// that differed between two runs on one input. flashnorm-gpu-reproducible-
// binaries drops them (every property named *TimeInMs) and keeps the rest.
// RUN: flashnorm-opt %s --flashnorm-gpu-reproducible-binaries | FileCheck %s
// The pipeline's output is the same, byte for byte, on two runs.
// RUN: %python %S/Inputs/many-callees.py 4 > %t.mlir
// RUN: flashnorm-opt %t.mlir --flashnorm-gpu-pipeline=format=isa -o %t.1.mlir
// RUN: flashnorm-opt %t.mlir --flashnorm-gpu-pipeline=format=isa -o %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir
// RUN: FileCheck %s --check-prefix=PIPELINE < %t.1.mlir

// CHECK-LABEL: gpu.binary @timed
// CHECK-SAME: #gpu.object<#nvvm.target, properties = {O = 3 : i32}, assembly = "ptx">
// CHECK-SAME: #gpu.object<#nvvm.target<chip = "sm_90">, bin = "cubin">
// CHECK-LABEL: gpu.binary @untimed
// CHECK-SAME: #gpu.object<#nvvm.target, properties = {O = 2 : i32}, assembly = "ptx">
// CHECK-NOT: TimeInMs
gpu.binary @timed [
  #gpu.object<#nvvm.target, properties = {LLVMIRToISATimeInMs = 107 : i64, O = 3 : i32}, assembly = "ptx">,
  #gpu.object<#nvvm.target<chip = "sm_90">, properties = {ISAToBinaryTimeInMs = 12 : i64, LLVMIRToISATimeInMs = 98 : i64}, bin = "cubin">
]
gpu.binary @untimed [
  #gpu.object<#nvvm.target, properties = {O = 2 : i32}, assembly = "ptx">
]

// PIPELINE: gpu.binary @double0_kernels
// PIPELINE-SAME: properties = {O = 3 : i32}
// PIPELINE-NOT: TimeInMs
