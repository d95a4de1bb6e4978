//===- DeferScale.cpp - Deferred normalization (docs/MATH.md §2) ---------===//

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Transforms/Passes.h"
#include "flashnorm/Transforms/PatternDriver.h"
#include "flashnorm/Transforms/ProjectionRewrites.h"
#include "flashnorm/Utils/Remarks.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <functional>

namespace mlir::flashnorm {
#define GEN_PASS_DEF_DEFERSCALE
#include "flashnorm/Transforms/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
constexpr StringLiteral kPass = "flashnorm-defer-scale";

/// A LayerNorm's projection runs on the raw input only if the mean's share
/// of its product goes (docs/MATH.md §4). A weight of f32 or wider is
/// mean-centered: fold-gains may have done it already (the projection is
/// marked), otherwise the centered constant is computed here. A narrower
/// weight cannot carry the centering (its rounded columns would not sum to
/// zero); its post-scale subtracts mean(x) times the weight's column sums
/// instead, summed exactly from the weight as stored. Both are computed
/// before anything is rewritten.
struct Centering {
  WeightSource source;
  /// The weight, centered, to replace it; or
  ElementsAttr centered;
  /// sum_k W[k, n] per output n, in the statistic's type: a constant, the
  /// extern global fold-gains planned them in (a checkpoint's weight), or
  /// the argument the prepare function fills (an argument weight).
  ElementsAttr colsum;
  SymbolRefAttr colsumGlobal;
  Value colsumArgument;
  RankedTensorType colsumType;

