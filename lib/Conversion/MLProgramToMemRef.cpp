//===- MLProgramToMemRef.cpp - ml_program globals to memref globals -------===//
//
// Real compilers keep weights out of the IR: `ml_program.global` with
// `#ml_program.extern` names a checkpoint tensor, and the program reads it
// with `ml_program.global_load_const`. Upstream bufferizes globals that
// carry a value and their `global_load`s, but neither extern globals nor
// `global_load_const`; and its `global_store` (MLIR 22) copies a fresh,
// uninitialized buffer into the global instead of the stored value (the
// stored operand is taken as not read, so its out-of-place copy is left
// empty): a stateful program's state became garbage. This pass lowers
// every global with a static tensor type while the program is still on
// tensors:
// - an immutable one becomes a `memref.global` constant (an external
//   declaration for extern ones, whose data the runner provides by name),
//   each load a read-only `to_tensor restrict` of its `memref.get_global`,
//   which one-shot bufferization copies before any in-place write;
// - a mutable one becomes a writable `memref.global`; each store a
//   `memref.copy` of the value's buffer (`to_buffer read_only`) into its
//   `get_global`, where the store stands; each load a snapshot of the
//   global (`alloc_tensor copy`) where the module stores into it, since a
//   later store writes the very memory a plain view would still read.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_MLPROGRAMTOMEMREF
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
struct MLProgramToMemRefPass
    : flashnorm::impl::MLProgramToMemRefBase<MLProgramToMemRefPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Plan: the globals with tensor types, and every load and store of
    // them; refuse what cannot be lowered before touching anything.
    SmallVector<ml_program::GlobalOp> order;
    llvm::DenseSet<ml_program::GlobalOp> globals;
    bool failedAny = false;
    for (auto global : module.getOps<ml_program::GlobalOp>()) {
      auto type = dyn_cast<RankedTensorType>(global.getType());
      Attribute value = global.getValue().value_or(Attribute());
      bool external = isa_and_nonnull<ml_program::ExternAttr>(value);
      if (global.getIsMutable() && external) {
        global.emitError("a mutable extern global cannot be lowered (its "
                         "initial value is in the checkpoint)");
        failedAny = true;
        continue;
      }
      if (!type || !type.hasStaticShape()) {
        global.emitError("a global needs a statically shaped tensor type");
        failedAny = true;
        continue;
      }
      // (A mutable global without a value starts uninitialized; the
      // verifier gives an immutable one a value.)
      if (value && !external && !isa<ElementsAttr>(value)) {
        global.emitError("a global's value must be elements or "
                         "#ml_program.extern");
        failedAny = true;
        continue;
      }
      order.push_back(global);
      globals.insert(global);
    }
    // (Resolved now: the lowered globals will share their names.)
    SmallVector<std::pair<Operation *, ml_program::GlobalOp>> accesses;
    llvm::DenseSet<ml_program::GlobalOp> stored;
    module.walk([&](Operation *op) {
      // (A nested module's globals stay as they are.)
      ml_program::GlobalOp global = getAccessedGlobal(op);
      if (!global || !globals.contains(global))
        return;
      // Nothing lowers the token-ordered forms.
      if (isa<ml_program::GlobalLoadGraphOp, ml_program::GlobalStoreGraphOp>(
              op)) {
        op->emitError("the graph form of a global's load or store cannot be "
                      "lowered");
        failedAny = true;
        return;
      }
      accesses.push_back({op, global});
      if (isa<ml_program::GlobalStoreOp>(op))
        stored.insert(global);
    });
    if (failedAny)
      return signalPassFailure();

    OpBuilder b(module.getContext());
    for (ml_program::GlobalOp global : order) {
      auto type = cast<RankedTensorType>(global.getType());
      auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
      b.setInsertionPoint(global);
      Attribute value = global.getValue().value_or(Attribute());
      bool external = isa_and_nonnull<ml_program::ExternAttr>(value);
      // An external declaration must be public: LLVM rejects a private
      // global without an initializer. A public mutable one stays public
      // (a host program may read the state by name).
      bool isPublic = external || (global.getIsMutable() && global.isPublic());
      auto lowered = memref::GlobalOp::create(
          b, global.getLoc(), global.getSymName(),
          isPublic ? StringAttr() : b.getStringAttr("private"), memrefType,
          external ? Attribute() : value, !global.getIsMutable(),
          /*alignment=*/IntegerAttr());
      if (!value)
        lowered.setInitialValueAttr(b.getUnitAttr());
    }
    for (auto [op, global] : accesses) {
      b.setInsertionPoint(op);
      auto type = cast<RankedTensorType>(global.getType());
      Value buffer = memref::GetGlobalOp::create(
          b, op->getLoc(),
          MemRefType::get(type.getShape(), type.getElementType()),
          global.getSymName());
      if (auto store = dyn_cast<ml_program::GlobalStoreOp>(op)) {
        // A copy where the store stands, from the value's buffer: a
        // materialize_in_destination would let empty-tensor elimination
        // compute the value into the global where it is computed, before
        // the loads between the two.
        Value value = bufferization::ToBufferOp::create(
            b, op->getLoc(), buffer.getType(), store.getValue(),
            /*readOnly=*/true);
        memref::CopyOp::create(b, op->getLoc(), value, buffer);
        op->erase();
        continue;
      }
      Value tensor = bufferization::ToTensorOp::create(
          b, op->getLoc(), type, buffer, /*restrict=*/true,
          /*writable=*/false);
      if (stored.contains(global))
        tensor = bufferization::AllocTensorOp::create(b, op->getLoc(), type,
                                                      ValueRange{}, tensor);
      op->getResult(0).replaceAllUsesWith(tensor);
      op->erase();
    }
    for (ml_program::GlobalOp global : order)
      global->erase();
  }
};
} // namespace
