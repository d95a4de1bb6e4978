//===- FoldGainsCheckpoint.cpp - Folds recorded for a checkpoint ---------===//
//
// FoldGainsCheckpoint.h states the design.
//
//===----------------------------------------------------------------------===//

#include "FoldGainsCheckpoint.h"

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Transforms/ProjectionRewrites.h"
#include "flashnorm/Utils/Remarks.h"
#include "flashnorm/Utils/Safetensors.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"

using namespace mlir;
using namespace mlir::flashnorm;

FailureOr<PlanVector>
flashnorm::matchCheckpointVector(Value v, ml_program::GlobalOp &global) {
  PlanVector vec;
  auto uniform = [](Value c) -> std::optional<double> {
    FailureOr<SmallVector<double>> values = readConstantAsDoubles(c, nullptr);
    if (failed(values) || values->empty() ||
        llvm::any_of(*values, [&](double x) { return x != values->front(); }))
      return std::nullopt;
    return values->front();
  };
  while (Operation *def = v.getDefiningOp()) {
    if ((global = getLoadedGlobal(def))) {
      if (!isExternGlobal(global))
        return failure();
      vec.tensor = global.getSymName().str();
      return vec;
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tosa::ReshapeOp,
            arith::ExtFOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    if (!isa<arith::MulFOp, arith::AddFOp>(def))
      return failure();
    // G = scale * X + offset, with X = c * Y or X = Y + c.
    std::optional<double> c = uniform(def->getOperand(1));
    Value next = def->getOperand(0);
    if (!c) {
      c = uniform(def->getOperand(0));
      next = def->getOperand(1);
    }
    if (!c)
      return failure();
    if (isa<arith::MulFOp>(def))
      vec.scale *= *c;
    else
      vec.offset += vec.scale * *c;
    v = next;
  }
  return failure();
}

/// The safetensors dtype of an element type ("BF16"), or "".
static std::string getDType(Type elementType) {
  return safetensors::getDTypeForElementName(printToString(elementType));
}

/// A plan vector of literal values.
static PlanVector literal(ArrayRef<double> values) {
  PlanVector vec;
  vec.values.assign(values.begin(), values.end());
  return vec;
}

void CheckpointRecorder::record(RewriterBase &rewriter, const FoldTarget &t,
                                const CheckpointNormFold &fold) {
  ml_program::GlobalOp source = t.source.global;
  auto type = cast<RankedTensorType>(source.getType());
  double c = t.logit ? t.logit->factor : 1.0;
  auto times = [c](PlanVector v) {
    v.scale *= c;
    v.offset *= c;
    for (double &x : v.values)
      x *= c;
    return v;
  };
  PlanTensor entry;
  entry.source = source.getSymName().str();
  entry.sourceDType = getDType(type.getElementType());
  entry.sourceShape.assign(type.getShape().begin(), type.getShape().end());
  entry.axis = t.source.axis;
  MLIRContext *ctx = rewriter.getContext();
  if (fold.biasRef || !fold.bias.empty()) {
    auto result =
        cast<RankedTensorType>(t.projection.op->getResult(0).getType());
    auto biasType = RankedTensorType::get({result.getShape().back()},
                                          result.getElementType());
    auto load =
        createGlobalBeside(rewriter, t.source, ".flashnorm_bias", biasType,
                           ml_program::ExternAttr::get(ctx, biasType));
    PlanTensor contract = entry;
    contract.op = PlanTensor::Op::Contract;
    contract.name = load.getGlobal().getLeafReference().str();
    contract.dtype = getDType(result.getElementType());
    contract.shape = {result.getShape().back()};
    contract.vector = times(fold.biasRef ? *fold.biasRef : literal(fold.bias));
    plan.tensors.push_back(std::move(contract));
    addOutputBias(rewriter, t.projection.op, load.getResult());
  }
  PlanVector folded = times(fold.gainRef ? *fold.gainRef : literal(fold.gain));
  // Without a scale entry the weight stays as stored: its own sums.
  if (fold.columnSums)
    recordColumnSums(rewriter, t, entry,
                     fold.scale ? folded
                                : literal(SmallVector<double>(
                                      type.getDimSize(t.source.axis), 1.0)),
                     *fold.columnSums);
  if (!fold.scale)
    return;
  auto load = createGlobalBeside(rewriter, t.source, ".flashnorm", type,
                                 ml_program::ExternAttr::get(ctx, type));
  entry.op = PlanTensor::Op::Scale;
  entry.name = load.getGlobal().getLeafReference().str();
  entry.dtype = entry.sourceDType;
  entry.shape = entry.sourceShape;
  entry.center = fold.center;
  entry.vector = folded;
  plan.tensors.push_back(std::move(entry));
  replacedGlobals.insert(source);
  replaceWeight(rewriter, t.projection, t.source, load.getResult());
}

/// Records the column sums of `source` folded with `vector` (what the plan's
/// scale writes, or the weight itself) as a new extern global of `type`
/// elements, one per output, and names it on the projection (defer-scale
/// loads it where its post-scale needs it). Nothing where the sums would
/// not be one per output in order (columnSumsFollowOutputs): defer-scale
/// then leaves the norm, and says why.
void CheckpointRecorder::recordColumnSums(RewriterBase &rewriter,
                                          const FoldTarget &t,
                                          const PlanTensor &source,
                                          PlanVector vector, Type type) {
  if (!columnSumsFollowOutputs(t.projection, source.sourceShape, source.axis))
    return;
  int64_t n = cast<ShapedType>(t.projection.op->getResult(0).getType())
                  .getShape()
                  .back();
  auto sumsType = RankedTensorType::get({n}, type);
  MLIRContext *ctx = rewriter.getContext();
  auto load =
      createGlobalBeside(rewriter, t.source, ".flashnorm_colsum", sumsType,
                         ml_program::ExternAttr::get(ctx, sumsType));
  PlanTensor sums = source;
  sums.op = PlanTensor::Op::ColumnSums;
  sums.name = load.getGlobal().getLeafReference().str();
  sums.dtype = getDType(type);
  sums.shape = {n};
  sums.vector = std::move(vector);
  plan.tensors.push_back(std::move(sums));
  SymbolRefAttr global = load.getGlobal();
  rewriter.eraseOp(load);
  rewriter.modifyOpInPlace(t.projection.op, [&] {
    t.projection.op->setAttr(kColumnSumsAttr, global);
  });
}
