//===- RaiseNarrow.cpp - Norms read in the type the model keeps -----------===//
//
// An importer that widens a bf16 (or f16) row to f32 before a norm and
// rounds the norm's result back afterwards writes both conversions as ops
// of their own, often with a reshape in between: torch-mlir lowers
// `hidden.to(torch.float32)` and `.to(input_dtype)` to linalg.generics that
// cast, around a norm on [1, T, K] between `tensor.expand_shape` and
// `tensor.collapse_shape`. Raised as it stands, such a norm runs in f32 and
// its result reaches the projections through a rounding that is not a
// projection's operand, so fold-gains and defer-scale see no projection.
//
// A norm computes its statistics in f32 and rounds once to its input's
// element type (FlashNormOps.td), so
//
//   truncf(norm(extf(x0) : f32)) == norm(x0) : bf16
//
// exactly, when every use of the f32 result is such a rounding: the norm
// reads x0 (through the same row-preserving views, cloned in x0's type) and
// the conversions fall away. Only an f32 norm is narrowed: one of f64 would
// compute in f64, a narrowed one in f32.
//
//===----------------------------------------------------------------------===//

#include "RaiseTerms.h"

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flashnorm-raise"

using namespace mlir;
using namespace mlir::flashnorm;

namespace {

/// The value `op` converts to another float type, element by element and
/// rounding to nearest even where it narrows: an `arith.extf` or
/// `arith.truncf` on tensors, a `tosa.cast` between floats, or a
/// linalg.generic that only casts its one input in place (torch-mlir's
/// dtype conversions). Null for anything else.
Value convertedValue(Operation *op) {
  auto floatTensor = [](Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && isa<FloatType>(type.getElementType());
  };
  if (op->getNumResults() != 1 || !floatTensor(op->getResult(0)))
    return Value();
  if (auto trunc = dyn_cast<arith::TruncFOp>(op)) {
    // (A rounding mode other than the default is another function.)
    if (trunc.getRoundingmodeAttr())
      return Value();
    return floatTensor(trunc.getIn()) ? trunc.getIn() : Value();
  }
  if (isa<arith::ExtFOp, tosa::CastOp>(op))
    return floatTensor(op->getOperand(0)) ? op->getOperand(0) : Value();
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return Value();
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 2)
    return Value();
  Operation *conversion = &body.front();
  auto trunc = dyn_cast<arith::TruncFOp>(conversion);
  bool converts =
      isa<arith::ExtFOp>(conversion) || (trunc && !trunc.getRoundingmodeAttr());
  if (!converts || conversion->getOperand(0) != body.getArgument(0) ||
      body.getTerminator()->getOperand(0) != conversion->getResult(0))
    return Value();
  Value in = generic.getDpsInputOperand(0)->get();
  return floatTensor(in) ? in : Value();
}

Type elementOf(Value v) { return getElementTypeOrSelf(v.getType()); }

/// What narrowing one norm takes, decided before anything changes.
struct Narrowing {
  /// The widening of the narrow value into the f32 input. (Its operand is
  /// read when the plan is applied: an earlier norm's narrowing may have
  /// replaced it, with that norm's now narrow result.)
  Operation *widening = nullptr;
  /// The row-preserving views from the widening to the norm, the
  /// widening's first; cloned in the narrow type.
  SmallVector<Operation *> inputViews;
  /// The views between the norm and its roundings, retyped in place (all
  /// they feed is a rounding).
  SmallVector<Operation *> outputViews;
  /// The roundings back to the narrow type; they fall away.
  SmallVector<Operation *> roundings;
};

FailureOr<Narrowing> planNarrowing(Operation *norm) {
  auto reject = [&](const char *why) -> FailureOr<Narrowing> {
    LLVM_DEBUG(llvm::dbgs()
               << "[narrow] kept in f32 (" << why << "): " << *norm << "\n");
    return failure();
  };
  Value result = norm->getResult(0);
  if (!elementOf(result).isF32())
    return failure();

  // Cheap first: every use (through row-preserving views) rounds to one
  // narrow type.
  Narrowing plan;
  Type narrow;
  SmallVector<Value> worklist{result};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<tensor::DimOp>(user))
        continue;
      if (use.getOperandNumber() == 0 && isRowRegrouping(user)) {
        plan.outputViews.push_back(user);
        worklist.push_back(user->getResult(0));
        continue;
      }
      Type to =
          user->getNumResults() == 1 ? elementOf(user->getResult(0)) : Type();
      // (Only to a type a norm takes: not to f8.)
      if (convertedValue(user) != v || !isNarrowFloat(to) ||
          !isNormElementType(to))
        return reject("a use is not a rounding to bf16 or f16");
      if (narrow && to != narrow)
        return reject("its uses round to two types");
      narrow = to;
      plan.roundings.push_back(user);
    }
  }
  if (!narrow)
    return failure(); // No rounding at all: nothing to narrow.

  // Then the input: x0 widened to f32, through row-preserving views.
  Value in = norm->getOperand(0);
  while (Operation *def = in.getDefiningOp()) {
    if (!isRowRegrouping(def))
      break;
    plan.inputViews.push_back(def);
    in = def->getOperand(0);
  }
  Operation *widening = in.getDefiningOp();
  Value source = widening ? convertedValue(widening) : Value();
  if (!source || elementOf(source) != narrow)
    return reject("its input is not widened from the type it rounds to");
  std::reverse(plan.inputViews.begin(), plan.inputViews.end());
  plan.widening = widening;
  return plan;
}

void applyNarrowing(Operation *norm, const Narrowing &plan) {
  Value in = convertedValue(plan.widening);
  Type narrow = elementOf(in);
  auto retype = [&](Value v) {
    v.setType(cast<RankedTensorType>(v.getType()).clone(narrow));
  };
  OpBuilder b(norm);
  for (Operation *view : plan.inputViews) {
    Operation *clone = b.clone(*view);
    clone->setOperand(0, in);
    retype(clone->getResult(0));
    in = clone->getResult(0);
  }
  norm->setOperand(0, in);
  retype(norm->getResult(0));
  for (Operation *view : plan.outputViews)
    retype(view->getResult(0));
  // (Erased now: a rounding of the narrowed result would be of bf16 to
  // bf16, and a later norm's plan may read what it rounded.)
  for (Operation *rounding : plan.roundings) {
    rounding->getResult(0).replaceAllUsesWith(convertedValue(rounding));
    rounding->erase();
  }
  LLVM_DEBUG(llvm::dbgs() << "[narrow] reads " << narrow << ": " << *norm
                          << "\n");
}

} // namespace

void raise::narrowNorms(func::FuncOp fn) {
  SmallVector<std::pair<Operation *, Narrowing>> plans;
  fn.walk([&](Operation *op) {
    if (!isa<RMSNormOp, LayerNormOp>(op))
      return;
    if (FailureOr<Narrowing> plan = planNarrowing(op); succeeded(plan))
      plans.emplace_back(op, std::move(*plan));
  });
  // Each plan touches its own norm's views and roundings only.
  for (auto &[norm, plan] : plans)
    applyNarrowing(norm, plan);
}
