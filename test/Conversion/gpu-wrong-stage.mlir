// GPU passes given IR of another stage than theirs: an error, or nothing
// to do, never a crash. Each crashed before: flashnorm-gpu-kernels planned
// tensor-core kernels on tensors (a null memref type), flashnorm-gpu-streams
// issued its own output again, and the CPU emulation of kernels replaced a
// launch whose token the streams still read.
// RUN: not flashnorm-opt %S/../Integration/Inputs/bf16-decode-fused.mlir --flashnorm-gpu-kernels 2>&1 | FileCheck %s --check-prefix=TENSORS
// RUN: flashnorm-opt %S/../Integration/Inputs/barrier-nested.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-to-streams -o %t.streams.mlir
// RUN: flashnorm-opt %t.streams.mlir --flashnorm-gpu-streams -o %t.twice.mlir
// RUN: flashnorm-opt %t.streams.mlir -o %t.once.mlir
// RUN: diff %t.once.mlir %t.twice.mlir
// RUN: not flashnorm-opt %t.streams.mlir --flashnorm-test-gpu-launch-to-loops 2>&1 | FileCheck %s --check-prefix=LOOPS

// TENSORS-NOT: PLEASE submit
// TENSORS: error: flashnorm-gpu-kernels: linalg on tensors; kernels are built from linalg on buffers (bufferize first, as flashnorm-gpu-pipeline does)
// LOOPS-NOT: PLEASE submit
// LOOPS: error: runs kernels before flashnorm-gpu-streams: a launch without async tokens
