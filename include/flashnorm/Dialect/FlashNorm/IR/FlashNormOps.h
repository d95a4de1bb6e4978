//===- FlashNormOps.h - The flashnorm ops -----------------------*- C++ -*-===//
//
// The ops of FlashNormOps.td: the two norms, their statistics, the
// post-scale, and the GPU lowering's gemm_lt, resident and check_alignment.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_DIALECT_FLASHNORM_IR_FLASHNORMOPS_H
#define FLASHNORM_DIALECT_FLASHNORM_IR_FLASHNORMOPS_H

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h.inc"

#endif
