//===- PackPreparedWeights.cpp - Argument weights packed by prepare -------===//
//
// Weights that arrive as arguments are folded by the prepare function
// (`@f_flashnorm_prepare`, fold-gains' prepare-function), which the caller
// runs once per checkpoint. Since it already writes every byte of those
// weights, it also stores them in the CPU kernel's panels [N / P][K][P]
// (flashnorm-pack-weights does the same at compile time for constants): its
// result becomes the panels, `@f` takes them in place of the matrix, and
// each projection reading them becomes the loop over panels. No weight is
// relaid per call.
//
// Plan, then apply: a folded argument is packed only if every use of it in
// `@f` is a projection that reads it as a matrix in panels of one width,
// every call of `@f` in the module passes it straight from a call of the
// prepare function, and nothing else reads that call's result. The ABI
// change is the prepare function's contract: what it returns is what `@f`
// takes, whatever its shape.
//
//===----------------------------------------------------------------------===//

#include "PackPanels.h"

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Transforms/Passes.h"
#include "flashnorm/Utils/Cleanup.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_PACKPREPAREDWEIGHTS
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
constexpr StringLiteral kPass = "flashnorm-pack-prepared-weights";

/// One argument of `@f` to take in panels.
struct ArgumentPlan {
  unsigned arg = 0;
  /// Its position among the prepare function's results.
  unsigned result = 0;
  /// The stored matrix's contracted axis (0: K x N, 1: N x K) and the panel
  /// width every projection of it reads.
  int64_t axis = 0, panel = 0;
  RankedTensorType packedType;
  SmallVector<PanelPlan> projections;
};

/// Whether `v` is read only as argument `arg` of calls of `fn`.
bool onlyFeeds(Value v, func::FuncOp fn, unsigned arg) {
  return llvm::all_of(v.getUses(), [&](OpOperand &u) {
    auto reader = dyn_cast<func::CallOp>(u.getOwner());
    return reader && reader.getCallee() == fn.getName() &&
           u.getOperandNumber() == arg;
  });
}

/// Whether argument `arg` of `fn` and result `result` of `prepare` meet
/// only in the module's calls: every call of `fn` passes it from a call of
/// `prepare`, and every call of `prepare` hands it to calls of `fn` alone
/// (both change type).
bool passedFromPrepare(ModuleOp module, func::FuncOp fn, func::FuncOp prepare,
                       unsigned arg, unsigned result) {
  std::optional<SymbolTable::UseRange> fnUses =
      SymbolTable::getSymbolUses(fn, module);
  std::optional<SymbolTable::UseRange> prepareUses =
      SymbolTable::getSymbolUses(prepare, module);
  if (!fnUses || !prepareUses)
    return false;
  for (const SymbolTable::SymbolUse &use : *fnUses) {
    auto call = dyn_cast<func::CallOp>(use.getUser());
    if (!call)
      return false;
    Value v = call.getOperand(arg);
    auto prepared = v.getDefiningOp<func::CallOp>();
    if (!prepared || prepared.getCallee() != prepare.getName() ||
        cast<OpResult>(v).getResultNumber() != result)
      return false;
  }
  for (const SymbolTable::SymbolUse &use : *prepareUses) {
    auto call = dyn_cast<func::CallOp>(use.getUser());
    if (!call || !onlyFeeds(call.getResult(result), fn, arg))
      return false;
  }
  return true;
}

