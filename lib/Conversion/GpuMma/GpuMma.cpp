//===- GpuMma.cpp - Tensor-core MMA for the kernels' fragments ------------===//
//
// flashnorm-gpu-kernels writes each tensor-core projection as one warp's
// vector.contract of 16 x 16 by 8 x 16 fragments (TensorCoreTile.cpp,
// TensorCoreBlock.cpp). This pass gives each lane its registers of every
// fragment and the m16n8k16 `nvvm.mma.sync`, one kernel at a time: it
// first checks that every op making or taking a fragment is one it
// converts, then rebuilds them on each lane's part (Fragments.cpp places
// the parts), inside conditions too (a write by one warp). Upstream's
// vector-to-nvgpu conversion, besides its loads
// (see Fragments.cpp), walks whole functions in its pass form and fails on
// the other kernels' scalar code.
//
//===----------------------------------------------------------------------===//

#include "Fragments.h"

#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_GPUMMA
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::mma;

namespace {
using nvgpu::MatMulOperandRole;

/// Converts one tensor-core kernel. `check` decides, touching nothing;
/// `convert` then rebuilds the fragment ops on each lane's part of their
/// fragments (Fragments.h). Fragments may be carried by loops
/// (TensorCoreTile's prefetched steps).
class TensorKernel {
public:
  explicit TensorKernel(gpu::LaunchOp launch) : launch(launch) {}

