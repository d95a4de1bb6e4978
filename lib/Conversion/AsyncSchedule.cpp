//===- AsyncSchedule.cpp - Deferred norms on the async runtime (CPU) ------===//
//
// The CPU form of the two-stream design: the statistic (1/RMS or 1/std) and
// the projection of the raw input run as two async tasks and the post-scale
// waits for both (docs/MATH.md §2, §6). Marks are set on tensors, where the
// structure is visible, and the tasks are built after bufferization, where
// async regions can capture buffers.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Analysis/HappensBefore.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_ASYNCMARK
#define GEN_PASS_DEF_ASYNCSCHEDULE
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
constexpr StringLiteral kSchedulePass = "flashnorm-async-schedule";

void mark(Operation *op, int64_t group, AsyncRole role, int64_t pair = -1) {
  Builder b(op->getContext());
  op->setAttr(kAsyncGroupAttr, b.getI64IntegerAttr(group));
  op->setAttr(kAsyncRoleAttr, AsyncRoleAttr::get(op->getContext(), role));
  if (pair >= 0)
    op->setAttr(kAsyncPairAttr, b.getI64IntegerAttr(pair));
}

/// The bytes a statistic reads (its input), if its shape is static.
std::optional<int64_t> statisticBytes(Operation *stat) {
  auto type = dyn_cast<RankedTensorType>(stat->getOperand(0).getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return std::nullopt;
  return type.getNumElements() *
         llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

struct AsyncMarkPass : flashnorm::impl::AsyncMarkBase<AsyncMarkPass> {
  using AsyncMarkBase::AsyncMarkBase;
  void runOnOperation() override {
    if (minStatBytes < 0) {
      emitError(getOperation().getLoc())
          << "flashnorm-async-mark: min-stat-bytes must not be negative, not "
          << minStatBytes.getValue();
      return signalPassFailure();
    }
    PassReporter reporter(getOperation(), "flashnorm-async-mark");
    DenseMap<Operation *, int64_t> groups;
    llvm::DenseSet<Operation *> small;
    int64_t pairs = 0;
    getOperation().walk([&](Operation *post) {
      // (A centered post-scale's mean comes from its scale's op: a
      // LayerNorm's statistics are one op.)
      if (!isa<PostScaleOp, CenteredPostScaleOp>(post))
        return;
      Operation *stat = post->getOperand(1).getDefiningOp();
      if (!isa_and_nonnull<RMSInvOp, LayerInvOp, LayerStatsOp>(stat) ||
          small.contains(stat))
        return;
      // The cost rule: a task beside the projection pays only when the
      // statistic's work outweighs launching and joining it.
      if (std::optional<int64_t> bytes = statisticBytes(stat);
          bytes && *bytes < minStatBytes && !groups.count(stat)) {
        small.insert(stat);
        reporter.refused(stat, "kept serial: the statistic reads " +
                                   Twine(*bytes) +
                                   " bytes, below min-stat-bytes (its task "
                                   "would cost more than the overlap saves)");
        return;
      }
      auto [it, inserted] = groups.try_emplace(stat, groups.size());
      int64_t group = it->second;
      if (inserted)
        mark(stat, group, AsyncRole::stat);
      // The projection: the op producing the raw product, if it is one.
      Operation *proj = post->getOperand(0).getDefiningOp();
      if (proj && proj->getNumResults() == 1 && proj->getNumRegions() == 1 &&
          !proj->hasAttr(kAsyncGroupAttr)) {
        mark(proj, group, AsyncRole::proj, pairs);
        mark(post, group, AsyncRole::post, pairs++);
      } else {
        mark(post, group, AsyncRole::post);
      }
    });
  }
};

/// The ops of one group, in block order.
struct Group {
  SmallVector<Operation *> stat, proj, post;
};

struct AsyncSchedulePass
    : flashnorm::impl::AsyncScheduleBase<AsyncSchedulePass> {
  using AsyncScheduleBase::AsyncScheduleBase;

  void runOnOperation() override {
    // What calls do, known before any function is rewritten (a task must
    // not run beside a call that touches its buffers).
    CallEffects calls(getOperation());
    for (auto fn : llvm::to_vector(getOperation().getOps<func::FuncOp>()))
      runOnFunction(fn, calls);
  }

  void runOnFunction(func::FuncOp fn, const CallEffects &calls) {
    if (fn.isExternal() ||
        (deviceFunctionsOnly && !isGpuDeviceFunction(fn, calls)))
      return;
    PassReporter reporter(fn, kSchedulePass);
    llvm::MapVector<int64_t, Group> groups;
    fn.walk([&](Operation *op) {
      auto group = op->getAttrOfType<IntegerAttr>(kAsyncGroupAttr);
      std::optional<AsyncRole> role = getAsyncRole(op);
      if (!group || !role)
        return;
      Group &g = groups[group.getInt()];
      // A fused post-scale schedules as the post-scale.
      (*role == AsyncRole::stat   ? g.stat
       : *role == AsyncRole::proj ? g.proj
                                  : g.post)
          .push_back(op);
    });
    for (auto &[id, group] : groups) {
      // Ops that produce values (constants, allocations) stay where they
      // are; the work on buffers moves into the tasks.
      for (auto *ops : {&group.stat, &group.proj, &group.post})
        llvm::erase_if(*ops,
                       [](Operation *op) { return op->getNumResults() != 0; });
      if (!group.post.empty())
        adoptDeallocations(group.stat, group.post.front());
      schedule(group, reporter, calls);
    }
    // The marks have done their job.
    if (keepMarks)
      return;
    fn.walk([](Operation *op) {
      op->removeAttr(kAsyncGroupAttr);
      op->removeAttr(kAsyncRoleAttr);
      op->removeAttr(kAsyncPairAttr);
    });
  }

  /// A buffer only `task` uses is freed after the task's last use of it
  /// (buffer deallocation ran before the schedule): a free before `await`
  /// (where the task is awaited) moves into the task, else it would run
  /// while the task may still read the buffer; frees after it are safe.
  static void adoptDeallocations(SmallVector<Operation *> &task,
                                 Operation *await) {
    if (task.empty() || await->getBlock() != task.front()->getBlock())
      return;
    llvm::SmallPtrSet<Operation *, 16> inTask(task.begin(), task.end());
    // Whether every use of `buffer` (through views) is in the task.
    std::function<bool(Value, Operation *)> onlyTask = [&](Value buffer,
                                                           Operation *free) {
      return llvm::all_of(buffer.getUsers(), [&](Operation *user) {
        if (user == free || inTask.contains(user))
          return true;
        if (isa<ViewLikeOpInterface>(user) && user->getNumResults() == 1)
          return onlyTask(user->getResult(0), free);
        return false;
      });
    };
    Block *block = task.front()->getBlock();
    for (Operation &op : *block) {
      auto free = dyn_cast<memref::DeallocOp>(&op);
      if (!free || !free.getMemref().getDefiningOp<memref::AllocOp>() ||
          !task.back()->isBeforeInBlock(free) ||
          !free->isBeforeInBlock(await) || !onlyTask(free.getMemref(), free))
        continue;
      task.push_back(free);
      inTask.insert(free);
    }
  }

  static int64_t pairOf(Operation *op) {
    auto pair = op->getAttrOfType<IntegerAttr>(kAsyncPairAttr);
    return pair ? pair.getInt() : -1;
  }

  /// Moves `ops` (in order) into a new async.execute before `before`;
  /// returns its token.
  static Value outline(ArrayRef<Operation *> ops, Operation *before) {
    OpBuilder b(before);
    auto exec = async::ExecuteOp::create(
        b, ops.front()->getLoc(), TypeRange{}, ValueRange{}, ValueRange{},
        [&](OpBuilder &nb, Location loc, ValueRange) {
          async::YieldOp::create(nb, loc, ValueRange{});
        });
    Block &body = exec.getBodyRegion().front();
    for (Operation *op : ops)
      op->moveBefore(body.getTerminator());
    return exec.getToken();
  }

  /// Whether code the program does not show (an external function) may
  /// write the buffer `root`: anything but a constant global
  /// or a buffer the function allocated itself (taken to be kept by no
  /// earlier call).
  static bool mayBeWrittenElsewhere(Value root) {
    if (root.getDefiningOp<memref::GetGlobalOp>())
      return isWritableGlobal(root);
    return !root.getDefiningOp<memref::AllocOp>() &&
           !root.getDefiningOp<memref::AllocaOp>();
  }

  /// Whether an op after the start of `task` (in its block, not in it) and
  /// before `until` conflicts with it: one of the two writes a buffer the
  /// other uses (a call: through the globals its callees name too).
  static bool racesWithTask(ArrayRef<Operation *> task, Operation *until,
                            const CallEffects &calls) {
    SmallVector<std::pair<Value, bool>> uses; // root, written
    for (Operation *op : task)
      forEachMemoryEffect(op, [&](Value v, BufferAccess::Kind kind) {
        uses.push_back(
            {HappensBefore::getRoot(v), kind != BufferAccess::Kind::Read});
      });
    // From the task's first op: its ops move down to where the last stood.
    for (Operation *op = task.front()->getNextNode(); op && op != until;
         op = op->getNextNode()) {
      if (llvm::is_contained(task, op))
        continue;
      bool conflict = false;
      auto check = [&](BufferAccess::Kind kind,
                       function_ref<bool(Value)> mayAlias) {
        bool writes = kind != BufferAccess::Kind::Read;
        for (auto [taskRoot, taskWrites] : uses)
          conflict |= (writes || taskWrites) && mayAlias(taskRoot) &&
                      kind != BufferAccess::Kind::Alloc;
      };
      forEachMemoryEffect(op, [&](Value v, BufferAccess::Kind kind) {
        Value root = HappensBefore::getRoot(v);
        check(kind,
              [&](Value taskRoot) { return mayAliasRoots(root, taskRoot); });
      });
      // A call also touches the globals its callee names; one without a
      // body may write any memory its caller can name (an argument, a
      // global that is not constant), its own pointers to it included.
      if (auto call = dyn_cast<CallOpInterface>(op)) {
        FailureOr<ArrayRef<GlobalAccess>> globals = calls.lookup(call);
        if (failed(globals) &&
            llvm::any_of(uses, [&](const std::pair<Value, bool> &use) {
              return mayBeWrittenElsewhere(use.first);
            }))
          return true;
        for (const GlobalAccess &access :
             succeeded(globals) ? *globals : ArrayRef<GlobalAccess>())
          check(access.kind, [&](Value taskRoot) {
            return mayAliasGlobal(taskRoot, access);
          });
      }
      if (conflict)
        return true;
    }
    return false;
  }

  void schedule(Group &g, PassReporter &reporter,
                const CallEffects &calls) const {
    Operation *anchor = g.stat.empty() ? nullptr : g.stat.front();
    if (g.stat.empty() || g.post.empty())
      return;
    Block *block = anchor->getBlock();
    auto sameBlock = [&](ArrayRef<Operation *> ops) {
      return llvm::all_of(
          ops, [&](Operation *op) { return op->getBlock() == block; });
    };
    if (!sameBlock(g.stat) || !sameBlock(g.proj) || !sameBlock(g.post)) {
      reporter.refused(anchor, "kept serial: the statistic, projections and "
                               "post-scales are not in one block");
      return;
    }
    // The iterations of a parallel loop already run on the cores (OpenMP),
    // whose lowering wraps the body in a scope tasks cannot be inside.
    if (anchor->getParentOfType<scf::ForallOp>() ||
        anchor->getParentOfType<scf::ParallelOp>()) {
      reporter.refused(anchor, "kept serial: the group is in the body of a "
                               "parallel loop, whose iterations already run "
                               "on the cores");
      return;
    }
    // Results of ops moved into a region may only be used inside it (on
    // buffers, ops communicate through memory, not values).
    auto usedOutside = [](ArrayRef<Operation *> ops) {
      return llvm::any_of(ops, [&](Operation *op) {
        return llvm::any_of(op->getUsers(), [&](Operation *user) {
          return !llvm::is_contained(ops, user);
        });
      });
    };
    if (usedOutside(g.stat) ||
        llvm::any_of(g.proj, [&](Operation *p) { return usedOutside(p); })) {
      reporter.refused(anchor, "kept serial: an op of the group has results "
                               "used elsewhere (not bufferized?)");
      return;
    }
    // A task runs until its first await: what happens in between must not
    // write what it reads or touch what it writes (an in-place update of the
    // statistic's input would race with it).
    Operation *firstPost = g.post.front();
    if (racesWithTask(g.stat, firstPost, calls) ||
        (projectionTasks && llvm::any_of(g.proj, [&](Operation *proj) {
           auto post = llvm::find_if(
               g.post, [&](Operation *p) { return pairOf(p) == pairOf(proj); });
           return racesWithTask(proj, post == g.post.end() ? firstPost : *post,
                                calls);
         }))) {
      reporter.refused(anchor, "kept serial: an op before the post-scale "
                               "writes a buffer the statistic or a "
                               "projection uses");
      return;
    }
    // The statistic's task starts where its last op stood: its ops only move
    // down (past allocations and constants of their own), so everything they
    // read is defined, and nothing reads what they write before the awaits.
    Value statToken = outline(g.stat, g.stat.back()->getNextNode());
    // Each projection is a task of its own; its post-scale joins both.
    DenseMap<int64_t, Value> projTokens;
    if (projectionTasks)
      for (Operation *proj : g.proj)
        projTokens[pairOf(proj)] = outline(proj, proj->getNextNode());
    for (Operation *post : g.post) {
      OpBuilder b(post);
      async::AwaitOp::create(b, post->getLoc(), statToken);
      if (Value token = projTokens.lookup(pairOf(post)))
        async::AwaitOp::create(b, post->getLoc(), token);
    }
    reporter.applied(
        statToken.getDefiningOp(),
        "statistic" +
            (projectionTasks ? " and " + Twine(g.proj.size()) +
                                   " projection(s) run as async tasks"
                             : Twine(" runs as an async task")) +
            ", joined before " + Twine(g.post.size()) + " post-scale(s)");
  }
};
} // namespace