FailureOr<ArgumentPlan> planArgument(ModuleOp module, func::FuncOp fn,
                                     func::FuncOp prepare, unsigned arg,
                                     unsigned result,
                                     const PanelOptions &options,
                                     std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  BlockArgument weight = fn.getArgument(arg);
  auto type = dyn_cast<RankedTensorType>(weight.getType());
  if (!type || type.getRank() != 2 || !type.hasStaticShape())
    return fail("it is not a static matrix");
  ArgumentPlan plan{arg, result, 0, 0, {}, {}};
  // Every projection that reads it (through layout ops), and nothing else.
  unsigned projectionUses = 0;
  SmallVector<linalg::LinalgOp> candidates;
  fn.walk([&](linalg::LinalgOp op) { candidates.push_back(op); });
  for (linalg::LinalgOp op : candidates) {
    std::string panelWhy;
    FailureOr<PanelPlan> p = planPanels(op, options, panelWhy);
    if (failed(p))
      continue;
    FailureOr<WeightSource> source =
        traceWeight(op->getOperand(p->weightIndex), p->weightAxis,
                    /*allowArgument=*/true);
    if (failed(source) || source->argument != weight)
      continue;
    if (!isWholeWeight(*p, type.getShape(), source->axis, source->chain))
      return fail("a projection reads it broadcast, not as its k x n");
    if (plan.panel && (plan.panel != p->panel || plan.axis != source->axis))
      return fail("its projections read it in different panels");
    plan.panel = p->panel;
    plan.axis = source->axis;
    ++projectionUses;
    // The layout ops between are the projection's alone.
    for (Operation *layout : source->chain)
      if (!layout->getResult(0).hasOneUse())
        return fail("a layout op on the way to a projection has other users");
    plan.projections.push_back(*p);
  }
  if (plan.projections.empty())
    return fail("no projection reads it as a matrix");
  unsigned directUses = llvm::range_size(weight.getUses());
  if (directUses != projectionUses)
    return fail("it has users that are not projections");
  int64_t numN = type.getDimSize(1 - plan.axis),
          numK = type.getDimSize(plan.axis);
  if (numN % plan.panel)
    return fail("its " + std::to_string(numN) +
                " outputs are no multiple of the " +
                std::to_string(plan.panel) + "-wide panels");
  if (!passedFromPrepare(module, fn, prepare, arg, result))
    return fail("the module passes it between @" + prepare.getName().str() +
                " and @" + fn.getName().str() +
                " other than by a call of each");
  plan.packedType = RankedTensorType::get({numN / plan.panel, numK, plan.panel},
                                          type.getElementType());
  return plan;
}

/// `weight` (K x N, or N x K with `axis` 1) as panels [N / P][K][P]:
/// out[b, k, p] = W(k, b P + p).
Value packAtRuntime(OpBuilder &b, Location loc, Value weight,
                    const ArgumentPlan &plan) {
  auto type = cast<RankedTensorType>(weight.getType());
  int64_t numN = plan.packedType.getDimSize(0),
          numK = plan.packedType.getDimSize(1), p = plan.panel;
  bool nk = plan.axis == 1;
  // Split n into (block, p), then order the dimensions (block, k, p).
  SmallVector<int64_t> split = nk ? SmallVector<int64_t>{numN, p, numK}
                                  : SmallVector<int64_t>{numK, numN, p};
  SmallVector<ReassociationIndices> groups =
      nk ? SmallVector<ReassociationIndices>{{0, 1}, {2}}
         : SmallVector<ReassociationIndices>{{0}, {1, 2}};
  Value expanded = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(split, type.getElementType()), weight,
      groups);
  Value init = tensor::EmptyOp::create(b, loc, plan.packedType.getShape(),
                                       type.getElementType());
  SmallVector<int64_t> perm =
      nk ? SmallVector<int64_t>{0, 2, 1} : SmallVector<int64_t>{1, 0, 2};
  return linalg::TransposeOp::create(b, loc, expanded, init, perm)
      .getResult()[0];
}

