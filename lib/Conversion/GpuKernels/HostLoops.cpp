//===- HostLoops.cpp - Host code that touches device buffers as kernels ---===//
//
// What importers write besides linalg stays as host code after
// bufferization: a PyTorch importer's in-place KV-cache update is an
// `scf.for` nest of `memref.load` / `memref.store` into the cache argument's
// buffer. In a device function every buffer lives on the device, so such
// code must run there too, in its place in the program's order (the stream
// keeps it between the kernels before and after it).
//
// A loop nest whose iterations are independent becomes a parallel kernel:
// perfectly nested `scf.for`s without results, bounds defined outside the
// nest, a body of loads, stores and pure ops in which each store writes
// its own buffer at indices that hold every induction variable of the nest
// in its own position (`iv` or `iv +- c`, c defined outside), and no load
// reads a buffer the nest writes, each store through a view whose distinct
// indices are distinct elements. Distinct iterations then write distinct
// elements and read nothing written: any order is the sequential one.
// Anything else that touches memory runs as it is on one GPU thread.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "flashnorm/Analysis/HappensBefore.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flashnorm-gpu-kernels"

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

// flashnorm-gpu-streams turns these into device memory management, copies
// or the token graph, or they touch no device memory.
bool kernels::isHostOp(Operation *op) {
  return isMemoryEffectFree(op) || reachesNoBuffer(op) ||
         isa<gpu::LaunchOp, memref::AllocOp, memref::AllocaOp,
             memref::DeallocOp, memref::CopyOp, memref::GetGlobalOp,
             ViewLikeOpInterface, memref::CastOp, memref::DimOp,
             async::ExecuteOp, async::AwaitOp, func::ReturnOp, CallOpInterface,
             GemmLtOp>(op);
}

/// Whether `type`'s static strides and sizes map distinct indices to
/// distinct elements: ordered by stride, each dimension of more than one
/// element steps past the whole extent of the ones inside it.
static bool hasDisjointStrides(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  SmallVector<std::pair<int64_t, int64_t>> dims; // (stride, size)
  for (auto [stride, size] : llvm::zip(strides, type.getShape())) {
    if (ShapedType::isDynamic(size))
      return false;
    if (size == 1)
      continue;
    if (ShapedType::isDynamic(stride) || stride < 1)
      return false;
    dims.push_back({stride, size});
  }
  llvm::sort(dims);
  int64_t extent = 1;
  for (auto [stride, size] : dims) {
    if (stride < extent)
      return false;
    extent = stride * size;
  }
  return true;
}

/// Whether distinct indices of the view `buffer` may address one element.
/// Views that keep elements apart (subviews of positive strides, casts,
/// reshapes, transposes) of a buffer allocated or bufferized as a tensor
/// keep them apart; `memref.reinterpret_cast` (any strides) or a function
/// argument of unknown strides may not.
static bool mayOverlap(Value buffer) {
  while (true) {
    auto type = dyn_cast<MemRefType>(buffer.getType());
    if (!type)
      return true;
    if (type.getLayout().isIdentity() || hasDisjointStrides(type))
      return false;
    Operation *def = buffer.getDefiningOp();
    if (auto subview = dyn_cast_or_null<memref::SubViewOp>(def)) {
      if (llvm::any_of(subview.getStaticStrides(), [](int64_t s) {
            return ShapedType::isDynamic(s) || s < 1;
          }))
        return true;
    } else if (!isa_and_nonnull<memref::CastOp, memref::ExpandShapeOp,
                                memref::CollapseShapeOp, memref::TransposeOp>(
                   def)) {
      return !isa_and_nonnull<memref::AllocOp, memref::AllocaOp,
                              bufferization::ToBufferOp>(def);
    }
    buffer = def->getOperand(0);
  }
}

/// Whether `v` is defined outside `nest` (above it).
static bool isDefinedOutside(Value v, scf::ForOp nest) {
  return !nest->isAncestor(v.getParentBlock()->getParentOp());
}

/// Whether `index` is `iv`, `iv + c`, `c + iv` or `iv - c` with `c` defined
/// outside `nest`: distinct values of `iv` give distinct indices.
static bool isShiftOf(Value index, Value iv, scf::ForOp nest) {
  if (index == iv)
    return true;
  Operation *def = index.getDefiningOp();
  if (auto add = dyn_cast_or_null<arith::AddIOp>(def))
    return (add.getLhs() == iv && isDefinedOutside(add.getRhs(), nest)) ||
           (add.getRhs() == iv && isDefinedOutside(add.getLhs(), nest));
  if (auto sub = dyn_cast_or_null<arith::SubIOp>(def))
    return sub.getLhs() == iv && isDefinedOutside(sub.getRhs(), nest);
  return false;
}

