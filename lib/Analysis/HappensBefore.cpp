//===- HappensBefore.cpp - Order of GPU work in a host function -----------===//

#include "flashnorm/Analysis/HappensBefore.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::flashnorm;

using Kind = BufferAccess::Kind;

Value HappensBefore::getRoot(Value buffer) {
  while (Operation *def = buffer.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      buffer = view.getViewSource();
    else if (auto cast = dyn_cast<memref::CastOp>(def))
      buffer = cast.getSource();
    else
      break;
  }
  return buffer;
}

/// The global a root names and whether it is the global's device copy
/// (`flashnorm.resident`, one per process: every resident of a global is the
/// same buffer, distinct from the host one).
static std::optional<std::pair<StringRef, bool>> namedGlobal(Value root) {
  if (auto global = root.getDefiningOp<memref::GetGlobalOp>())
    return std::make_pair(global.getName(), false);
  if (auto resident = root.getDefiningOp<ResidentOp>())
    if (auto global = HappensBefore::getRoot(resident.getHost())
                          .getDefiningOp<memref::GetGlobalOp>())
      return std::make_pair(global.getName(), true);
  return std::nullopt;
}

bool flashnorm::reachesNoBuffer(Operation *op) {
  auto isAddress = [](Type type) {
    return isa<BaseMemRefType, LLVM::LLVMPointerType>(type);
  };
  return op->getNumRegions() == 0 &&
         llvm::none_of(op->getOperandTypes(), isAddress) &&
         llvm::none_of(op->getResultTypes(), isAddress);
}

/// A function's (entry-block) argument.
static bool isFunctionArgument(Value root) {
  auto arg = dyn_cast<BlockArgument>(root);
  return arg && arg.getOwner()->isEntryBlock() &&
         isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
}

bool flashnorm::isKnownRoot(Value root) {
  // Function arguments, and a kernel's own workgroup (attributions, its
  // dynamic shared memory) and private buffers (they alias nothing outside
  // it); a loop's memref iter_arg is any of its values.
  if (auto arg = dyn_cast<BlockArgument>(root)) {
    Operation *owner = arg.getOwner()->getParentOp();
    if (auto launch = dyn_cast<gpu::LaunchOp>(owner))
      return llvm::is_contained(launch.getWorkgroupAttributions(), arg) ||
             llvm::is_contained(launch.getPrivateAttributions(), arg);
    return isFunctionArgument(arg);
  }
  return isa_and_nonnull<gpu::AllocOp, gpu::DynamicSharedMemoryOp,
                         memref::AllocOp, memref::AllocaOp>(
             root.getDefiningOp()) ||
         namedGlobal(root);
}

bool flashnorm::isWritableGlobal(Value root) {
  auto get = root.getDefiningOp<memref::GetGlobalOp>();
  if (!get || get->getParentOfType<gpu::GPUModuleOp>())
    return false;
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      get, get.getNameAttr());
  return !global || !global.getConstant();
}

bool flashnorm::mayAliasRoots(Value a, Value b) {
  if (a == b || !isKnownRoot(a) || !isKnownRoot(b))
    return true;
  auto globalA = namedGlobal(a), globalB = namedGlobal(b);
  if (globalA && globalB)
    return *globalA == *globalB;
  return (isFunctionArgument(a) && isWritableGlobal(b)) ||
         (isFunctionArgument(b) && isWritableGlobal(a));
}

bool flashnorm::mayWrite(Operation *op, Value root) {
  bool writes = false;
  forEachMemoryEffect(op, [&](Value value, Kind kind) {
    writes |= kind != Kind::Read &&
              mayAliasRoots(HappensBefore::getRoot(value), root);
  });
  return writes;
}

void flashnorm::forEachMemoryEffect(Operation *root,
                                    function_ref<void(Value, Kind)> fn) {
  root->walk([&](Operation *op) {
    // A buffer's address escapes: what is done through it is not seen.
    if (auto pointer = dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(op)) {
      fn(pointer.getSource(), Kind::Read);
      fn(pointer.getSource(), Kind::Write);
      return;
    }
    if (auto iface = dyn_cast<MemoryEffectOpInterface>(op)) {
      SmallVector<MemoryEffects::EffectInstance> effects;
      iface.getEffects(effects);
      for (MemoryEffects::EffectInstance &effect : effects) {
        Value value = effect.getValue();
        if (!value || !isa<BaseMemRefType>(value.getType()))
          continue;
        MemoryEffects::Effect *e = effect.getEffect();
        fn(value, isa<MemoryEffects::Read>(e)       ? Kind::Read
                  : isa<MemoryEffects::Allocate>(e) ? Kind::Alloc
                  : isa<MemoryEffects::Free>(e)     ? Kind::Free
                                                    : Kind::Write);
      }
      return;
    }
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return;
    // A returned buffer is read by the caller.
    bool returns = op->hasTrait<OpTrait::ReturnLike>();
    for (Value operand : op->getOperands()) {
      if (!isa<BaseMemRefType>(operand.getType()))
        continue;
      fn(operand, Kind::Read);
      if (!returns)
        fn(operand, Kind::Write);
    }
  });
}

