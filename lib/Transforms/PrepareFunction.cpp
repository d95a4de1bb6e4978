//===- PrepareFunction.cpp - Argument weights folded once -----------------===//
//
// See PrepareFunction.h.
//
//===----------------------------------------------------------------------===//

#include "PrepareFunction.h"

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Transforms/ProjectionRewrites.h"

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

/// `v` converted to the float type `to` (extended or rounded).
Value convertFloat(OpBuilder &b, Location loc, Value v, Type to) {
  if (v.getType() == to)
    return v;
  if (v.getType().getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

/// `v` (any rank, its elements along one dimension) as a rank-1 tensor.
Value collapseToVector(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() == 1)
    return v;
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < type.getRank(); ++i)
    all[0].push_back(i);
  return tensor::CollapseShapeOp::create(b, loc, v, all);
}

/// `scale sum_k v[k] W[.., k, ..]` along `axis` (`v` null: ones, the
/// column sums), summed in f32 (f64 for f64 weights) and rounded once to
/// the element type of `resultType`, a rank-1 tensor of W's other elements
/// (one dimension of them is not a unit: fold-gains checked it).
Value buildArgContraction(OpBuilder &b, Location loc, Value w, Value v,
                          int64_t axis, RankedTensorType resultType,
                          double scale = 1.0) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(w.getType());
  unsigned rank = type.getRank();
  Type wide = foldType(b, type.getElementType());
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  SmallVector<OpFoldResult> rest = tensor::getMixedSizes(b, loc, w);
  rest.erase(rest.begin() + axis);
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(wide, 0.0));
  Value empty = tensor::EmptyOp::create(b, loc, rest, wide);
  Value acc = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters[axis] = utils::IteratorType::reduction;
  SmallVector<Value> ins{w};
  SmallVector<AffineMap> maps{id};
  if (v) {
    ins.push_back(v);
    maps.push_back(AffineMap::get(rank, 0, getAffineDimExpr(axis, ctx)));
  }
  maps.push_back(id.dropResult(axis));
  Value sums =
      linalg::GenericOp::create(
          b, loc, TypeRange{acc.getType()}, ins, ValueRange{acc}, maps, iters,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value term = convertFloat(nb, l, args[0], wide);
            if (v)
              term = arith::MulFOp::create(nb, l, term,
                                           convertFloat(nb, l, args[1], wide));
            if (scale != 1.0)
              term = arith::MulFOp::create(
                  nb, l, term,
                  arith::ConstantOp::create(nb, l,
                                            nb.getFloatAttr(wide, scale)));
            linalg::YieldOp::create(
                nb, l, Value(arith::AddFOp::create(nb, l, args.back(), term)));
          })
          .getResult(0);
  sums = collapseToVector(b, loc, sums);
  Type elt = resultType.getElementType();
  if (elt == wide)
    return sums;
  AffineMap id1 = AffineMap::getMultiDimIdentityMap(1, ctx);
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, ValueRange{sums},
             ValueRange{Value(
                 tensor::EmptyOp::create(b, loc, resultType.getShape(), elt))},
             ArrayRef<AffineMap>{id1, id1},
             ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l,
                                       convertFloat(nb, l, args[0], elt));
             })
      .getResult(0);
}

/// A gain or bias vector of `wType`'s `axis`: the function's argument
/// `arg` as a rank-1 tensor, or the plan's values (ones where there are
/// none) times `scale`, formed in f64, as a constant in the fold's type.
Value buildFoldVector(OpBuilder &b, Location loc, Block *entry,
                      std::optional<unsigned> arg, ArrayRef<double> values,
                      RankedTensorType wType, int64_t axis,
                      double scale = 1.0) {
  if (arg)
    return collapseToVector(b, loc, entry->getArgument(*arg));
  Type wide = foldType(b, wType.getElementType());
  int64_t k = wType.getDimSize(axis);
  SmallVector<Attribute> attrs;
  for (int64_t i = 0; i < k; ++i)
    attrs.push_back(
        b.getFloatAttr(wide, (values.empty() ? 1.0 : values[i]) * scale));
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(RankedTensorType::get({k}, wide), attrs));
}

