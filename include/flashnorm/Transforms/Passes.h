//===- Passes.h - The flashnorm rewrite passes ------------------*- C++ -*-===//
//
// The passes on tensors (raise, fold-gains, defer-scale, move-scale,
// drop-redundant), declared from Passes.td. Each rewrites only what it
// matched, reports every rewrite and refusal as a remark, and leaves a
// module with nothing to rewrite as it was.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_TRANSFORMS_PASSES_H
#define FLASHNORM_TRANSFORMS_PASSES_H

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::flashnorm {

#define GEN_PASS_DECL
#include "flashnorm/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flashnorm/Transforms/Passes.h.inc"

} // namespace mlir::flashnorm

#endif
