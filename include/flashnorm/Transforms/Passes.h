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
