//===- FoldGains.cpp - Weightless normalization (docs/MATH.md §1) --------===//
//
// flashnorm-fold-gains: a norm's learned gain g (and a LayerNorm's bias and
// mean-centering) moves into the weights of the projections that read it,
// (x / rms(x)) (diag(g) W) instead of ((x / rms(x)) diag(g)) W, and the
// norm becomes weightless. Folded into all of its projections or none: a norm
// with one projection it cannot fold keeps its gain, with a remark saying
// which and why. A user that is not a projection of the norm at all (a
// post-norm block's residual add) keeps the gained norm (`partial`): the
// projections read a weightless copy beside it.
//
// Where the gain goes depends on where each weight lives, found by the
// shared projection analysis (matchProjection, traceWeight):
// - a constant: the raw-buffer weight folder (WeightFolder.h) scales it
//   along the projection's k axis in one pass, in f64, rounded once to its
//   type (with a query projection's attention scale, and centered for a
//   LayerNorm where the type can carry it);
// - a dequantization's per-input-channel factor: the factor takes the gain,
//   the integers stay; an int8 weight with per-output-channel scales is
//   requantized only with allow-requantize, within its tolerance
//   (FoldGainsQuantized.h);
// - a function argument (prepare-function=true): a generated
//   @<fn>_flashnorm_prepare, which the caller runs once on the weights,
//   folds it;
// - an extern global (fold-plan=FILE): the fold is recorded for
//   flashnorm-fold-checkpoint, which applies it to the checkpoint (a
//   query's attention scale times the plan's gain vector;
//   FoldGainsCheckpoint.h).
//
// Plan, then apply (FoldGainsPattern): the plan (FoldGainsPlan.h) reads
// the gain and every projection's weight, the weight folder then makes every
// folded value in new attributes, and only when both succeeded does this
// file replace anything.
//
//===----------------------------------------------------------------------===//

#include "FoldGainsPlan.h"

#include "flashnorm/Transforms/Passes.h"
#include "flashnorm/Transforms/PatternDriver.h"
#include "flashnorm/Transforms/ProjectionRewrites.h"
#include "flashnorm/Utils/Remarks.h"
#include "flashnorm/Utils/Safetensors.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

