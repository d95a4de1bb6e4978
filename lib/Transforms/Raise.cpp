//===- Raise.cpp - Recognize RMSNorm and LayerNorm in frontend IR ---------===//
//
// Recognition by symbolic interpretation (RaiseTerms.h). A candidate input
// x is found behind each reduction over the last dimension and every value
// computed from x is described by a Term, a closed form in x
// (RaiseInterpreter.cpp). A value whose Term is exactly a norm
// (docs/MATH.md §7 lists the shapes real frontends produce) is replaced by
// a flashnorm op here; the old computation is left to die. Then norms
// between a widening and a rounding back read the narrow type
// (RaiseNarrow.cpp).
//
//===----------------------------------------------------------------------===//

#include "RaiseTerms.h"

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Transforms/Passes.h"
#include "flashnorm/Utils/Cleanup.h"
#include "flashnorm/Utils/Remarks.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_RAISE
#include "flashnorm/Transforms/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::raise;

namespace {
constexpr StringLiteral kPass = "flashnorm-raise";
// Constants of 1/K rounded to bf16 are off by up to 2^-8 (0.4%); above 1%
// a factor that is not 1/K could pass for it.
constexpr double kMaxScaleTolerance = 1e-2;

/// `v` as a 1-D [K] tensor (collapsing leading unit dimensions).
Value asVector(OpBuilder &b, Location loc, Value v) {
  if (!v)
    return v;
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() == 1)
    return v;
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < type.getRank(); ++i)
    all[0].push_back(i);
  return tensor::CollapseShapeOp::create(b, loc, v, all);
}

/// Casts a float tensor to the float type `eltType` (no-op when equal).
Value castTensor(OpBuilder &b, Location loc, Value v, Type eltType) {
  auto type = cast<RankedTensorType>(v.getType());
  Type from = type.getElementType();
  if (from == eltType)
    return v;
  unsigned fromWidth = from.getIntOrFloatBitWidth(),
           toWidth = eltType.getIntOrFloatBitWidth();
  if (fromWidth == toWidth) // bf16 <-> f16: through f32.
    return castTensor(b, loc, castTensor(b, loc, v, b.getF32Type()), eltType);
  Type to = type.clone(eltType);
  if (fromWidth < toWidth)
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

/// The bits of precision of a float type (0 for others).
unsigned precisionOf(Type t) {
  auto f = dyn_cast<FloatType>(t);
  return f ? llvm::APFloatBase::semanticsPrecision(f.getFloatSemantics()) : 0;
}

/// Whether `op` only reads or moves values it is given (a load of a
/// global, a reshape, a slice, a transpose, a broadcast, a copy into its
/// own element type): its narrow result type rounds nothing (a bf16 gain
/// reshaped, then widened, is exact).
bool onlyMovesValues(Operation *op) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return isLayoutGeneric(generic);
  // (linalg.copy also converts: f32 into bf16 rounds.)
  if (auto copy = dyn_cast<linalg::CopyOp>(op))
    return getElementTypeOrSelf(copy.getInputs()[0]) ==
           getElementTypeOrSelf(copy.getOutputs()[0]);
  return isa<ViewLikeOpInterface, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp, tensor::ReshapeOp, tensor::ExtractSliceOp,
             tensor::CastOp, tensor::EmptyOp, tosa::ReshapeOp,
             tosa::TransposeOp, tosa::SliceOp, tosa::TileOp,
             linalg::BroadcastOp, linalg::TransposeOp, ml_program::GlobalLoadOp,
             ml_program::GlobalLoadConstOp, bufferization::ToTensorOp>(op);
}

/// Whether `op` gives values it reads, as they are (a read of an element, a
/// widening conversion, a choice, a sign): its result type rounds nothing.
bool isExact(Operation *op) {
  return isa<tensor::ExtractOp, arith::ExtFOp, arith::SelectOp, arith::NegFOp,
             math::AbsFOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::MaxNumFOp, arith::MinNumFOp>(op) ||
         (isa<tosa::CastOp>(op) && !isNarrowingCast(op));
}

/// The float types of least precision that the ops computing `v` from x
/// and its gain round to: a result type, or a scalar op's in a linalg body.
/// A constant's rounding (and that of ops on constants alone) is already in
/// its Term's value, x's own type rounds nothing the norm does not read,
/// and neither do ops that only move values.
struct Roundings {
  /// Of what reads x (or neither x nor the gain: a bias): the raised norm's
  /// output rounds to it.
  FloatType output;
  /// Of what reads the gain but not x (Gemma's 1 + w formed in bf16 beside
  /// f32 activations): the gain does, not the output.
  FloatType gain;
};

