//===- CpuCopies.h - Operands a CPU kernel reads from copies ----*- C++ -*-===//
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
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

/// Where the copies of a weight's blocks go. Where the blocks are split
/// over the cores (by the pass's chunks or by the program's own parallel
/// loop), each iteration allocates its buffer once, on the heap: the
/// iterations' buffers on one stack would grow with the cores, and one
/// buffer for all would be a race. Elsewhere the buffer is on the stack,
/// allocated once at the start of the function or async task that runs the
/// loops (never in a loop, where each iteration would take more stack), and
/// the copies of one function or task share it (they are used one after
/// another).
class BlockBuffers {
public:
  /// A buffer of `type` for the copies made inside the loops `blocks`,
  /// whose iterations `chunks` (if not null) splits over the cores. Leaves
  /// the insertion point unspecified.
  Value get(RewriterBase &rewriter, Location loc, MemRefType type,
            Operation *blocks, scf::ForallOp chunks);

  /// Forgets the stack buffers (a new function).
  void clear() { stack.clear(); }

private:
  /// The bytes on the stack of `home` (a function's body or an async
  /// task's), grown to hold `type`.
  Value stackBytes(RewriterBase &rewriter, Region *home, MemRefType type);

  DenseMap<Region *, memref::AllocaOp> stack;
};

} // namespace mlir::flashnorm

#endif // FLASHNORM_LIB_CONVERSION_CPUCOPIES_H