  /// Whether every op that makes or takes a fragment is one this converts,
  /// and every read and write one whose lanes can be placed.
  LogicalResult check(std::string &why) {
    WalkResult result = launch.getBody().walk([&](Operation *op) {
      if (!isConverted(op))
        return WalkResult::advance();
      // What is rebuilt is erased: only its fragments may be used after it.
      for (Value result : op->getResults())
        if (!isFragment(result.getType()) && !result.use_empty()) {
          why = "a value besides fragments defined with them";
          return WalkResult::interrupt();
        }
      // A zero accumulator from outside (the canonicalizer hoists constants
      // out of launches) starts at zero in every lane.
      for (Value operand : op->getOperands())
        if (isFragment(operand.getType()) && isOutside(operand) &&
            !isZero(operand.getDefiningOp<arith::ConstantOp>())) {
          why = "a fragment from outside the kernel that is not a zero "
                "accumulator";
          return WalkResult::interrupt();
        }
      if (auto read = dyn_cast<vector::TransferReadOp>(op)) {
        if (readsAsMatrix(read) &&
            roleOf(read.getVectorType()) != MatMulOperandRole::C)
          return WalkResult::advance();
        if (!placeable(read, why))
          return WalkResult::interrupt();
        if (roleOf(read.getVectorType()) == MatMulOperandRole::C) {
          why = "an accumulator read from memory";
          return WalkResult::interrupt();
        }
        if (maskedRows(read) &&
            roleOf(read.getVectorType()) != MatMulOperandRole::A) {
          why = "a weight fragment past its buffer's edge";
          return WalkResult::interrupt();
        }
        if (isPaired(read.getVectorType()) &&
            !read.getPermutationMap().isIdentity()) {
          why = "a fragment two steps wide whose k is not its buffer's "
                "last dimension";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      }
      if (auto write = dyn_cast<vector::TransferWriteOp>(op))
        return placeable(write, why) ? WalkResult::advance()
                                     : WalkResult::interrupt();
      if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
        if (isZero(constant))
          return WalkResult::advance();
        why = "an accumulator that does not start at zero";
        return WalkResult::interrupt();
      }
      if (auto contract = dyn_cast<vector::ContractionOp>(op)) {
        // acc[m, n] += a[m, k] * b[n, k], as TensorCoreTile writes it.
        MLIRContext *ctx = op->getContext();
        AffineExpr m, n, k;
        bindDims(ctx, m, n, k);
        using Exprs = ArrayRef<AffineExpr>;
        if (contract.getKind() == vector::CombiningKind::ADD &&
            isFragment(contract.getLhsType()) &&
            roleOf(contract.getLhsType()) == MatMulOperandRole::A &&
            isFragment(contract.getRhsType()) &&
            roleOf(contract.getRhsType()) == MatMulOperandRole::B &&
            contract.getIndexingMapsArray() ==
                AffineMap::inferFromExprList(
                    ArrayRef<Exprs>{Exprs{m, k}, Exprs{n, k}, Exprs{m, n}},
                    ctx))
          return WalkResult::advance();
        why = "a contraction that is not a[m, k] * b[n, k]";
        return WalkResult::interrupt();
      }
      if (auto split = dyn_cast<vector::ExtractStridedSliceOp>(op)) {
        if (!splitHalf(split)) {
          why = "a slice of a fragment other than half of a 16 x 16 or "
                "16 x 32 one (two weight fragments)";
          return WalkResult::interrupt();
        }
        // A half of A's padded rows would carry the last row's values
        // (loaded clamped) into real outputs, unless it multiplies that
        // A itself: then they reach only products with a padded row.
        auto read = split.getSource().getDefiningOp<vector::TransferReadOp>();
        if (read && maskedRows(read) &&
            !llvm::all_of(split->getUsers(), [&](Operation *user) {
              auto contract = dyn_cast<vector::ContractionOp>(user);
              return contract && contract.getRhs() == split.getResult() &&
                     contract.getLhs() == split.getSource();
            })) {
          why = "a weight fragment past its buffer's edge";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      }
      if (isa<scf::ForOp, scf::YieldOp>(op) ||
          (isa<scf::IfOp>(op) && op->getNumResults() == 0))
        return WalkResult::advance();
      why = "'" + op->getName().getStringRef().str() + "' on a fragment";
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }

  void convert() {
    OpBuilder b(launch.getContext());
    b.setInsertionPointToStart(&launch.getBody().front());
    lane = gpu::LaneIdOp::create(b, launch.getLoc(), /*upper_bound=*/nullptr);
    launch.getBody().walk([&](Operation *op) {
      for (Value operand : op->getOperands())
        if (isFragment(operand.getType()) && isOutside(operand) &&
            !mapping.contains(operand))
          mapping.map(operand, zeroAccumulator(b, launch.getLoc()));
    });
    SmallVector<Operation *> converted;
    for (Operation &op : launch.getBody().front()) {
      if (!isConverted(&op))
        continue;
      b.setInsertionPoint(&op);
      convertOp(b, &op, /*cloneOthers=*/false);
      converted.push_back(&op);
    }
    for (Operation *op : llvm::reverse(converted))
      op->erase();
  }

private:
  bool isOutside(Value value) {
    return !launch.getBody().isAncestor(value.getParentRegion());
  }

  /// A zero accumulator.
  static bool isZero(arith::ConstantOp constant) {
    auto splat = constant ? dyn_cast<SplatElementsAttr>(constant.getValue())
                          : SplatElementsAttr();
    return splat && isFragment(splat.getType()) &&
           splat.getElementType().isF32() &&
           splat.getSplatValue<APFloat>().isZero();
  }

  /// Ops on fragments, and the conditions around them (scf.if without
  /// results: TensorCoreTile's write of one warp's fragments).
  static bool isConverted(Operation *op) {
    if (llvm::any_of(op->getResultTypes(), isFragment) ||
        llvm::any_of(op->getOperandTypes(), isFragment))
      return true;
    return isa<scf::IfOp>(op) && op->getNumResults() == 0 &&
           op->walk([&](Operation *inner) {
               return inner != op && isConverted(inner)
                          ? WalkResult::interrupt()
                          : WalkResult::advance();
             }).wasInterrupted();
  }

  /// Builds `op`'s lane form at `b`; with `cloneOthers` (inside a loop
  /// being rebuilt) ops without fragments are cloned too.
  void convertOp(OpBuilder &b, Operation *op, bool cloneOthers) {
    Location loc = op->getLoc();
    auto mapped = [&](ValueRange values) {
      return llvm::map_to_vector(
          values, [&](Value v) { return mapping.lookupOrDefault(v); });
    };
    if (auto read = dyn_cast<vector::TransferReadOp>(op);
        read && isFragment(read.getVectorType())) {
      mapping.map(read.getResult(),
                  loadPart(b, lane, read, mapped(read.getIndices())));
      return;
    }
    if (auto contract = dyn_cast<vector::ContractionOp>(op)) {
      mapping.map(contract.getResult(),
                  multiply(b, loc, mapping.lookup(contract.getAcc()),
                           mapping.lookup(contract.getLhs()),
                           mapping.lookup(contract.getRhs()),
                           contract.getLhsType()));
      return;
    }
    if (auto split = dyn_cast<vector::ExtractStridedSliceOp>(op);
        split && isFragment(split.getSourceVectorType())) {
      mapping.map(
          split.getResult(),
          halfOf(b, loc, mapping.lookup(split.getSource()), *splitHalf(split)));
      return;
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op);
        constant && isFragment(constant.getType())) {
      mapping.map(constant.getResult(), zeroAccumulator(b, loc));
      return;
    }
    if (auto write = dyn_cast<vector::TransferWriteOp>(op);
        write && isFragment(write.getVector().getType())) {
      storePart(b, lane, write, mapped(write.getIndices()),
                mapping.lookup(write.getVector()));
      return;
    }
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      auto rebuilt = scf::ForOp::create(
          b, loc, mapping.lookupOrDefault(loop.getLowerBound()),
          mapping.lookupOrDefault(loop.getUpperBound()),
          mapping.lookupOrDefault(loop.getStep()), mapped(loop.getInitArgs()),
          [&](OpBuilder &lb, Location, Value iv, ValueRange args) {
            mapping.map(loop.getInductionVar(), iv);
            mapping.map(loop.getRegionIterArgs(), args);
            for (Operation &inner : loop.getBody()->without_terminator())
              convertOp(lb, &inner, /*cloneOthers=*/true);
            scf::YieldOp::create(
                lb, loc,
                mapped(loop.getBody()->getTerminator()->getOperands()));
          });
      mapping.map(loop.getResults(), rebuilt.getResults());
      return;
    }
    if (auto branch = dyn_cast<scf::IfOp>(op); branch && isConverted(op)) {
      auto rebuilt = scf::IfOp::create(
          b, loc, mapping.lookupOrDefault(branch.getCondition()),
          /*withElseRegion=*/!branch.getElseRegion().empty());
      for (auto [from, to] :
           llvm::zip(branch->getRegions(), rebuilt->getRegions())) {
        if (from.empty())
          continue;
        OpBuilder inner(to.front().getTerminator());
        for (Operation &nested : from.front().without_terminator())
          convertOp(inner, &nested, /*cloneOthers=*/true);
      }
      return;
    }
    assert(cloneOthers && "check() admits no other op with fragments");
    b.clone(*op, mapping);
  }

  gpu::LaunchOp launch;
  Value lane;
  /// Old values to new: fragments to this lane's parts, the rest as cloned.
  IRMapping mapping;
};

struct GpuMmaPass : flashnorm::impl::GpuMmaBase<GpuMmaPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation()->walk([&](gpu::LaunchOp launch) {
      if (launch
              ->walk(
                  [](vector::ContractionOp) { return WalkResult::interrupt(); })
              .wasInterrupted())
        launches.push_back(launch);
    });
    // Every kernel checked before any changes.
    SmallVector<TensorKernel> kernels;
    for (gpu::LaunchOp launch : launches) {
      std::string why;
      if (failed(kernels.emplace_back(launch).check(why))) {
        launch.emitError() << "flashnorm-gpu-mma: a tensor-core kernel it "
                              "cannot convert: "
                           << why;
        return signalPassFailure();
      }
    }
    for (TensorKernel &kernel : kernels)
      kernel.convert();
  }
};
} // namespace