Roundings findRoundings(Value v, Value x, Value gain) {
  Roundings roundings;
  Operation *def = v.getDefiningOp();
  if (!def)
    return roundings;
  BackwardSliceOptions options;
  options.omitBlockArguments = true;
  options.inclusive = true;
  options.filter = [&](Operation *op) {
    return op != x.getDefiningOp() && op->getBlock() == def->getBlock();
  };
  llvm::SetVector<Operation *> slice;
  if (failed(getBackwardSlice(def, &slice, options)))
    return roundings;
  // Which values read x, which the gain, and which only constants, in the
  // slice's order (defs before uses) and through linalg bodies' block
  // arguments.
  DenseSet<Value> readsX{x}, readsGain, constant;
  if (gain)
    readsGain.insert(gain);
  // Marks `results` as reading what `operands` read; the rounding their
  // narrow types count as, or none for constants (their Terms hold their
  // values as rounded: torch-mlir's f64 scalars truncated in a body).
  auto propagate = [&](Operation *op, ValueRange operands,
                       ValueRange results) -> FloatType * {
    auto any = [&](const DenseSet<Value> &set) {
      return llvm::any_of(operands, [&](Value o) { return set.contains(o); });
    };
    bool fromX = any(readsX), fromGain = any(readsGain);
    // (The gain is often a constant too, but its rounding is what counts.)
    bool isConstant =
        !fromX && !fromGain &&
        ((op && op->hasTrait<OpTrait::ConstantLike>()) ||
         (!operands.empty() && llvm::all_of(operands, [&](Value o) {
           // (A constant a body captures is not in the slice.)
           Operation *def = o.getDefiningOp();
           return constant.contains(o) ||
                  (def && def->hasTrait<OpTrait::ConstantLike>());
         })));
    for (Value r : results) {
      if (fromX)
        readsX.insert(r);
      if (fromGain)
        readsGain.insert(r);
      if (isConstant)
        constant.insert(r);
    }
    if (isConstant)
      return nullptr;
    return fromGain && !fromX ? &roundings.gain : &roundings.output;
  };
  auto roundsTo = [](FloatType *narrowest, Operation *op) {
    if (!narrowest || isExact(op))
      return;
    for (Type t : op->getResultTypes())
      if (auto f = dyn_cast<FloatType>(getElementTypeOrSelf(t));
          f && (!*narrowest || precisionOf(f) < precisionOf(*narrowest)))
        *narrowest = f;
  };
  for (Operation *op : slice) {
    if (onlyMovesValues(op)) {
      propagate(op, op->getOperands(), op->getResults());
      continue;
    }
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp ||
        linalgOp.getBlock()->getNumArguments() != op->getNumOperands()) {
      FloatType *rounding = propagate(op, op->getOperands(), op->getResults());
      op->walk([&](Operation *nested) {
        if (!nested->hasTrait<OpTrait::ConstantLike>())
          roundsTo(rounding, nested);
      });
      continue;
    }
    // A linalg body, scalar by scalar: block argument i is operand i.
    Block *body = linalgOp.getBlock();
    for (auto [arg, operand] :
         llvm::zip(body->getArguments(), op->getOperands()))
      propagate(nullptr, operand, arg);
    for (Operation &nested : body->without_terminator())
      roundsTo(propagate(&nested, nested.getOperands(), nested.getResults()),
               &nested);
    propagate(nullptr, body->getTerminator()->getOperands(), op->getResults());
  }
  return roundings;
}