  bool isShifted() const { return colsum || colsumGlobal || colsumArgument; }
  /// The column sums, made at `loc`.
  Value createColumnSums(OpBuilder &b, Location loc) const {
    if (colsum)
      return arith::ConstantOp::create(b, loc, cast<TypedAttr>(colsum));
    if (colsumArgument)
      return colsumArgument;
    return ml_program::GlobalLoadConstOp::create(b, loc, colsumType,
                                                 colsumGlobal);
  }
};

/// The column sums of `source` (the weight of `p`), one per output of `p`,
/// as a constant of `type`; or why not.
FailureOr<ElementsAttr> columnSums(const Projection &p,
                                   const WeightSource &source, FloatType type,
                                   std::string &why) {
  ShapedType weight = source.value.getShapedType();
  int64_t k = weight.getDimSize(source.axis);
  int64_t n = cast<ShapedType>(p.op->getResult(0).getType()).getShape().back();
  if (!columnSumsFollowOutputs(p, weight.getShape(), source.axis)) {
    why = "the column sums of its weight (which a narrow weight needs in "
          "place of the mean-centering) are not one per output";
    return failure();
  }
  FailureOr<SmallVector<double>> sums = contractAlongAxis(
      source.value, source.axis, SmallVector<double>(k, 1.0), &why);
  if (failed(sums))
    return failure();
  auto sumsType = RankedTensorType::get({n}, type);
  if (type.isF64())
    return ElementsAttr(DenseElementsAttr::get(sumsType, ArrayRef(*sums)));
  SmallVector<float> rounded(sums->begin(), sums->end());
  return ElementsAttr(DenseElementsAttr::get(sumsType, ArrayRef(rounded)));
}

FailureOr<std::optional<Centering>>
computeCentering(const Projection &p, FloatType statType, std::string &why) {
  if (p.op->hasAttr(kCenteredWeightsAttr))
    return std::optional<Centering>();
  // A checkpoint's weight whose column sums fold-gains planned.
  if (auto ref = p.op->getAttrOfType<SymbolRefAttr>(kColumnSumsAttr)) {
    int64_t n =
        cast<ShapedType>(p.op->getResult(0).getType()).getShape().back();
    auto type = RankedTensorType::get({n}, statType);
    auto global =
        SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(p.op, ref);
    if (!global || global.getType() != type || global.getIsMutable()) {
      why = "its column sums (flashnorm.column_sums) are not an immutable "
            "global of " +
            printToString(type);
      return failure();
    }
    Centering c;
    c.colsumGlobal = ref;
    c.colsumType = type;
    return std::optional<Centering>(c);
  }
  // An argument weight's, which the prepare function sums.
  if (auto index = p.op->getAttrOfType<IntegerAttr>(kColumnSumsArgumentAttr)) {
    int64_t n =
        cast<ShapedType>(p.op->getResult(0).getType()).getShape().back();
    auto type = RankedTensorType::get({n}, statType);
    auto fn = p.op->getParentOfType<FunctionOpInterface>();
    int64_t i = index.getInt();
    if (!fn || fn.isExternal() || i >= int64_t(fn.getNumArguments()) ||
        fn.getArgument(i).getType() != type) {
      why = "its column sums (flashnorm.column_sums_argument) are not an "
            "argument of " +
            printToString(type);
      return failure();
    }
    Centering c;
    c.colsumArgument = fn.getArgument(i);
    c.colsumType = type;
    return std::optional<Centering>(c);
  }
  FailureOr<WeightSource> source =
      traceWeightToConstant(p.getWeight(), p.weightAxis, &why);
  if (succeeded(source) && !source->value) {
    why = "its weight is the extern global @" +
          source->global.getSymName().str() +
          (canCarryCentering(getElementTypeOrSelf(source->global.getType()))
               ? " (fold-gains centers it into the checkpoint with fold-plan)"
               : ", and its f16/bf16 values cannot carry the mean-centering: "
                 "its column sums are not known before the checkpoint is "
                 "read");
    source = failure();
  }
  if (succeeded(source) &&
      !canCarryCentering(source->value.getShapedType().getElementType())) {
    FailureOr<ElementsAttr> sums = columnSums(p, *source, statType, why);
    if (succeeded(sums))
      return std::optional<Centering>(Centering{*source, nullptr, *sums});
    return failure();
  }
  FailureOr<ElementsAttr> centered = failure();
  if (succeeded(source)) {
    int64_t k = source->value.getShapedType().getDimSize(source->axis);
    centered = scaleAndCenterAlongAxis(source->value, source->axis,
                                       SmallVector<double>(k, 1.0), &why);
  }
  if (failed(centered)) {
    why = "the mean-centering cannot be folded: " + why;
    return failure();
  }
  return std::optional<Centering>(Centering{*source, *centered, nullptr});
}

/// What a projection of the raw input reads, and the statistics its
/// post-scale applies: 1/RMS or 1/std, and for a narrow LayerNorm weight
/// the mean.
struct RawInput {
  Value input, scale, mean;
};

/// `proj(norm(x))` -> `post_scale(proj(x), stat(x))` for every projection
/// of a weightless norm; RMSNorm uses rms_inv, LayerNorm layer_inv, or
/// layer_stats and centered_post_scale for a weight too narrow to carry
/// the mean-centering.
template <typename NormOp> struct DeferScalePattern : OpRewritePattern<NormOp> {
  static constexpr bool layer = std::is_same_v<NormOp, LayerNormOp>;

  DeferScalePattern(MLIRContext *ctx, PassReporter &reporter, bool partial)
      : OpRewritePattern<NormOp>(ctx), reporter(reporter), partial(partial) {}

  LogicalResult matchAndRewrite(NormOp norm,
                                PatternRewriter &rewriter) const override {
    if (norm.getResult().use_empty())
      return failure();
    // An empty row's statistic is 0/0: the norm's result has no element to
    // carry it, the post-scale would multiply it into the product's zeros.
    // (A number of features known only at run time may be 0.)
    int64_t features = norm.getFeatureSize();
    if (features == 0 || ShapedType::isDynamic(features)) {
      reporter.refused(norm, features == 0
                                 ? "not deferred: its rows are empty (0 "
                                   "features), and their statistic is NaN"
                                 : "not deferred: its number of features is "
                                   "known only at run time, and rows of none "
                                   "would make their statistic NaN");
      return failure();
    }
    auto statType = cast<FloatType>(
        getStatisticType(getElementTypeOrSelf(norm.getInput().getType())));
    SmallVector<Projection> deferrable;
    SmallVector<std::optional<Centering>> centerings;
    std::string refusals;
    for (OpOperand *usePtr : getUsesThroughRowRegrouping(norm.getResult())) {
      OpOperand &use = *usePtr;
      std::string why;
      FailureOr<Projection> p = matchProjection(use, &why);
      if (succeeded(p) && !p->rowPreserving)
        why = "its result rows are not the norm's rows";
      else if (succeeded(p) && !p->zeroInit)
        why = isa_and_nonnull<tensor::EmptyOp>(
                  p->op->getOperands().back().getDefiningOp())
                  ? "it accumulates into an uninitialized 'tensor.empty' "
                    "(its result is undefined; fill it with zero)"
                  : "it accumulates into a non-zero init (a fused bias "
                    "would be scaled too)";
      else if (succeeded(p) && isRebuiltInF32(*p) &&
               llvm::any_of(deferrable, [&](const Projection &other) {
                 return other.op == p->op;
               }))
        // Rebuilt in f32 for one activation, it is gone for the other.
        why = "it reads the norm through both inputs, and its result is "
              "narrower than f32";
      std::optional<Centering> centering;
      if (succeeded(p) && why.empty() && layer) {
        FailureOr<std::optional<Centering>> c =
            computeCentering(*p, statType, why);
        if (succeeded(c))
          centering = *c;
      }
      if (why.empty()) {
        deferrable.push_back(*p);
        centerings.push_back(centering);
        continue;
      }
      refusals += "; user '" + use.getOwner()->getName().getStringRef().str() +
                  "' at " + formatLoc(use.getOwner()->getLoc()) + ": " + why;
    }
    if (deferrable.empty() || (!partial && !refusals.empty())) {
      reporter.refused(norm, "not deferred" + refusals);
      return failure();
    }
    // A gain fold-gains could not fold (argument weights without the
    // prepare function, a refused shared weight) is applied before the
    // projections instead: norm(x) W = s (.)row ((x (.) G) W). A LayerNorm's
    // bias and centering cannot move that way.
    Value gain = getGain(norm);
    if (layer && hasWeights(norm)) {
      reporter.refused(norm, "not deferred: the LayerNorm still has a gain "
                             "or bias (flashnorm-fold-gains folds them into "
                             "constant weights, or argument weights with "
                             "prepare-function=true)");
      return failure();
    }
    Type inElt = getElementTypeOrSelf(norm.getInput().getType());
    if (gain && inElt.isF16()) {
      reporter.refused(norm, "not deferred: its gain is not folded and x * g "
                             "could overflow f16 before the projections");
      return failure();
    }

    // The raw input and its statistic, per view of the norm's result that a
    // projection reads (the result itself, or a row-regrouping reshape of
    // it, re-created on the raw input).
    double eps = norm.getEpsilon().convertToDouble();
    Value gained;
    if constexpr (!layer)
      if (gain)
        gained = applyGain(rewriter, norm, gain);
    // Narrow LayerNorm weights subtract the mean's share after the
    // projection: the statistic is then the mean with 1/std.
    int64_t shifted =
        llvm::count_if(centerings, [](const std::optional<Centering> &c) {
          return c && c->isShifted();
        });
    DenseMap<Value, RawInput> raws;
    // `view` re-created on `base` (the raw input, or the input times the
    // gain) instead of the norm's result.
    std::function<Value(Value, Value)> rawView = [&](Value view,
                                                     Value base) -> Value {
      if (view == norm.getResult())
        return base;
      Operation *reshape = view.getDefiningOp();
      Value source = rawView(reshape->getOperand(0), base);
      // The same reshape of the raw input, made for another norm of it
      // (before `reshape` it is valid here: its operands are the raw input
      // and `reshape`'s own).
      for (Operation *user : source.getUsers())
        if (user->getBlock() == reshape->getBlock() &&
            isSameReshapeOf(user, reshape)) {
          if (!user->isBeforeInBlock(reshape))
            rewriter.moveOpBefore(user, reshape);
          return user->getResult(0);
        }
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPoint(reshape);
      IRMapping mapping;
      mapping.map(reshape->getOperand(0), source);
      return rewriter.clone(*reshape, mapping)->getResult(0);
    };
    // What a projection reading `view` reads instead, and the statistics.
    auto rawAndStat = [&](Value view) -> RawInput {
      auto [it, inserted] = raws.try_emplace(view);
      if (inserted) {
        Value x = rawView(view, norm.getInput());
        Value input = gained ? rawView(view, gained) : x;
        // The post-scales follow the projections, which follow `anchor`.
        Operation *anchor = view == norm.getResult() ? norm.getOperation()
                                                     : view.getDefiningOp();
        // Another norm of x with the same epsilon (two LayerNorms of one
        // residual stream): one statistic serves both. A 1/std made for
        // another norm's centered weights becomes the mean and 1/std where
        // this one needs the mean too (one pass over x, not two).
        if (Operation *same = findSameStatistic(x, eps, anchor)) {
          if (auto inv = dyn_cast<LayerInvOp>(same); inv && shifted) {
            OpBuilder::InsertionGuard guard(rewriter);
            rewriter.setInsertionPoint(inv);
            auto stats = LayerStatsOp::create(rewriter, inv.getLoc(), x, eps);
            rewriter.replaceOp(inv, stats.getInv());
            same = stats;
          }
          if (!same->isBeforeInBlock(anchor))
            rewriter.moveOpBefore(same, anchor);
          it->second = statisticsOf(input, same);
          return it->second;
        }
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointAfterValue(x);
        if (view == norm.getResult())
          rewriter.setInsertionPointAfter(norm);
        Location loc = norm.getLoc();
        Operation *stat =
            !layer    ? RMSInvOp::create(rewriter, loc, x, eps).getOperation()
            : shifted ? LayerStatsOp::create(rewriter, loc, x, eps)
                      : LayerInvOp::create(rewriter, loc, x, eps);
        it->second = statisticsOf(input, stat);
      }
      return it->second;
    };
    Operation *firstStat = nullptr;
    for (auto [p, centering] : llvm::zip(deferrable, centerings)) {
      RawInput raw = rawAndStat(p.getActivation());
      if (!firstStat)
        firstStat = raw.scale.getDefiningOp();
      if (centering && centering->centered)
        replaceWeight(rewriter, p, centering->source, centering->centered);
      for (StringRef mark :
           {kCenteredWeightsAttr, kColumnSumsAttr, kColumnSumsArgumentAttr})
        if (p.op->hasAttr(mark))
          rewriter.modifyOpInPlace(p.op, [&] { p.op->removeAttr(mark); });
      Type originalType = p.op->getResult(0).getType();
      Value product = rebuildProjection(rewriter, p, raw.input);
      rewriter.setInsertionPointAfterValue(product);
      Location loc = p.op->getLoc();
      Value scaled =
          centering && centering->isShifted()
              ? Value(CenteredPostScaleOp::create(
                    rewriter, loc, originalType, product, raw.scale, raw.mean,
                    centering->createColumnSums(rewriter, loc)))
              : Value(PostScaleOp::create(rewriter, loc, originalType, product,
                                          raw.scale));
      if (product.getDefiningOp() == p.op)
        rewriter.replaceAllUsesExcept(product, scaled, scaled.getDefiningOp());
      else
        rewriter.replaceOp(p.op, scaled);
    }
    // What reads only the norm's shape (the `tensor.dim` an importer takes
    // of it for a last-token slice, directly or of a view of it) reads the
    // input's, the same: the norm has the input's type, and so a view of it
    // the type of the same view of the input.
    for (OpOperand &use :
         llvm::make_early_inc_range(norm.getResult().getUses()))
      if (isa<tensor::DimOp>(use.getOwner()) ||
          (use.getOperandNumber() == 0 && isRowRegrouping(use.getOwner()) &&
           readsOnlyShape(use.getOwner()->getResult(0))))
        rewriter.modifyOpInPlace(use.getOwner(),
                                 [&] { use.set(norm.getInput()); });
    reporter.silence(norm);
    if (norm.getResult().use_empty())
      rewriter.eraseOp(norm);
    reporter.applied(
        firstStat,
        Twine("deferred ") + (layer ? "1/std" : "1/RMS") + " past " +
            Twine(deferrable.size()) + " projection(s)" +
            (gain ? " without folding its gain (x * g feeds them)" : "") +
            (shifted ? "; " + std::to_string(shifted) +
                           " subtract(s) the mean's share after the "
                           "projection (f16/bf16 weights cannot carry the "
                           "mean-centering)"
                     : std::string()) +
            (refusals.empty() ? ""
                              : "; kept the norm for the others" + refusals));
    return success();
  }

  /// Whether only `tensor.dim`s read `v`, directly or through row views
  /// (or views now dead, which the cleanup erases), and some do. (A view
  /// read by nothing is left alone: moved onto the input, it would look
  /// like one to reuse.)
  static bool readsOnlyShape(Value v) {
    bool readsShape = false;
    std::function<bool(Value)> onlyShape = [&](Value view) {
      return llvm::all_of(view.getUses(), [&](OpOperand &use) {
        Operation *user = use.getOwner();
        if (isa<tensor::DimOp>(user))
          return readsShape = true;
        return use.getOperandNumber() == 0 && isRowRegrouping(user) &&
               onlyShape(user->getResult(0));
      });
    };
    return onlyShape(v) && readsShape;
  }

  /// A statistic of this norm's kind on `x` with epsilon `eps` in the
  /// block of `anchor` (moving it before `anchor` keeps it valid: x
  /// dominates `anchor`).
  static Operation *findSameStatistic(Value x, double eps, Operation *anchor) {
    for (Operation *user : x.getUsers()) {
      std::optional<APFloat> epsilon;
      if (auto stat = dyn_cast<RMSInvOp>(user); stat && !layer)
        epsilon = stat.getEpsilon();
      if (auto stat = dyn_cast<LayerInvOp>(user); stat && layer)
        epsilon = stat.getEpsilon();
      if (auto stat = dyn_cast<LayerStatsOp>(user); stat && layer)
        epsilon = stat.getEpsilon();
      if (epsilon && epsilon->convertToDouble() == eps &&
          user->getBlock() == anchor->getBlock())
        return user;
    }
    return nullptr;
  }

  /// `input` and the statistics `stat` computes of it.
  static RawInput statisticsOf(Value input, Operation *stat) {
    if (auto stats = dyn_cast<LayerStatsOp>(stat))
      return {input, stats.getInv(), stats.getMean()};
    return {input, stat->getResult(0), Value()};
  }

  /// Whether `candidate` is `reshape` applied to another source: same op,
  /// attributes, other operands and result type.
  static bool isSameReshapeOf(Operation *candidate, Operation *reshape) {
    return candidate->getName() == reshape->getName() &&
           candidate->getAttrDictionary() == reshape->getAttrDictionary() &&
           candidate->getResultTypes() == reshape->getResultTypes() &&
           llvm::equal(candidate->getOperands().drop_front(),
                       reshape->getOperands().drop_front());
  }

  static Value getGain(RMSNormOp op) { return op.getGain(); }
  static Value getGain(LayerNormOp) { return Value(); }

  /// x * G (G = g, or 1 + g) element-wise, in f32 (f64 if either is f64),
  /// rounded once to x's type: what the projections read when the gain is
  /// not folded.
  static Value applyGain(PatternRewriter &rewriter, RMSNormOp norm,
                         Value gain) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(norm);
    Location loc = norm.getLoc();
    Value x = norm.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    Type elt = type.getElementType();
    bool wide = elt.isF64() || getElementTypeOrSelf(gain.getType()).isF64();
    Type compute = wide ? Type(rewriter.getF64Type()) : rewriter.getF32Type();
    bool onePlus = norm.getGainConvention() == GainConvention::one_plus;
    unsigned rank = type.getRank();
    MLIRContext *ctx = rewriter.getContext();
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap feature =
        AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, ctx));
    Value init = tensor::EmptyOp::create(
        rewriter, loc, tensor::getMixedSizes(rewriter, loc, x), elt);
    SmallVector<utils::IteratorType> par(rank, utils::IteratorType::parallel);
    auto convert = [](OpBuilder &b, Location l, Value v, Type to) -> Value {
      unsigned from = v.getType().getIntOrFloatBitWidth(),
               width = to.getIntOrFloatBitWidth();
      if (v.getType() == to)
        return v;
      if (from < width)
        return arith::ExtFOp::create(b, l, to, v);
      if (from > width)
        return arith::TruncFOp::create(b, l, to, v);
      // bf16 <-> f16: through f32.
      return arith::TruncFOp::create(
          b, l, to, arith::ExtFOp::create(b, l, b.getF32Type(), v));
    };
    return linalg::GenericOp::create(
               rewriter, loc, TypeRange{type}, ValueRange{x, gain},
               ValueRange{init}, ArrayRef<AffineMap>{id, feature, id}, par,
               [&](OpBuilder &b, Location l, ValueRange args) {
                 Value g = convert(b, l, args[1], compute);
                 if (onePlus)
                   g = arith::AddFOp::create(
                       b, l, g,
                       arith::ConstantOp::create(b, l,
                                                 b.getFloatAttr(compute, 1.0)));
                 Value v = arith::MulFOp::create(
                     b, l, convert(b, l, args[0], compute), g);
                 linalg::YieldOp::create(b, l, convert(b, l, v, elt));
               })
        .getResult(0);
  }

  static bool hasWeights(RMSNormOp op) { return bool(op.getGain()); }
  static bool hasWeights(LayerNormOp op) {
    return op.getGain() || op.getBias();
  }

  PassReporter &reporter;
  bool partial;
};

struct DeferScalePass : flashnorm::impl::DeferScaleBase<DeferScalePass> {
  using DeferScaleBase::DeferScaleBase;
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    PassReporter reporter(fn, kPass);
    RewritePatternSet patterns(&getContext());
    patterns.add<DeferScalePattern<RMSNormOp>, DeferScalePattern<LayerNormOp>>(
        &getContext(), reporter, partial);
    if (failed(applyFlashNormPatterns(fn, std::move(patterns))))
      return signalPassFailure();
    numDeferred += reporter.getNumApplied();
  }
};
} // namespace