/// Builds `out = W * G * scale` along `axis` (and, with `center`, minus
/// the mean over `axis`) in f32 (f64 for f64 weights), rounded once to W's
/// element type.
Value buildArgFold(OpBuilder &b, Location loc, Value w, Value g, int64_t axis,
                   bool onePlus, bool center, double scale) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(w.getType());
  unsigned rank = type.getRank();
  Type elt = type.getElementType(), wide = foldType(b, elt);
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap alongAxis = AffineMap::get(rank, 0, getAffineDimExpr(axis, ctx));
  SmallVector<utils::IteratorType> par(rank, utils::IteratorType::parallel);
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, w);
  // Without centering the product is rounded right away.
  Type scaledElt = center ? wide : elt;
  Value scaled =
      linalg::GenericOp::create(
          b, loc, TypeRange{type.clone(scaledElt)}, ValueRange{w, g},
          ValueRange{Value(tensor::EmptyOp::create(b, loc, sizes, scaledElt))},
          ArrayRef<AffineMap>{id, alongAxis, id}, par,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value gv = convertFloat(nb, l, args[1], wide);
            if (onePlus)
              gv = arith::AddFOp::create(
                  nb, l, gv,
                  arith::ConstantOp::create(nb, l, nb.getFloatAttr(wide, 1.0)));
            if (scale != 1.0)
              gv = arith::MulFOp::create(
                  nb, l, gv,
                  arith::ConstantOp::create(nb, l,
                                            nb.getFloatAttr(wide, scale)));
            Value r = arith::MulFOp::create(
                nb, l, convertFloat(nb, l, args[0], wide), gv);
            linalg::YieldOp::create(nb, l, convertFloat(nb, l, r, scaledElt));
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
               linalg::YieldOp::create(nb, l, convertFloat(nb, l, v, elt));
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

/// Appends an argument of `type` to `fn` for the prepare function to fill
/// (marked `flashnorm.folded`), and returns it.
static BlockArgument appendPreparedArgument(func::FuncOp fn, Type type) {
  unsigned index = fn.getNumArguments();
  MLIRContext *ctx = fn.getContext();
  // (func.func takes any argument types: this cannot fail.)
  (void)fn.insertArgument(
      index, type,
      DictionaryAttr::get(ctx,
                          {NamedAttribute(kFoldedArgAttr, UnitAttr::get(ctx))}),
      fn.getLoc());
  return fn.getArgument(index);
}

void flashnorm::appendDerivedArguments(RewriterBase &rewriter, func::FuncOp fn,
                                       MutableArrayRef<ArgFold> folds,
                                       ArrayRef<Operation *> projections,
                                       std::optional<Type> sumsType) {
  for (auto [f, op] : llvm::zip_equal(folds, projections)) {
    auto result = cast<RankedTensorType>(op->getResult(0).getType());
    int64_t n = result.getShape().back();
    if (f.hasBias()) {
      BlockArgument bias = appendPreparedArgument(
          fn, RankedTensorType::get({n}, result.getElementType()));
      f.biasOut = bias.getArgNumber();
      addOutputBias(rewriter, op, bias);
    }
    if (!sumsType)
      continue;
    BlockArgument sums =
        appendPreparedArgument(fn, RankedTensorType::get({n}, *sumsType));
    f.sumsOut = sums.getArgNumber();
    rewriter.modifyOpInPlace(op, [&] {
      op->setAttr(kColumnSumsArgumentAttr,
                  rewriter.getI64IntegerAttr(*f.sumsOut));
    });
  }
}

void flashnorm::createPrepareFunction(ModuleOp module, func::FuncOp fn,
                                      SmallVector<ArgFold> folds) {
  llvm::sort(folds, [](const ArgFold &a, const ArgFold &b) {
    return a.weightArg < b.weightArg;
  });
  // The arguments the fold appended are the last ones; the prepare
  // function takes those before them, which the callers pass.
  unsigned numAppended = 0;
  for (const ArgFold &f : folds)
    numAppended += f.biasOut.has_value() + f.sumsOut.has_value();
  unsigned numInputs = fn.getNumArguments() - numAppended;
  TypeRange inputs = fn.getArgumentTypes().take_front(numInputs);

  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(fn);
  Location loc = fn.getLoc();
  std::string name = (fn.getName() + "_flashnorm_prepare").str();
  auto prepare =
      func::FuncOp::create(b, loc, name, FunctionType::get(ctx, inputs, {}));
  prepare.setVisibility(fn.getVisibility());
  SymbolTable(module).insert(prepare);
  Block *entry = prepare.addEntryBlock();
  b.setInsertionPointToStart(entry);
  // What each argument of `fn` marked folded takes, by argument.
  SmallVector<std::pair<unsigned, Value>> outputs;
  auto typeOf = [&](unsigned arg) {
    return cast<RankedTensorType>(fn.getArgument(arg).getType());
  };
  for (const ArgFold &f : folds) {
    Value w = entry->getArgument(f.weightArg);
    auto wType = cast<RankedTensorType>(w.getType());
    Value stored = w;
    if (f.foldsWeight) {
      // A LayerNorm without gain: centered only, by ones.
      // The attention scale joins a constant gain in f64, a runtime one in
      // the fold's type.
      Value g = buildFoldVector(b, loc, entry, f.gainArg, f.gainValues, wType,
                                f.axis, f.gainArg ? 1.0 : f.logitScale);
      stored = buildArgFold(b, loc, w, g, f.axis, f.gainArg && f.onePlus,
                            f.center, f.gainArg ? f.logitScale : 1.0);
      outputs.push_back({f.weightArg, stored});
      fn.setArgAttr(f.weightArg, kFoldedArgAttr, UnitAttr::get(ctx));
    }
    if (f.biasOut) {
      // The bias meets the weight as the input had it (before the gain).
      Value bias =
          buildFoldVector(b, loc, entry, f.biasArg, f.biasValues, wType, f.axis,
                          f.biasArg ? 1.0 : f.logitScale);
      outputs.push_back(
          {*f.biasOut,
           buildArgContraction(b, loc, w, bias, f.axis, typeOf(*f.biasOut),
                               f.biasArg ? f.logitScale : 1.0)});
    }
    if (f.sumsOut)
      outputs.push_back(
          {*f.sumsOut, buildArgContraction(b, loc, stored, Value(), f.axis,
                                           typeOf(*f.sumsOut))});
  }
  llvm::sort(outputs, llvm::less_first());
  SmallVector<Value> results = llvm::map_to_vector(
      outputs, [](const auto &output) { return output.second; });
  func::ReturnOp::create(b, loc, results);
  prepare.setType(
      FunctionType::get(ctx, inputs, ValueRange(results).getTypes()));

  // Callers in this module (whyNoPrepareFunction: calls are its only
  // uses): prepare first, then call with folded weights and the appended
  // arguments.
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
    SmallVector<Value> appended;
    for (auto [i, output] : llvm::enumerate(outputs)) {
      if (output.first < numInputs)
        call->setOperand(output.first, prepared.getResult(i));
      else
        appended.push_back(prepared.getResult(i));
    }
    call->insertOperands(call->getNumOperands(), appended);
  }
}