struct RaisePass : flashnorm::impl::RaiseBase<RaisePass> {
  using RaiseBase::RaiseBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    // NaN and negative values would refuse everything, 0 even an exactly
    // rounded 1/K, and a large one accepts factors of other functions.
    if (!(scaleTolerance > 0 && scaleTolerance <= kMaxScaleTolerance)) {
      fn.emitError() << kPass << ": scale-tolerance must be in (0, "
                     << kMaxScaleTolerance << "], not " << scaleTolerance;
      return signalPassFailure();
    }
    if (fn.isExternal())
      return;
    PassReporter reporter(fn, kPass);
    RewriteCleanup cleanup(fn);
    // A raised value replaces the old one; later candidates may be it.
    DenseMap<Value, Value> replaced;
    // The steps of a raised norm before its statistic (x - mean(x), its
    // square): no candidates of their own. (x - mean(x)) * rsqrt(...) is
    // also an RMSNorm of x - mean(x), and raising that would only feed the
    // LayerNorm's dead remains.
    DenseSet<Value> consumed;
    auto unsupported = [&](Operation *op, StringRef why) {
      reporter.refused(op, "not raised: " + why);
    };
    for (Value candidate : findCandidates(fn, unsupported)) {
      while (replaced.count(candidate))
        candidate = replaced.lookup(candidate);
      if (!consumed.contains(candidate))
        raiseFrom(candidate, reporter, replaced, consumed);
    }
    // Norms between a widening and a rounding back read the narrow type.
    narrowNorms(fn);
    // The old computations, now dead.
    cleanup.eraseNewlyDead();
    reportBufferReductions(fn, reporter);
  }

  /// Bufferized linalg is not read at all: says so once per function
  /// that reduces rows of buffers, rather than staying silent.
  static void reportBufferReductions(func::FuncOp fn, PassReporter &reporter) {
    unsigned count = 0;
    Operation *first = nullptr;
    fn.walk([&](linalg::LinalgOp op) {
      SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
      if (!op.hasPureBufferSemantics() || iters.empty() ||
          iters.back() != utils::IteratorType::reduction)
        return;
      if (!first)
        first = op;
      ++count;
    });
    if (first)
      reporter.refused(first, "not raised: " + Twine(count) +
                                  " row reduction(s) in this function work "
                                  "on buffers (memref); the flashnorm "
                                  "passes read linalg on tensors, before "
                                  "bufferization");
  }

  /// The gain `scale * gain` (or `scale * (1 + gain)`), as an f32 [K]
  /// tensor (f64 for f64 norms or gains): a new constant when the gain is
  /// one (fold-gains folds constants), else arith ops on the widened gain.
  /// With `rounding`, gain (or 1 + gain) is rounded to it before the scale,
  /// as the original formed it.
  static Value scaledGain(OpBuilder &b, Location loc, Value gain, bool onePlus,
                          double scale, int64_t k, Type normElement,
                          FloatType rounding) {
    bool wide = normElement.isF64() ||
                (gain && getElementTypeOrSelf(gain.getType()).isF64());
    Type element = wide ? Type(b.getF64Type()) : Type(b.getF32Type());
    auto type = RankedTensorType::get({k}, element);
    std::string unused;
    SmallVector<double> values(k, 1.0);
    if (gain) {
      FailureOr<SmallVector<double>> constant =
          readConstantAsDoubles(gain, &unused);
      if (failed(constant) || static_cast<int64_t>(constant->size()) != k) {
        // A runtime gain: widened, 1 added, scaled, all in f32.
        Value widened = castTensor(b, loc, gain, element);
        auto splat = [&](double v) -> Value {
          return arith::ConstantOp::create(
              b, loc, DenseElementsAttr::get(type, b.getFloatAttr(element, v)));
        };
        if (onePlus)
          widened = arith::AddFOp::create(b, loc, widened, splat(1.0));
        if (rounding)
          widened = castTensor(b, loc, castTensor(b, loc, widened, rounding),
                               element);
        return scale == 1.0
                   ? widened
                   : arith::MulFOp::create(b, loc, widened, splat(scale));
      }
      values = *constant;
    }
    SmallVector<Attribute> scaled;
    for (double v : values) {
      double g = onePlus ? 1.0 + v : v;
      if (rounding)
        g = FloatAttr::get(rounding, g).getValueAsDouble();
      scaled.push_back(b.getFloatAttr(element, g * scale));
    }
    return arith::ConstantOp::create(b, loc,
                                     DenseElementsAttr::get(type, scaled));
  }

  void raiseFrom(Value x, PassReporter &reporter,
                 DenseMap<Value, Value> &replaced, DenseSet<Value> &consumed) {
    int64_t k = cast<RankedTensorType>(x.getType()).getShape().back();
    DenseMap<Value, Term> terms = interpretFrom(x, scaleTolerance);
    auto isNorm = [&](Value v) {
      auto it = terms.find(v);
      std::string why;
      return it != terms.end() && asNorm(it->second, k, scaleTolerance, why);
    };

    // Values that are norms of x and are used by something that is not.
    SmallVector<std::pair<Value, NormForm>> outputs;
    std::pair<Value, std::string> lastRefusal;
    for (Operation &op : *x.getParentBlock()) {
      if (op.getNumResults() != 1 || !terms.count(op.getResult(0)))
        continue;
      Value v = op.getResult(0);
      std::string why;
      std::optional<NormForm> form =
          asNorm(terms.lookup(v), k, scaleTolerance, why);
      if (!form) {
        if (!why.empty() && !isOpTriviallyDead(&op))
          lastRefusal = {v, why};
        continue;
      }
      // Users already cut off by an earlier raise do not count.
      bool escapes = llvm::any_of(v.getUsers(), [&](Operation *user) {
        return !isOpTriviallyDead(user) &&
               llvm::none_of(user->getResults(), isNorm);
      });
      // (Of x's shape, in a float type: a norm rounded to integers is not
      // the norm, and castTensor converts floats only.)
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!escapes || !type || !isa<FloatType>(type.getElementType()) ||
          type.getShape() != cast<RankedTensorType>(x.getType()).getShape())
        continue;
      // The norm adds eps in f32 but for f64 inputs (the ops' verifier).
      if (!isNormEpsilon(form->eps, getElementTypeOrSelf(x))) {
        lastRefusal = {v, "its epsilon " + formatNumber(form->eps) +
                              " is not 0 or a normal f32"};
        continue;
      }
      outputs.push_back({v, *form});
    }
    if (outputs.empty()) {
      if (lastRefusal.first)
        reporter.refused(lastRefusal.first.getDefiningOp(),
                         "not raised: " + lastRefusal.second);
      return;
    }
    for (const auto &[v, t] : terms)
      if (v != x && t.isPureElem())
        consumed.insert(v);

    for (auto &[v, form] : outputs) {
      Operation *def = v.getDefiningOp();
      OpBuilder b(def);
      Location loc = def->getLoc();
      auto outType = cast<RankedTensorType>(v.getType());
      auto inType = cast<RankedTensorType>(x.getType());
      // Normalize in the wider of the two types (f32 for bf16 vs f16);
      // round once at the end.
      Value input = x;
      Type inElt = inType.getElementType(), outElt = outType.getElementType();
      unsigned inWidth = inElt.getIntOrFloatBitWidth(),
               outWidth = outElt.getIntOrFloatBitWidth();
      if (outWidth > inWidth)
        input = castTensor(b, loc, x, outElt);
      else if (outWidth == inWidth && inElt != outElt)
        input = castTensor(b, loc, x, b.getF32Type());
      // A gain or bias in a type norms do not take (f8) is read in f32.
      auto normType = [&](Value v) {
        return v && !isNormElementType(getElementTypeOrSelf(v))
                   ? castTensor(b, loc, v, b.getF32Type())
                   : v;
      };
      Value gain = normType(asVector(b, loc, form.gain));
      bool onePlus = form.onePlus;
      Roundings roundings = findRoundings(v, x, form.gain);
      // A gain the original rounds (1 + w formed in bf16) is rounded so,
      // where the raised norm's f32 (or f64) arithmetic would not.
      Type normElement = getElementTypeOrSelf(input.getType());
      unsigned gainPrecision =
          normElement.isF64() ||
                  (gain && getElementTypeOrSelf(gain.getType()).isF64())
              ? 53
              : 24;
      FloatType gainRounding =
          roundings.gain && precisionOf(roundings.gain) < gainPrecision
              ? roundings.gain
              : FloatType();
      // (A LayerNorm takes its gain as it is: 1 + g is formed here.)
      if (form.scale != 1.0 || gainRounding || (form.layer && onePlus)) {
        gain = scaledGain(b, loc, gain, onePlus, form.scale, k, normElement,
                          gainRounding);
        onePlus = false;
      }
      Value raised;
      if (form.layer) {
        raised = LayerNormOp::create(b, loc, input, gain,
                                     normType(asVector(b, loc, form.bias)),
                                     form.eps);
      } else {
        raised = RMSNormOp::create(b, loc, input, gain, form.eps,
                                   onePlus ? GainConvention::one_plus
                                           : GainConvention::plain);
      }
      // A rounding the original makes on the way (the statistic formed in
      // bf16, the Llama order's cast back before an f32 gain)
      // stays in the result: the raised norm rounds once, to that type, and
      // agrees with the original to within its ulp, not to f32's.
      if (FloatType rounded = roundings.output;
          rounded && precisionOf(rounded) < precisionOf(outElt))
        raised = castTensor(b, loc, raised, rounded);
      raised = castTensor(b, loc, raised, outType.getElementType());
      v.replaceAllUsesWith(raised);
      replaced[v] = raised;
      reporter.applied(
          raised.getDefiningOp(),
          "raised a " + Twine(form.layer ? "LayerNorm" : "RMSNorm") + " (eps " +
              formatNumber(form.eps) +
              (form.gain ? (form.onePlus ? ", 1 + gain" : ", gain") : "") +
              (form.scale != 1.0
                   ? (form.gain ? " x " : ", gain ") + formatNumber(form.scale)
                   : "") +
              (form.bias ? ", bias" : "") + ")");
      ++numRaised;
    }
  }
};
} // namespace
