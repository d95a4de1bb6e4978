//===- CpuCopies.h - Operands a CPU kernel reads from copies ----*- C++ -*-===//
//-*-===//
//
// flashnorm-cpu-codegen gives a projection copies of its operands where
// reading them in place costs more than the copy: a block of a K x N
// weight in a contiguous buffer (its rows a power of two apart share cache
// sets and pages), bf16/f16 inputs widened to the f32 accumulator once
// (rather than at every k of every tile). The op then reads the copy, and
// its body, which only widened such an input, reads it as it is.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_LIB_CONVERSION_CPUCOPIES_H
#define FLASHNORM_LIB_CONVERSION_CPUCOPIES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::flashnorm {

/// Whether every narrow float input of `op` (narrower than its output) is
/// only widened, to the output's type, by its body: then the op may read
/// widened copies instead. False where no input is narrow.
bool narrowInputsWiden(linalg::LinalgOp op);

/// The op's body reads operand `input` as `wide` (from a narrow float of
/// which it was only widened, narrowInputsWiden): the block argument takes
/// the wide type and its widenings fold away.
void readWidened(RewriterBase &rewriter, linalg::GenericOp op, OpOperand &input,
                 Type wide);

/// `dst` = `src` widened to `dst`'s element type (a copy where they are the
/// same), as a linalg op on buffers, or on tensors (its result).
linalg::LinalgOp copyWidened(OpBuilder &b, Location loc, Value src, Value dst);

} // namespace mlir::flashnorm

#endif // FLASHNORM_LIB_CONVERSION_CPUCOPIES_H
