//===- IndexingMaps.h - Indexing maps as importers write them ---*- C++ -*-===//
//
// torch-mlir writes a batch-1 tensor's maps with a literal 0 for the unit
// batch dimension (`(d0, d1, d2) -> (0, d1, d2)` over a [1, rows, K]
// space), where upstream would write d0. Both read index 0 there, so it is
// the same access; the passes compare maps after writing such a 0 back as
// the loop's dimension, so that an element-wise op torch-mlir lowered reads
// its operands "in order" as one that linalg's own builders made does.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_UTILS_INDEXINGMAPS_H
#define FLASHNORM_UTILS_INDEXINGMAPS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::flashnorm {

/// `map` with each literal 0 result at position j replaced by d_j where
/// parallel loop j runs over one element. A reduced loop keeps its 0: a
/// reduction's result does not index it (K = 1 included).
AffineMap withUnitDims(AffineMap map, ArrayRef<int64_t> ranges,
                       ArrayRef<utils::IteratorType> iters);

/// `op`'s map of `operand`, its unit dimensions' literal 0s written as
/// their loops' dimensions (withUnitDims over `op`'s static loop ranges).
AffineMap getUnitDimsMap(linalg::LinalgOp op, OpOperand *operand);

/// Whether `op` reads `operand` element for element along its iteration
/// space (an identity map, up to unit dimensions).
bool readsInOrder(linalg::LinalgOp op, OpOperand *operand);

} // namespace mlir::flashnorm

#endif
