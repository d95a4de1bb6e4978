//===- MLProgramToMemRef.cpp - Checkpoint globals to memref globals -------===//
//
// Real compilers keep weights out of the IR: `ml_program.global` with
// `#ml_program.extern` names a checkpoint tensor, and the program reads it
// with `ml_program.global_load_const`. Upstream bufferizes globals that
// carry a value and their `global_load`s, but neither extern globals nor
// `global_load_const`. This pass lowers the immutable ones while the program
// is still on tensors: a `memref.global` constant (an external declaration
// for extern ones, whose data the runner provides by name) and a read-only
// `to_tensor restrict` of its `memref.get_global` for each load, which
// one-shot bufferization copies before any in-place write.
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
    // Plan: the immutable globals with tensor types, and every load of
    // them; refuse what cannot be lowered before touching anything.
    llvm::StringMap<ml_program::GlobalOp> globals;
    bool failedAny = false;
    for (auto global : module.getOps<ml_program::GlobalOp>()) {
      auto type = dyn_cast<RankedTensorType>(global.getType());
      bool external = isa_and_nonnull<ml_program::ExternAttr>(
          global.getValue().value_or(Attribute()));
      if (global.getIsMutable()) {
        if (external) {
          global.emitError("a mutable extern global cannot be lowered (its "
                           "initial value is in the checkpoint)");
          failedAny = true;
        }
        continue;
      }
      if (!type || !type.hasStaticShape()) {
        global.emitError("a global needs a statically shaped tensor type");
        failedAny = true;
        continue;
      }
      if (!global.getValue() ||
          (!external && !isa<ElementsAttr>(*global.getValue()))) {
        global.emitError("an immutable global needs a value or "
                         "#ml_program.extern");
        failedAny = true;
        continue;
      }
      globals[global.getSymName()] = global;
    }
    if (failedAny)
      return signalPassFailure();

    // The loads of those globals, by what they resolve to: a load in a
    // nested module names that module's globals, which stay as they are.
    SmallVector<Operation *> loads;
    module.walk([&](Operation *op) {
      ml_program::GlobalOp global = getLoadedGlobal(op);
      if (global && globals.lookup(global.getSymName()) == global)
        loads.push_back(op);
    });

    OpBuilder b(module.getContext());
    for (auto &entry : globals) {
      ml_program::GlobalOp global = entry.second;
      auto type = cast<RankedTensorType>(global.getType());
      auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
      b.setInsertionPoint(global);
      Attribute value = *global.getValue();
      bool external = isa<ml_program::ExternAttr>(value);
      // An external declaration must be public: LLVM rejects a private
      // global without an initializer.
      memref::GlobalOp::create(
          b, global.getLoc(), global.getSymName(),
          external ? StringAttr() : b.getStringAttr("private"), memrefType,
          external ? Attribute() : value, /*constant=*/true,
          /*alignment=*/IntegerAttr());
    }
    for (Operation *load : loads) {
      b.setInsertionPoint(load);
      auto type = cast<RankedTensorType>(load->getResult(0).getType());
      SymbolRefAttr name =
          isa<ml_program::GlobalLoadConstOp>(load)
              ? cast<ml_program::GlobalLoadConstOp>(load).getGlobal()
              : cast<ml_program::GlobalLoadOp>(load).getGlobal();
      Value buffer = memref::GetGlobalOp::create(
          b, load->getLoc(),
          MemRefType::get(type.getShape(), type.getElementType()),
          name.getLeafReference());
      Value tensor = bufferization::ToTensorOp::create(
          b, load->getLoc(), type, buffer, /*restrict=*/true,
          /*writable=*/false);
      load->getResult(0).replaceAllUsesWith(tensor);
      load->erase();
    }
    for (auto &entry : globals)
      entry.second->erase();
  }
};
} // namespace
