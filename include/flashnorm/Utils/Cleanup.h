//===- Cleanup.h - Erase what a pass made dead, and nothing else ----------===//
//
// Passes here touch only what they rewrite (a compiler that links them keeps
// its own dead code, its own constants and its own op order). So no pass
// runs canonicalize, CSE or region DCE over a function; instead each takes
// note of the ops that are dead before it starts and, when it is done,
// erases the ops that are dead now and were not then: exactly the ones its
// rewrites cut off (an op that was live and is dead lost its last use to a
// rewrite).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_UTILS_CLEANUP_H
#define FLASHNORM_UTILS_CLEANUP_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::flashnorm {

class RewriteCleanup {
public:
  /// Notes the ops under `root` that are dead already.
  explicit RewriteCleanup(Operation *root);
  /// Erases the ops under `root` that are dead now and were live when the
  /// cleanup was created (and what only they used). Returns how many.
  unsigned eraseNewlyDead();

private:
  Operation *root;
  llvm::DenseSet<Operation *> deadBefore;
};

} // namespace mlir::flashnorm

#endif