/// The loops of the nest rooted at `outer` that can run as one parallel
/// loop, outermost first, or why not.
static FailureOr<SmallVector<scf::ForOp>> parallelNest(scf::ForOp outer,
                                                       std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  // Perfectly nested loops: each body is pure ops and at most one loop.
  SmallVector<scf::ForOp> nest{outer};
  while (true) {
    scf::ForOp loop = nest.back();
    if (loop.getNumResults() != 0)
      return fail("a loop carries values");
    for (Value bound :
         {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
      if (!isDefinedOutside(bound, outer))
        return fail("a loop's bounds depend on the nest");
    scf::ForOp inner;
    unsigned loops = 0;
    bool effects = false;
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (auto f = dyn_cast<scf::ForOp>(op)) {
        inner = f;
        ++loops;
      } else if (!isMemoryEffectFree(&op) || op.getNumRegions()) {
        effects = true;
      }
    }
    if (loops != 1 || effects)
      break;
    nest.push_back(inner);
  }
  // The innermost body: loads, stores and pure ops.
  SmallVector<memref::StoreOp> stores;
  SmallVector<memref::LoadOp> loads;
  for (Operation &op : nest.back().getBody()->without_terminator()) {
    if (auto store = dyn_cast<memref::StoreOp>(op))
      stores.push_back(store);
    else if (auto load = dyn_cast<memref::LoadOp>(op))
      loads.push_back(load);
    else if (!isMemoryEffectFree(&op) || op.getNumRegions())
      return fail("its body does more than load, store and compute");
  }
  if (stores.empty())
    return fail("it stores nothing");
  for (auto [i, store] : llvm::enumerate(stores)) {
    Value root = HappensBefore::getRoot(store.getMemRef());
    if (!isKnownRoot(root))
      return fail("it stores into a buffer of unknown origin");
    if (mayOverlap(store.getMemRef()))
      return fail("its stores go through a view whose elements may "
                  "overlap");
    for (memref::StoreOp other : ArrayRef(stores).drop_front(i + 1))
      if (mayAliasRoots(root, HappensBefore::getRoot(other.getMemRef())))
        return fail("two stores write one buffer");
    for (memref::LoadOp load : loads)
      if (mayAliasRoots(root, HappensBefore::getRoot(load.getMemRef())))
        return fail("it reads a buffer it writes");
    // Each induction variable in an index position of its own.
    llvm::SmallBitVector taken(store.getIndices().size());
    for (scf::ForOp loop : nest) {
      bool placed = false;
      for (auto [position, index] : llvm::enumerate(store.getIndices()))
        if (!taken[position] &&
            isShiftOf(index, loop.getInductionVar(), outer)) {
          taken.set(position);
          placed = true;
          break;
        }
      if (!placed)
        return fail("iterations may store to the same element");
    }
  }
  return nest;
}

FailureOr<HostLoopPlan> kernels::planHostLoop(Operation *op, std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  assert(!isHostOp(op) && "planned a host op");
  // A value the host uses next cannot come out of a kernel.
  if (op->getNumResults() != 0)
    return fail("'" + op->getName().getStringRef() +
                "' makes a value the host uses");
  if (op->walk([](gpu::LaunchOp) {
          return WalkResult::interrupt();
        }).wasInterrupted())
    return fail("it launches kernels itself");
  HostLoopPlan plan{op, {}, ""};
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    FailureOr<SmallVector<scf::ForOp>> nest =
        parallelNest(loop, plan.serialWhy);
    if (succeeded(nest))
      plan.nest = std::move(*nest);
  } else {
    plan.serialWhy = "it is not a loop";
  }
  LLVM_DEBUG(llvm::dbgs() << "host op " << op->getName() << " at "
                          << op->getLoc() << ": "
                          << (plan.nest.empty()
                                  ? "one thread, " + plan.serialWhy
                                  : "parallel")
                          << "\n");
  return plan;
}

LogicalResult kernels::buildHostLoop(KernelBuilder &builder,
                                     const HostLoopPlan &plan) {
  Operation *op = plan.op;
  OpBuilder b(op);
  Location loc = op->getLoc();
  if (plan.nest.empty()) {
    // As it is, on one thread.
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
    b.setInsertionPointToStart(&launch.getBody().front());
    op->moveBefore(gpu::TerminatorOp::create(b, loc));
    builder.name(launch, "host_op");
    return success();
  }
  // One parallel loop over the nest's iterations; the pure ops between the
  // loops are cloned into its body with the innermost one's.
  SmallVector<Value> lbs, ubs, steps;
  for (scf::ForOp loop : plan.nest) {
    lbs.push_back(loop.getLowerBound());
    ubs.push_back(loop.getUpperBound());
    steps.push_back(loop.getStep());
  }
  auto parallel = scf::ParallelOp::create(
      b, loc, lbs, ubs, steps, [&](OpBuilder &nb, Location, ValueRange ivs) {
        IRMapping map;
        for (auto [depth, iv] : llvm::enumerate(ivs))
          map.map(scf::ForOp(plan.nest[depth]).getInductionVar(), iv);
        for (unsigned depth = 0; depth < plan.nest.size(); ++depth) {
          scf::ForOp loop = plan.nest[depth];
          for (Operation &inner : loop.getBody()->without_terminator())
            if (depth + 1 == plan.nest.size() ||
                &inner != scf::ForOp(plan.nest[depth + 1]).getOperation())
              nb.clone(inner, map);
        }
      });
  op->erase();
  return builder.launchParallel(parallel, "host_loop");
}
