//===- RowViews.cpp - Views that keep a norm's rows whole -----------------===//
//
// The views a norm's result may pass through on the way to its projections
// that regroup or select whole rows and keep the feature dimension as it
// is (reshapes, last-token slices): a per-feature gain commutes with them,
// and a per-row statistic of their result is that of their rows, so
// fold-gains and defer-scale look through them (Projection.h).
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Analysis/Projection.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::flashnorm;

/// Whether `slice` takes whole rows: all of the last dimension (offset 0,
/// stride 1), which it keeps as its own last.
static bool isRowSlice(tensor::ExtractSliceOp slice) {
  RankedTensorType in = slice.getSourceType();
  int64_t last = in.getRank() - 1;
  if (last < 0 || ShapedType::isDynamic(in.getDimSize(last)) ||
      slice.getDroppedDims().test(last))
    return false;
  std::optional<int64_t> offset =
      getConstantIntValue(slice.getMixedOffsets()[last]);
  std::optional<int64_t> size =
      getConstantIntValue(slice.getMixedSizes()[last]);
  std::optional<int64_t> stride =
      getConstantIntValue(slice.getMixedStrides()[last]);
  return offset == 0 && stride == 1 && size == in.getDimSize(last);
}

/// The same for TOSA's slice (start and size as `tosa.const_shape`s).
static bool isRowSlice(tosa::SliceOp slice) {
  auto in = dyn_cast<RankedTensorType>(slice.getInput1().getType());
  auto start = slice.getStart().getDefiningOp<tosa::ConstShapeOp>();
  auto size = slice.getSize().getDefiningOp<tosa::ConstShapeOp>();
  if (!in || in.getRank() == 0 || !start || !size ||
      ShapedType::isDynamic(in.getShape().back()))
    return false;
  auto starts = start.getValues().getValues<APInt>();
  auto sizes = size.getValues().getValues<APInt>();
  if (starts.size() != size_t(in.getRank()) || sizes.size() != starts.size())
    return false;
  return starts[in.getRank() - 1].isZero() &&
         sizes[in.getRank() - 1].getSExtValue() == in.getShape().back();
}

bool flashnorm::isRowRegrouping(Operation *op) {
  // HF's last-token logits (`hidden[:, -1:, :]` before lm_head).
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    return isRowSlice(slice);
  if (auto slice = dyn_cast<tosa::SliceOp>(op))
    return isRowSlice(slice);
  if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tosa::ReshapeOp>(op))
    return false;
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!in || !out || in.getRank() == 0 || out.getRank() == 0 ||
      ShapedType::isDynamic(in.getShape().back()) ||
      in.getShape().back() != out.getShape().back())
    return false;
  // The last dimension must map to itself, not be split or merged.
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return expand.getReassociationIndices().back().size() == 1;
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return collapse.getReassociationIndices().back().size() == 1;
  return true; // Row-major reshape with an equal last dimension.
}

SmallVector<OpOperand *> flashnorm::getUsesThroughRowRegrouping(Value v) {
  SmallVector<OpOperand *> uses;
  SmallVector<Value> worklist{v};
  while (!worklist.empty()) {
    Value cur = worklist.pop_back_val();
    for (OpOperand &use : cur.getUses()) {
      // Reads the shape alone, which every rewrite of the norm keeps.
      if (isa<tensor::DimOp>(use.getOwner()))
        continue;
      if (use.getOperandNumber() == 0 && isRowRegrouping(use.getOwner()))
        worklist.push_back(use.getOwner()->getResult(0));
      else
        uses.push_back(&use);
    }
  }
  return uses;
}
