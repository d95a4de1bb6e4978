//===- PrepareFunction.cpp - Argument weights folded once -----------------===//
//
// See PrepareFunction.h.
//
//===----------------------------------------------------------------------===//

#include "PrepareFunction.h"

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// The type a fold computes in: f32, f64 for f64 weights.
Type foldType(OpBuilder &b, Type weightElt) {
  return weightElt.isF64() ? b.getF64Type() : b.getF32Type();
}

/// Builds `out = W * G` along `axis` (and, with `center`, minus the mean
/// over `axis`) in f32 (f64 for f64 weights), rounded once to W's element
/// type.
Value buildArgFold(OpBuilder &b, Location loc, Value w, Value g, int64_t axis,
                   bool onePlus, bool center) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(w.getType());
  unsigned rank = type.getRank();
  Type elt = type.getElementType(), wide = foldType(b, elt);
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap alongAxis = AffineMap::get(rank, 0, getAffineDimExpr(axis, ctx));
  SmallVector<utils::IteratorType> par(rank, utils::IteratorType::parallel);
  auto cast = [](OpBuilder &nb, Location l, Value v, Type to) -> Value {
    if (v.getType() == to)
      return v;
    if (v.getType().getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(nb, l, to, v);
    return arith::TruncFOp::create(nb, l, to, v);
  };
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, w);
  // Without centering the product is rounded right away.
  Type scaledElt = center ? wide : elt;
  Value scaled =
      linalg::GenericOp::create(
          b, loc, TypeRange{type.clone(scaledElt)}, ValueRange{w, g},
          ValueRange{Value(tensor::EmptyOp::create(b, loc, sizes, scaledElt))},
          ArrayRef<AffineMap>{id, alongAxis, id}, par,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value gv = cast(nb, l, args[1], wide);
            if (onePlus)
              gv = arith::AddFOp::create(
                  nb, l, gv,
                  arith::ConstantOp::create(nb, l, nb.getFloatAttr(wide, 1.0)));
            Value r =
                arith::MulFOp::create(nb, l, cast(nb, l, args[0], wide), gv);
            linalg::YieldOp::create(nb, l, cast(nb, l, r, scaledElt));
          })
          .getResult(0);
  if (!center)
    return scaled;
  Value mean;
  AffineMap withoutAxis = id.dropResult(axis);
  {
    SmallVector<OpFoldResult> rest(sizes);
    rest.erase(rest.begin() + axis);
    Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(wide, 0.0));
    Value empty = tensor::EmptyOp::create(b, loc, rest, wide);
    Value acc = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
    SmallVector<utils::IteratorType> iters(par);
    iters[axis] = utils::IteratorType::reduction;
    double inv = 1.0 / type.getDimSize(axis);
    mean =
        linalg::GenericOp::create(
            b, loc, TypeRange{acc.getType()}, ValueRange{scaled},
            ValueRange{acc}, ArrayRef<AffineMap>{id, withoutAxis}, iters,
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Value part = arith::MulFOp::create(
                  nb, l, args[0],
                  arith::ConstantOp::create(nb, l, nb.getFloatAttr(wide, inv)));
              linalg::YieldOp::create(
                  nb, l, Value(arith::AddFOp::create(nb, l, args[1], part)));
            })
            .getResult(0);
  }
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{scaled, mean},
             ValueRange{Value(tensor::EmptyOp::create(b, loc, sizes, elt))},
             ArrayRef<AffineMap>{id, withoutAxis, id}, par,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value v = arith::SubFOp::create(nb, l, args[0], args[1]);
               linalg::YieldOp::create(nb, l, cast(nb, l, v, elt));
             })
      .getResult(0);
}

} // namespace

std::string flashnorm::whyNoPrepareFunction(ModuleOp module, func::FuncOp fn) {
  std::string name = (fn.getName() + "_flashnorm_prepare").str();
  if (SymbolTable::lookupSymbolIn(module, name))
    return "the module already has a symbol @" + name;
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(fn, module);
  if (!uses)
    return "the module holds operations that may hide uses of @" +
           fn.getName().str();
  for (const SymbolTable::SymbolUse &use : *uses)
    if (!isa<func::CallOp>(use.getUser()))
      return "'" + use.getUser()->getName().getStringRef().str() + "' uses @" +
             fn.getName().str() +
             " other than by a call, with unprepared weights";
  return "";
}

void flashnorm::createPrepareFunction(ModuleOp module, func::FuncOp fn,
                                      SmallVector<ArgFold> folds) {
  llvm::sort(folds, [](const ArgFold &a, const ArgFold &b) {
    return a.weightArg < b.weightArg;
  });
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(fn);
  Location loc = fn.getLoc();
  SmallVector<Type> results;
  for (const ArgFold &f : folds)
    results.push_back(fn.getArgumentTypes()[f.weightArg]);
  std::string name = (fn.getName() + "_flashnorm_prepare").str();
  auto prepare = func::FuncOp::create(
      b, loc, name, FunctionType::get(ctx, fn.getArgumentTypes(), results));
  prepare.setVisibility(fn.getVisibility());
  SymbolTable(module).insert(prepare);
  Block *entry = prepare.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> folded;
  for (const ArgFold &f : folds) {
    Value g;
    if (f.gainArg) {
      g = entry->getArgument(*f.gainArg);
      if (cast<RankedTensorType>(g.getType()).getRank() != 1) {
        SmallVector<ReassociationIndices> all(1);
        for (int64_t i = 0; i < cast<RankedTensorType>(g.getType()).getRank();
             ++i)
          all[0].push_back(i);
        g = tensor::CollapseShapeOp::create(b, loc, g, all);
      }
    } else {
      // The plan's values (a LayerNorm without gain: center only, by 1).
      auto wType = cast<RankedTensorType>(fn.getArgumentTypes()[f.weightArg]);
      Type wide = foldType(b, wType.getElementType());
      int64_t k = wType.getDimSize(f.axis);
      SmallVector<Attribute> values;
      for (int64_t i = 0; i < k; ++i)
        values.push_back(
            b.getFloatAttr(wide, f.gainValues.empty() ? 1.0 : f.gainValues[i]));
      g = arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(RankedTensorType::get({k}, wide), values));
    }
    folded.push_back(buildArgFold(b, loc, entry->getArgument(f.weightArg), g,
                                  f.axis, f.gainArg && f.onePlus, f.center));
    fn.setArgAttr(f.weightArg, kFoldedArgAttr, UnitAttr::get(ctx));
  }
  func::ReturnOp::create(b, loc, folded);

  // Callers in this module (whyNoPrepareFunction: calls are its only
  // uses): prepare first, then call with folded weights.
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(fn, module);
  SmallVector<func::CallOp> calls;
  if (uses)
    for (const SymbolTable::SymbolUse &use : *uses)
      calls.push_back(cast<func::CallOp>(use.getUser()));
  for (func::CallOp call : calls) {
    OpBuilder cb(call);
    auto prepared =
        func::CallOp::create(cb, call.getLoc(), prepare, call.getOperands());
    for (auto [i, f] : llvm::enumerate(folds))
      call->setOperand(f.weightArg, prepared.getResult(i));
  }
}
