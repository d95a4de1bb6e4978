//===- HappensBefore.h - Order of GPU work in a host function ---*- C++ -*-===//
//
// The one happens-before analysis over the gpu dialect's async token graph
// (docs/MATH.md §5, §6). It answers "does A finish before B starts?" for the
// operations of one host function, and lists every buffer access (kernels,
// copies, sets, allocations, frees and host ops), so a verifier can prove
// that conflicting accesses are ordered.
//
// Ordering comes from two sources: token dependencies (`[%t]` lists, joins
// and forks through `gpu.wait async`) and the host: a host `gpu.wait [%t]`
// completes %t's work before anything the host issues later, and a
// synchronous op completes before the host goes on.
//
// Beside it, the memory effects it is built from, which the passes share:
// an op's on buffers (forEachMemoryEffect), whether two buffers may alias,
// and a call's on the globals its callees name (CallEffects, a summary of
// the module, built where no other thread rewrites a function).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_ANALYSIS_HAPPENSBEFORE_H
#define FLASHNORM_ANALYSIS_HAPPENSBEFORE_H

#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>

namespace mlir::flashnorm {

/// One access of an operation to a buffer.
struct BufferAccess {
  enum class Kind { Read, Write, Alloc, Free };
  Operation *op;
  /// The value the op names, and the allocation or argument it views.
  Value buffer, root;
  Kind kind;

  bool isWrite() const { return kind != Kind::Read; }
};

/// Calls `fn` for each memory effect on a memref of the ops nested in
/// `root` (root included). Ops whose effects are unknown read and write
/// every memref operand; a returned buffer is read.
void forEachMemoryEffect(Operation *root,
                         function_ref<void(Value, BufferAccess::Kind)> fn);

/// One access of a function (or of one it calls) to a global, named by
/// its symbol rather than by a value in the function's body, so that it
/// stays true while the function is rewritten.
struct GlobalAccess {
  StringAttr global;
  /// The global's device copy (`flashnorm.resident`), not the host one.
  bool resident;
  /// A host global the program may write (isWritableGlobal).
  bool writable;
  BufferAccess::Kind kind;
};

/// What each function of a module, and the functions it calls, does to the
/// globals they name: what a call does besides its effects on the buffers
/// it passes.
///
/// Built at module scope, before a pass rewrites any function. A pass that
/// works function by function may not read another function's body: the
/// pass manager runs it on several functions at once, and the callee may be
/// under rewrite on another thread. So the passes that ask what a call does
/// (which functions the GPU lowering takes, whether a task may run beside a
/// call) are module passes that build this first and then rewrite one
/// function at a time; every function is judged on the program as it came
/// in, whatever order they are rewritten in.
class CallEffects {
public:
  /// Summarizes the functions directly in `module`.
  explicit CallEffects(Operation *module);

  /// What `call`'s callee, and the functions it calls, do to the globals
  /// they name. Fails where one of them has no body to read, or is not a
  /// function of the module (it may touch any global its symbol can
  /// reach).
  FailureOr<ArrayRef<GlobalAccess>> lookup(CallOpInterface call) const;

private:
  /// Per function with a body whose callees all have one, its accesses.
  DenseMap<Operation *, SmallVector<GlobalAccess>> known;
};

/// Whether the buffer `root` (from HappensBefore::getRoot) may be the
/// global `access` names: as mayAliasRoots, for a global known by name.
bool mayAliasGlobal(Value root, const GlobalAccess &access);

/// Whether `op` can reach no buffer, whatever its effects: no region, and
/// no buffer or pointer among its operands and results (a print of a host
/// value, an assertion). Such an op stays on the host in a device function.
bool reachesNoBuffer(Operation *op);

/// Whether `root` is a host global the program may write (a `get_global`
/// of one that is not `constant`): a caller may pass it as an argument, a
/// callee may use it. (A kernel module's global is device memory no host
/// function is given.)
bool isWritableGlobal(Value root);

/// Whether `root` (from HappensBefore::getRoot) is memory we can name: a
/// block argument, an allocation or a global. Anything else (a select of two
/// buffers, a call's result) may be any buffer.
bool isKnownRoot(Value root);

/// Whether two roots may name overlapping memory: the same root, two globals
/// of one symbol, or a root of unknown origin. Distinct function arguments
/// are assumed not to alias (the contract of a bufferized function
/// boundary, like C's restrict).
bool mayAliasRoots(Value a, Value b);

/// Whether the ops nested in `op` may write (or free) the buffer `root` or
/// one aliasing it.
bool mayWrite(Operation *op, Value root);

class HappensBefore {
public:
  /// Analyzes the body of `function` (a single-block function-like op).
  explicit HappensBefore(Operation *function);

  /// Why the function cannot be analyzed (GPU ops in nested regions or
  /// several blocks), if it cannot.
  const std::optional<std::string> &getUnsupportedReason() const {
    return unsupported;
  }

  /// Whether `a` completes before `b` starts.
  bool happensBefore(Operation *a, Operation *b) const;

  /// Every buffer access, in the order the host issues the ops.
  ArrayRef<BufferAccess> getAccesses() const { return accesses; }

  /// The allocation, global or argument that `buffer` views.
  static Value getRoot(Value buffer);

private:
  void visit(Operation *op);
  void collectAccesses(Operation *op);

  std::optional<std::string> unsupported;
  DenseMap<Operation *, unsigned> index;
  /// Per op, the ops that complete before it starts.
  SmallVector<llvm::BitVector> before;
  /// Ops complete at the host's current point.
  llvm::BitVector done;
  SmallVector<BufferAccess> accesses;
};

} // namespace mlir::flashnorm

#endif
