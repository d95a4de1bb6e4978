//===- ExpandDynamicReshapes.cpp - Dynamic expand_shape as a reinterpret --===//
//
// Upstream's expand-strided-metadata (MLIR 22) derives the sizes of a
// `memref.expand_shape` from its source's: each dynamic size of a group is
// the source size divided by the group's static sizes. A group with two
// dynamic sizes has no such quotient, and the pattern crashes (an
// IntegerAttr read from a value that is not one) on a form every importer
// writes: `aten.view` of [B*T, N] back to [B, T, N] around a projection,
// batch and tokens known only at run time. This pass gives those ops the
// metadata they state themselves: the sizes of `output_shape`, each stride
// the next inner one times its size, the innermost of a group the stride of
// the source dimension it expands (whatever the source's layout), and the
// source's offset, as a `memref.reinterpret_cast` of the source's base,
// which expand-strided-metadata then takes as it is. Only those ops change.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_EXPANDDYNAMICRESHAPES
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// Whether a group of `op` has more than one dynamic size.
bool hasAmbiguousGroup(memref::ExpandShapeOp op) {
  ArrayRef<int64_t> shape = op.getResultType().getShape();
  return llvm::any_of(op.getReassociationIndices(),
                      [&](const ReassociationIndices &group) {
                        return llvm::count_if(group, [&](int64_t d) {
                                 return ShapedType::isDynamic(shape[d]);
                               }) > 1;
                      });
}

/// `a * b`, folded where both are constants.
OpFoldResult multiply(OpBuilder &b, Location loc, OpFoldResult x,
                      OpFoldResult y) {
  std::optional<int64_t> cx = getConstantIntValue(x),
                         cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(*cx * *cy);
  if ((cx && *cx == 1) || (cy && *cy == 1))
    return cx ? y : x;
  return arith::MulIOp::create(b, loc,
                               getValueOrCreateConstantIndexOp(b, loc, x),
                               getValueOrCreateConstantIndexOp(b, loc, y))
      .getResult();
}

void rewrite(memref::ExpandShapeOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  MemRefType type = op.getResultType();
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, op.getSrc());
  // The source's strides, static where its type says so.
  auto [sourceStrides, sourceOffset] = op.getSrcType().getStridesAndOffset();
  SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
  SmallVector<OpFoldResult> strides(type.getRank());
  for (auto [source, group] : llvm::enumerate(op.getReassociationIndices())) {
    OpFoldResult stride =
        ShapedType::isDynamic(sourceStrides[source])
            ? OpFoldResult(metadata.getStrides()[source])
            : OpFoldResult(b.getIndexAttr(sourceStrides[source]));
    for (auto [i, d] : llvm::enumerate(llvm::reverse(group))) {
      strides[d] = stride;
      if (i + 1 < group.size())
        stride = multiply(b, loc, stride, sizes[d]);
    }
  }
  // What the result type states statically is what it is (the verifier
  // compares the two).
  auto [staticStrides, staticOffset] = type.getStridesAndOffset();
  for (auto [d, size] : llvm::enumerate(type.getShape())) {
    if (!ShapedType::isDynamic(size))
      sizes[d] = b.getIndexAttr(size);
    if (!ShapedType::isDynamic(staticStrides[d]))
      strides[d] = b.getIndexAttr(staticStrides[d]);
  }
  OpFoldResult offset = ShapedType::isDynamic(staticOffset)
                            ? getAsOpFoldResult(metadata.getOffset())
                            : OpFoldResult(b.getIndexAttr(staticOffset));
  auto cast = memref::ReinterpretCastOp::create(
      b, loc, type, metadata.getBaseBuffer(), offset, sizes, strides);
  op.getResult().replaceAllUsesWith(cast.getResult());
  op.erase();
}

struct ExpandDynamicReshapesPass
    : flashnorm::impl::ExpandDynamicReshapesBase<ExpandDynamicReshapesPass> {
  void runOnOperation() override {
    SmallVector<memref::ExpandShapeOp> ops;
    getOperation()->walk([&](memref::ExpandShapeOp op) {
      if (hasAmbiguousGroup(op))
        ops.push_back(op);
    });
    for (memref::ExpandShapeOp op : ops)
      rewrite(op);
  }
};
} // namespace