namespace mlir::flashnorm {
#define GEN_PASS_DEF_FOLDGAINS
#include "flashnorm/Transforms/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
constexpr StringLiteral kPass = "flashnorm-fold-gains";

/// Folds a norm's gain (and a LayerNorm's bias and mean-centering) into the
/// constant weights of all its projections, or into none of them. With
/// `argFolds`, weights that are function arguments are folded through the
/// prepare function instead (recorded there). Plan, then apply: the
/// planner (FoldGainsPlan.h) reads the IR (the gain, each projection's
/// weight) and makes every folded weight, each step may refuse; only then
/// does `apply` replace anything.
template <typename NormOp> struct FoldGainsPattern : OpRewritePattern<NormOp> {
  FoldGainsPattern(MLIRContext *ctx, PassReporter &reporter, bool cloneShared,
                   bool partial, std::optional<double> requantizeTolerance,
                   bool foldAttentionScale, SmallVector<ArgFold> *argFolds,
                   CheckpointRecorder *checkpoint,
                   llvm::SetVector<Operation *> &replacedGlobals,
                   llvm::DenseSet<Operation *> &refusedForArguments,
                   llvm::DenseSet<Operation *> &refusedForCheckpoint)
      : OpRewritePattern<NormOp>(ctx), reporter(reporter),
        planner(cloneShared, partial, requantizeTolerance, foldAttentionScale,
                argFolds, checkpoint != nullptr, refusedForArguments,
                refusedForCheckpoint),
        argFolds(argFolds), checkpoint(checkpoint),
        replacedGlobals(replacedGlobals) {}

  LogicalResult matchAndRewrite(NormOp norm,
                                PatternRewriter &rewriter) const override {
    std::string why;
    FailureOr<NormFold> fold = planner.plan(norm, why);
    if (succeeded(fold) && failed(planner.computeFolded(*fold, why)))
      fold = failure();
    if (failed(fold)) {
      // Nothing to fold says nothing.
      if (!why.empty())
        reporter.refused(norm, "not folded: " + why);
      return failure();
    }
    apply(rewriter, norm, *fold);
    return success();
  }

  /// Replaces the weights with their folded values, records the checkpoint
  /// and prepare-function folds, and makes the norm weightless.
  void apply(PatternRewriter &rewriter, NormOp norm, NormFold &f) const {
    for (auto [t, r] : llvm::zip_equal(f.requantTargets, f.requantized))
      replaceRequantized(rewriter, t, r, replacedGlobals);
    for (auto [i, t] : llvm::enumerate(f.targets)) {
      if (t.source.global)
        replacedGlobals.insert(t.source.global);
      replaceWeight(rewriter, t.projection, t.source, f.folded[i]);
      if (t.logit)
        bypassLogitScale(rewriter, *t.logit, f.logitBiases[i]);
      if (!f.biases.empty())
        addOutputBias(rewriter, t.projection.op, f.biases[i]);
    }
    // The gain and bias tensors too are read by the plan only, now.
    for (ml_program::GlobalOp global : f.vectorGlobals)
      replacedGlobals.insert(global);
    // A LayerNorm whose weights cannot carry the centering: defer-scale's
    // post-scale subtracts the mean's share with each folded weight's
    // column sums, which the plan computes (in the statistic's type).
    CheckpointNormFold recorded;
    recorded.gainRef = f.gainValue ? f.gainRef : std::nullopt;
    recorded.biasRef = f.biasValue ? f.biasRef : std::nullopt;
    recorded.gain = f.gain;
    recorded.bias = f.bias;
    recorded.scale = f.gainValue || f.center;
    recorded.center = f.center;
    if (f.layer && !f.center)
      recorded.columnSums =
          getStatisticType(getElementTypeOrSelf(norm->getOperand(0).getType()));
    for (auto [i, t] : llvm::enumerate(f.checkpointTargets)) {
      checkpoint->record(rewriter, t, recorded);
      if (t.logit)
        bypassLogitScale(rewriter, *t.logit, f.checkpointLogitBiases[i]);
    }
    llvm::SmallPtrSet<OpOperand *, 2> kept(f.keptUses.begin(),
                                           f.keptUses.end());
    // Every projection's weight is now centered for a LayerNorm.
    if (f.center)
      for (OpOperand *use : getUsesThroughRowRegrouping(norm.getResult()))
        if (!kept.contains(use))
          rewriter.modifyOpInPlace(use->getOwner(), [&] {
            use->getOwner()->setAttr(kCenteredWeightsAttr,
                                     rewriter.getUnitAttr());
          });
    if (argFolds) {
      std::optional<Type> sums;
      if (f.needsColumnSums())
        sums = getStatisticType(
            getElementTypeOrSelf(norm->getOperand(0).getType()));
      appendDerivedArguments(
          rewriter, norm->template getParentOfType<func::FuncOp>(), f.argFolds,
          llvm::map_to_vector(f.argProjections,
                              [](const Projection &p) { return p.op; }),
          sums);
      for (auto [i, logit] : llvm::enumerate(f.argLogits))
        if (logit)
          bypassLogitScale(rewriter, *logit, f.argLogitBiases[i]);
      argFolds->append(f.argFolds.begin(), f.argFolds.end());
    }
    // The projections read the weightless norm; users that are not
    // projections keep the gained one.
    rewriter.setInsertionPoint(norm);
    Operation *weightless = NormTraits::createWeightless(rewriter, norm);
    if (kept.empty()) {
      rewriter.replaceOp(norm, weightless->getResults());
    } else {
      redirectUsesThroughRowRegrouping(rewriter, norm.getResult(),
                                       weightless->getResult(0), kept);
      reporter.silence(norm);
    }
    std::string keptRemark = f.keptWhy.empty()
                                 ? ""
                                 : "; kept the gained norm for the others; " +
                                       llvm::join(f.keptWhy, "; ");
    if (f.sumsOnly) {
      std::string where;
      if (!f.checkpointTargets.empty())
        where = std::to_string(f.checkpointTargets.size()) +
                " in the checkpoint, through the fold plan";
      if (!f.argFolds.empty())
        where += (where.empty() ? "" : "; ") +
                 std::to_string(f.argFolds.size()) +
                 " argument(s), through the prepare function";
      reporter.applied(
          weightless,
          "recorded the column sums of " +
              Twine(f.checkpointTargets.size() + f.argFolds.size()) +
              " projection weight(s) (" + where +
              ") for defer-scale (f16/bf16 weights cannot carry "
              "the mean-centering)" +
              keptRemark);
      return;
    }
    if (!f.requantTargets.empty()) {
      reporter.approximated(
          weightless, "folded the gain into " +
                          Twine(f.targets.size() + f.requantTargets.size()) +
                          " projection weight(s), requantizing " +
                          Twine(f.requantTargets.size()) + " int8 one(s)" +
                          f.requantErrors + keptRemark);
      return;
    }
    reporter.applied(
        weightless,
        Twine("folded the ") +
            (f.centerOnly  ? "mean-centering"
             : f.gainValue ? (f.biasValue ? "gain and bias" : "gain")
                           : "bias") +
            (f.centerOnly ? ""
             : f.center   ? " (and the mean-centering)"
             : f.layer    ? " (not the mean-centering: f16/bf16 weights "
                            "cannot carry it exactly)"
                          : "") +
            " into " +
            Twine(f.targets.size() + f.argFolds.size() +
                  f.checkpointTargets.size()) +
            " projection weight(s)" +
            (f.argFolds.empty()
                 ? ""
                 : " (" + Twine(f.argFolds.size()) +
                       " argument(s), through the prepare function)") +
            (f.numLogitScales == 0
                 ? ""
                 : " (with the attention scale of " + Twine(f.numLogitScales) +
                       " query projection(s))") +
            (f.numKFactors == 0
                 ? ""
                 : " (" + Twine(f.numKFactors) +
                       " quantized, into the per-input-channel factor of "
                       "their dequantization)") +
            (f.checkpointTargets.empty()
                 ? ""
                 : " (" + Twine(f.checkpointTargets.size()) +
                       " in the checkpoint, through the fold plan)") +
            keptRemark);
  }

  PassReporter &reporter;
  NormFoldPlanner planner;
  /// Set with prepare-function: the folds its prepare function makes.
  SmallVector<ArgFold> *argFolds;
  /// Set with fold-plan.
  CheckpointRecorder *checkpoint;
  /// Globals whose loads were replaced: those nothing loads any more are
  /// erased (and, if extern, dropped from the checkpoint).
  llvm::SetVector<Operation *> &replacedGlobals;
};

struct FoldGainsPass : flashnorm::impl::FoldGainsBase<FoldGainsPass> {
  using FoldGainsBase::FoldGainsBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(requantizeTolerance > 0) || !std::isfinite(requantizeTolerance)) {
      emitError(module.getLoc())
          << kPass << ": requantize-tolerance must be a positive number, not "
          << requantizeTolerance.getValue();
      return signalPassFailure();
    }
    // Before anything folds: the plan must not land on the program.
    if (!foldPlan.empty()) {
      auto file = module.getLoc()->findInstanceOf<FileLineColLoc>();
      std::string why = whyNotPlanDestination(
          foldPlan, file ? file.getFilename().strref() : StringRef());
      if (!why.empty()) {
        emitError(module.getLoc())
            << kPass << ": fold-plan '" << foldPlan << "': " << why;
        return signalPassFailure();
      }
    }
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    llvm::SetVector<Operation *> replacedGlobals;
    CheckpointRecorder checkpoint(replacedGlobals);
    for (func::FuncOp fn : functions) {
      if (fn.isExternal())
        continue;
      SmallVector<ArgFold> argFolds;
      llvm::DenseSet<Operation *> refusedForArguments, refusedForCheckpoint;
      std::string noPrepare =
          prepareFunction ? whyNoPrepareFunction(module, fn) : "";
      {
        PassReporter reporter(fn, kPass);
        RewritePatternSet patterns(&getContext());
        patterns
            .add<FoldGainsPattern<RMSNormOp>, FoldGainsPattern<LayerNormOp>>(
                &getContext(), reporter, cloneSharedWeights, partial,
                allowRequantize ? std::optional<double>(requantizeTolerance)
                                : std::nullopt,
                foldAttentionScaleOpt,
                prepareFunction && noPrepare.empty() ? &argFolds : nullptr,
                foldPlan.empty() ? nullptr : &checkpoint, replacedGlobals,
                refusedForArguments, refusedForCheckpoint);
        if (failed(applyFlashNormPatterns(fn, std::move(patterns))))
          return signalPassFailure();
        numFolded += reporter.getNumApplied();
      }
      // Importers pass weights as arguments: without the prepare function
      // nothing folds, and a user who asked for no remarks would see
      // nothing at all. Said once per function, without flags, at its
      // location (a diagnostic on the op would print the whole function).
      if (!refusedForArguments.empty() && !noPrepare.empty())
        mlir::emitWarning(fn.getLoc())
            << kPass << ": " << refusedForArguments.size() << " norm(s) of @"
            << fn.getName()
            << " not folded because their gains or projection weights are "
               "function arguments, and no prepare function can fold them: "
            << noPrepare;
      else if (!refusedForArguments.empty())
        mlir::emitWarning(fn.getLoc())
            << kPass << ": " << refusedForArguments.size() << " norm(s) of @"
            << fn.getName()
            << " not folded because their gains or projection "
               "weights are function arguments; "
               "--flashnorm=prepare-function=true folds them "
               "through a @"
            << fn.getName()
            << "_flashnorm_prepare function run once on the "
               "weights";
      if (!refusedForCheckpoint.empty())
        mlir::emitWarning(fn.getLoc())
            << kPass << ": " << refusedForCheckpoint.size() << " norm(s) of @"
            << fn.getName()
            << " not folded because their gains or projection weights are "
               "extern globals (in a checkpoint); "
               "--flashnorm=fold-plan=plan.json records the folds, "
               "flashnorm-fold-checkpoint applies them to the checkpoint";
      if (!argFolds.empty())
        createPrepareFunction(module, fn, std::move(argFolds));
    }
    // The globals the folds replaced everywhere go (the pass made them
    // dead); a checkpoint no longer needs the extern ones.
    for (Operation *op : replacedGlobals) {
      auto global = cast<ml_program::GlobalOp>(op);
      if (!SymbolTable::symbolKnownUseEmpty(global, module))
        continue;
      if (isExternGlobal(global))
        checkpoint.getPlan().drop.push_back(global.getSymName().str());
      global->erase();
    }
    for (auto global : module.getOps<ml_program::GlobalOp>())
      if (isExternGlobal(global))
        checkpoint.getPlan().loads.push_back(global.getSymName().str());
    if (!foldPlan.empty() && failed(writePlan(checkpoint.getPlan())))
      return signalPassFailure();
  }

  /// Writes the plan to `fold-plan` (also when empty: the caller's script
  /// then applies a plan that copies the checkpoint).
  LogicalResult writePlan(const FoldPlan &plan) {
    std::error_code ec;
    llvm::raw_fd_ostream out(foldPlan, ec, llvm::sys::fs::OF_Text);
    if (!ec) {
      out << plan.toJSON();
      out.close();
      if (out.has_error()) {
        ec = out.error();
        out.clear_error(); // Else the stream aborts when destroyed.
      }
    }
    if (ec)
      return mlir::emitError(getOperation().getLoc())
             << kPass << ": cannot write the fold plan '" << foldPlan
             << "': " << ec.message();
    return success();
  }
};
} // namespace