struct PackPreparedWeightsPass
    : flashnorm::impl::PackPreparedWeightsBase<PackPreparedWeightsPass> {
  using PackPreparedWeightsBase::PackPreparedWeightsBase;
  /// The panels' options (vector-bits resolved into the register tile).
  PanelOptions options;

  void runOnOperation() override {
    if (panel < 0 || threads < 0 || parallelMinBytes < 0 ||
        activationBlockBytes < 0) {
      emitError(getOperation().getLoc())
          << kPass << ": panel, threads, parallel-min-bytes and "
          << "activation-block-bytes must not be negative";
      return signalPassFailure();
    }
    FailureOr<RegisterTile> resolved = registerTileFor(vectorBits);
    if (failed(resolved)) {
      emitError(getOperation().getLoc()) << kPass << ": " << kVectorBitsValues
                                         << ", not " << vectorBits.getValue();
      return signalPassFailure();
    }
    options = {panel, *resolved, activationBlockBytes};
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp fn : functions) {
      auto prepare = module.lookupSymbol<func::FuncOp>(
          (fn.getName() + "_flashnorm_prepare").str());
      // (A generated prepare function is one block, ending in its return.)
      if (fn.isExternal() || !prepare || prepare.isExternal() ||
          !prepare.getBody().hasOneBlock())
        continue;
      packFunction(module, fn, prepare);
    }
  }

  void packFunction(ModuleOp module, func::FuncOp fn, func::FuncOp prepare) {
    PassReporter reporter(fn, kPass);
    // The prepare function returns the folded arguments in order.
    SmallVector<unsigned> folded;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, kFoldedArgAttr))
        folded.push_back(i);
    if (folded.size() != prepare.getNumResults())
      return;
    SmallVector<ArgumentPlan> plans;
    for (auto [result, arg] : llvm::enumerate(folded)) {
      // A prepared vector (a folded bias, column sums) has no panels.
      auto type = dyn_cast<RankedTensorType>(fn.getArgument(arg).getType());
      if (type && type.getRank() == 1)
        continue;
      std::string why;
      FailureOr<ArgumentPlan> plan =
          planArgument(module, fn, prepare, arg, result, options, why);
      if (failed(plan)) {
        reporter.refused(fn, "argument #" + Twine(arg) +
                                 " left in its layout: " + why);
        continue;
      }
      plans.push_back(std::move(*plan));
    }
    if (plans.empty())
      return;

    IRRewriter rewriter(&getContext());
    // The prepare function returns the panels.
    auto ret = cast<func::ReturnOp>(prepare.getBody().front().getTerminator());
    rewriter.setInsertionPoint(ret);
    SmallVector<Type> results(prepare.getResultTypes());
    for (const ArgumentPlan &plan : plans) {
      Value packed = packAtRuntime(rewriter, ret.getLoc(),
                                   ret.getOperand(plan.result), plan);
      rewriter.modifyOpInPlace(ret,
                               [&] { ret->setOperand(plan.result, packed); });
      results[plan.result] = plan.packedType;
    }
    prepare.setType(
        FunctionType::get(&getContext(), prepare.getArgumentTypes(), results));
    // Its callers get the panels.
    if (std::optional<SymbolTable::UseRange> uses =
            SymbolTable::getSymbolUses(prepare, module))
      for (const SymbolTable::SymbolUse &use : *uses)
        if (auto call = dyn_cast<func::CallOp>(use.getUser())) {
          rewriter.setInsertionPoint(call);
          auto retyped = func::CallOp::create(rewriter, call.getLoc(), prepare,
                                              call.getOperands());
          retyped->setDiscardableAttrs(call->getDiscardableAttrDictionary());
          rewriter.replaceOp(call, retyped.getResults());
        }

    // @f takes them, and its projections loop over them.
    RewriteCleanup cleanup(fn);
    SmallVector<Type> inputs(fn.getArgumentTypes());
    int64_t numThreads = panelThreads(threads);
    llvm::DenseSet<int64_t> splitGroups;
    for (ArgumentPlan &plan : plans) {
      BlockArgument weight = fn.getArgument(plan.arg);
      // The old layout ops read the matrix until they are erased: they read
      // a placeholder of its type meanwhile.
      rewriter.setInsertionPointToStart(&fn.getBody().front());
      Value placeholder = tensor::EmptyOp::create(
          rewriter, weight.getLoc(),
          cast<RankedTensorType>(weight.getType()).getShape(),
          cast<RankedTensorType>(weight.getType()).getElementType());
      rewriter.replaceAllUsesWith(weight, placeholder);
      weight.setType(plan.packedType);
      inputs[plan.arg] = plan.packedType;
      int64_t bytes = plan.packedType.getNumElements() *
                      plan.packedType.getElementTypeBitWidth() / 8;
      for (PanelPlan &p : plan.projections)
        packProjection(rewriter, p, weight, bytes, numThreads, parallelMinBytes,
                       reporter, splitGroups);
    }
    fn.setType(FunctionType::get(&getContext(), inputs, fn.getResultTypes()));
    unmarkGroups(fn, splitGroups);
    cleanup.eraseNewlyDead();
  }
};
} // namespace
