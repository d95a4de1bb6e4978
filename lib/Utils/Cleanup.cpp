#include "flashnorm/Utils/Cleanup.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::flashnorm;

RewriteCleanup::RewriteCleanup(Operation *root) : root(root) {
  root->walk([&](Operation *op) {
    if (op != root && isOpTriviallyDead(op))
      deadBefore.insert(op);
  });
}

unsigned RewriteCleanup::eraseNewlyDead() {
  // Post-order: users before the ops they use, so a chain dies in one walk;
  // erasing an op may kill its operands' producers, which are revisited.
  llvm::SetVector<Operation *> worklist;
  root->walk([&](Operation *op) {
    if (op != root && !deadBefore.contains(op) && isOpTriviallyDead(op))
      worklist.insert(op);
  });
  unsigned erased = 0;
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!isOpTriviallyDead(op))
      continue;
    // Its operands, and what its regions read from above (a linalg body's
    // tensor.extract of a value outside).
    SmallVector<Operation *> producers;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && !op->isAncestor(def))
          producers.push_back(def);
    });
    // Ops nested in `op` go with it; none of them may stay queued.
    op->walk([&](Operation *nested) { worklist.remove(nested); });
    op->erase();
    ++erased;
    for (Operation *def : producers)
      if (!deadBefore.contains(def) && isOpTriviallyDead(def))
        worklist.insert(def);
  }
  return erased;
}
