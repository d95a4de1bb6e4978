#ifndef FLASHNORM_DIALECT_FLASHNORM_IR_FLASHNORMDIALECT_H
#define FLASHNORM_DIALECT_FLASHNORM_IR_FLASHNORMDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Dialect.h"

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.h.inc"

#endif
