//===- IndexingMaps.cpp - Indexing maps as importers write them -----------===//

#include "flashnorm/Utils/IndexingMaps.h"

using namespace mlir;

AffineMap flashnorm::withUnitDims(AffineMap map, ArrayRef<int64_t> ranges,
                                  ArrayRef<utils::IteratorType> iters) {
  SmallVector<AffineExpr> results;
  for (auto [j, e] : llvm::enumerate(map.getResults())) {
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (c && c.getValue() == 0 && j < map.getNumDims() && j < ranges.size() &&
        ranges[j] == 1 && j < iters.size() &&
        iters[j] == utils::IteratorType::parallel)
      results.push_back(getAffineDimExpr(j, map.getContext()));
    else
      results.push_back(e);
  }
  return AffineMap::get(map.getNumDims(), map.getNumSymbols(), results,
                        map.getContext());
}

AffineMap flashnorm::getUnitDimsMap(linalg::LinalgOp op, OpOperand *operand) {
  return withUnitDims(op.getMatchingIndexingMap(operand),
                      op.getStaticLoopRanges(), op.getIteratorTypesArray());
}

bool flashnorm::readsInOrder(linalg::LinalgOp op, OpOperand *operand) {
  return getUnitDimsMap(op, operand).isIdentity();
}