/// What a kernel does to memory shared with other work.
struct KernelEffects {
  /// Per kernel argument, whether the kernel reads and whether it writes it.
  SmallVector<std::pair<bool, bool>> arguments;
  /// Globals the kernel names (`memref.get_global` in its body).
  SmallVector<std::pair<Value, Kind>> globals;
};

/// Unknown kernels (not found, or already lowered) read and write every
/// argument.
static KernelEffects getKernelEffects(Operation *kernel, unsigned n) {
  KernelEffects effects;
  auto fn = dyn_cast_or_null<gpu::GPUFuncOp>(kernel);
  if (!fn || fn.getNumArguments() != n) {
    effects.arguments.assign(n, {true, true});
    return effects;
  }
  effects.arguments.assign(n, {false, false});
  forEachMemoryEffect(fn, [&](Value value, Kind kind) {
    Value root = HappensBefore::getRoot(value);
    auto arg = dyn_cast<BlockArgument>(root);
    if (arg && arg.getOwner() == &fn.getBody().front()) {
      // Past the arguments: workgroup and private attributions, its own.
      if (arg.getArgNumber() < n) {
        auto &[reads, writes] = effects.arguments[arg.getArgNumber()];
        (kind == Kind::Read ? reads : writes) = true;
      }
      return;
    }
    if (namedGlobal(root)) {
      effects.globals.push_back({value, kind});
      return;
    }
    // Memory the kernel allocates is its own; anything else may be any of
    // its arguments.
    if (isKnownRoot(root))
      return;
    for (auto &[reads, writes] : effects.arguments)
      (kind == Kind::Read ? reads : writes) = true;
  });
  return effects;
}

/// What `fn` and the functions it calls do to globals they name (a
/// call's effects besides those on the buffers it passes), each function
/// once. Fails where a callee has no body to read.
static LogicalResult
collectGlobalEffects(Operation *fn, llvm::SmallPtrSetImpl<Operation *> &seen,
                     SmallVectorImpl<std::pair<Value, Kind>> &effects) {
  auto function = dyn_cast_or_null<FunctionOpInterface>(fn);
  if (!fn || (function && function.isExternal()))
    return failure();
  if (!seen.insert(fn).second)
    return success();
  forEachMemoryEffect(fn, [&](Value value, Kind kind) {
    if (namedGlobal(HappensBefore::getRoot(value)))
      effects.push_back({value, kind});
  });
  bool known = true;
  fn->walk([&](CallOpInterface call) {
    known &=
        succeeded(collectGlobalEffects(call.resolveCallable(), seen, effects));
  });
  return success(known);
}

/// Calls `fn` for what `call` does to the globals its callee, and the
/// functions that calls, name; fails where one has no body. It reads the
/// callees' bodies: only at module scope (HappensBefore is built by
/// flashnorm-verify-async, a module pass; function passes ask CallEffects).
static LogicalResult
forEachGlobalEffectOfCall(CallOpInterface call,
                          function_ref<void(Value, Kind)> fn) {
  llvm::SmallPtrSet<Operation *, 4> seen;
  SmallVector<std::pair<Value, Kind>> effects;
  LogicalResult known =
      collectGlobalEffects(call.resolveCallable(), seen, effects);
  for (auto [global, kind] : effects)
    fn(global, kind);
  return known;
}

CallEffects::CallEffects(Operation *module) {
  for (Region &region : module->getRegions())
    for (Block &block : region)
      for (Operation &fn : block) {
        if (!isa<FunctionOpInterface>(fn))
          continue;
        llvm::SmallPtrSet<Operation *, 4> seen;
        SmallVector<std::pair<Value, Kind>> effects;
        if (failed(collectGlobalEffects(&fn, seen, effects)))
          continue;
        SmallVector<GlobalAccess> &accesses = known[&fn];
        for (auto [value, kind] : effects) {
          Value root = HappensBefore::getRoot(value);
          auto [name, resident] = *namedGlobal(root);
          accesses.push_back({StringAttr::get(fn.getContext(), name), resident,
                              isWritableGlobal(root), kind});
        }
      }
}

FailureOr<ArrayRef<GlobalAccess>>
CallEffects::lookup(CallOpInterface call) const {
  auto it = known.find(call.resolveCallable());
  if (it == known.end())
    return failure();
  return ArrayRef<GlobalAccess>(it->second);
}

bool flashnorm::mayAliasGlobal(Value root, const GlobalAccess &access) {
  if (!isKnownRoot(root))
    return true;
  if (auto global = namedGlobal(root))
    return global->first == access.global.getValue() &&
           global->second == access.resident;
  return isFunctionArgument(root) && access.writable;
}

HappensBefore::HappensBefore(Operation *function) {
  Region &body = function->getRegion(0);
  if (!body.hasOneBlock()) {
    unsupported = "the host code has several blocks; only straight-line "
                  "host code is analyzed";
    return;
  }
  Block &block = body.front();
  for (Operation &op : block) {
    if (isa<gpu::LaunchOp>(op))
      continue;
    WalkResult nested = op.walk([&](Operation *inner) {
      if (inner == &op || (!isa<gpu::GPUDialect>(inner->getDialect()) &&
                           !isa<gpu::AsyncOpInterface>(inner)))
        return WalkResult::advance();
      return WalkResult::interrupt();
    });
    if (nested.wasInterrupted()) {
      unsupported = "'" + op.getName().getStringRef().str() + "' at " +
                    formatLoc(op.getLoc()) +
                    " holds GPU operations; only straight-line host code is "
                    "analyzed";
      return;
    }
    // Work this analysis cannot order: host tasks running beside the host
    // code, and GPU work a callee issues on a token it is given.
    auto isToken = [](Type t) { return isa<gpu::AsyncTokenType>(t); };
    if (isa<async::ExecuteOp>(op))
      unsupported = "'async.execute' at " + formatLoc(op.getLoc()) +
                    " runs host code concurrently with it";
    else if (isa<CallOpInterface>(op) &&
             (llvm::any_of(op.getOperandTypes(), isToken) ||
              llvm::any_of(op.getResultTypes(), isToken)))
      unsupported = "the call at " + formatLoc(op.getLoc()) +
                    " passes GPU tokens; only straight-line host code is "
                    "analyzed";
    if (unsupported)
      return;
  }
  unsigned n = 0;
  for (Operation &op : block)
    index[&op] = n++;
  before.assign(n, llvm::BitVector(n));
  done.resize(n);
  for (Operation &op : block) {
    visit(&op);
    collectAccesses(&op);
  }
}

void HappensBefore::visit(Operation *op) {
  unsigned i = index.lookup(op);
  llvm::BitVector &mine = before[i];
  // Work is issued by the host: whatever the host has seen complete is
  // complete before it starts.
  mine = done;
  auto addDependency = [&](Value token, llvm::BitVector &into) {
    Operation *def = token.getDefiningOp();
    auto it = def ? index.find(def) : index.end();
    // A token from elsewhere orders nothing we can see.
    if (it == index.end())
      return;
    into |= before[it->second];
    into.set(it->second);
  };
  auto async = dyn_cast<gpu::AsyncOpInterface>(op);
  if (async)
    for (Value token : async.getAsyncDependencies())
      addDependency(token, mine);
  if (async && async.getAsyncToken())
    return; // Runs asynchronously: completes when its token says.
  // Anything else, a GPU op without a token included, completes before the
  // host goes on (upstream lowers such a launch with a synchronize); a host
  // wait also completes the work of its tokens.
  if (auto wait = dyn_cast<gpu::WaitOp>(op))
    for (Value token : wait.getAsyncDependencies())
      addDependency(token, done);
  done.set(i);
}

void HappensBefore::collectAccesses(Operation *op) {
  auto add = [&](Value buffer, Kind kind) {
    accesses.push_back({op, buffer, getRoot(buffer), kind});
  };
  if (isa<gpu::WaitOp>(op))
    return;
  if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
    ValueRange args = launch.getKernelOperands();
    Operation *kernel =
        SymbolTable::lookupNearestSymbolFrom(op, launch.getKernel());
    KernelEffects effects = getKernelEffects(kernel, args.size());
    for (auto [arg, effect] : llvm::zip(args, effects.arguments)) {
      if (!isa<BaseMemRefType>(arg.getType()))
        continue;
      if (effect.first)
        add(arg, Kind::Read);
      if (effect.second)
        add(arg, Kind::Write);
    }
    for (auto [global, kind] : effects.globals)
      add(global, kind);
    return;
  }
  if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
    // Only buffers from outside the launch are shared with other work:
    // what it allocates itself, not a buffer it selects or transposes.
    forEachMemoryEffect(op, [&](Value value, Kind kind) {
      Value root = getRoot(value);
      if (!isKnownRoot(root) ||
          !launch->isAncestor(root.getParentRegion()->getParentOp()))
        add(value, kind);
    });
    return;
  }
  // Views name memory without touching it.
  if (isa<ViewLikeOpInterface, memref::CastOp>(op))
    return;
  // What a callee does to the globals it names.
  // (Of a callee without a body, only the effects on the buffers it
  // passes are known, below.)
  if (auto call = dyn_cast<CallOpInterface>(op))
    (void)forEachGlobalEffectOfCall(call, add);
  forEachMemoryEffect(op, add);
}

bool HappensBefore::happensBefore(Operation *a, Operation *b) const {
  auto ia = index.find(a), ib = index.find(b);
  if (ia == index.end() || ib == index.end())
    return false;
  return before[ib->second].test(ia->second);
}
