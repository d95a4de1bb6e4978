//===- TestBF16VectorsAsBits.cpp - bf16 vectors moved as i16, for tests ---===//
//
// The tensor-core kernels, run on the CPU (flashnorm-test-gpu-launch-to-loops),
// carry their bf16 fragments as vectors through loads, loop-carried values
// and stores, and compute on them only after storing them to stack buffers.
// LLVM's x86 backend has no bf16 vector registers: it promotes every
// <N x bfloat> to <N x float>, so each store of a fragment becomes N
// roundings, and instruction selection of one kernel of 24 fragments took
// 26 s of its 27 s compile (as <N x half> or <N x i16>, 0.2 s). On the LLVM
// dialect, this pass gives every value that is only moved (loaded, stored,
// carried through a block argument, put in or taken out of an aggregate,
// shuffled, selected) the integer vector of its bits instead; an op that
// computes on a bf16 vector gets it back through an `llvm.bitcast`, as does
// a value such an op produces on its way to the moves. The bits moved are
// the same, so the numbers are too. Functions where an op that is not a
// move takes or makes an aggregate of bf16 vectors (which no bitcast
// converts) are left as they are.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {
/// `type` with each vector of bf16 in it (itself, or an array's or literal
/// struct's element, at any depth) a vector of i16; `type` if it has none.
Type asBits(Type type) {
  MLIRContext *context = type.getContext();
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.getElementType().isBF16()
               ? vector.clone(IntegerType::get(context, 16))
               : type;
  if (auto array = dyn_cast<LLVM::LLVMArrayType>(type)) {
    Type element = asBits(array.getElementType());
    return element == array.getElementType()
               ? type
               : LLVM::LLVMArrayType::get(element, array.getNumElements());
  }
  if (auto strukt = dyn_cast<LLVM::LLVMStructType>(type)) {
    if (strukt.isIdentified())
      return type;
    SmallVector<Type> body;
    for (Type element : strukt.getBody())
      body.push_back(asBits(element));
    return body == strukt.getBody() ? type
                                    : LLVM::LLVMStructType::getLiteral(
                                          context, body, strukt.isPacked());
  }
  return type;
}

/// A constant whose elements can be given as their bits (the padding of a
/// vector transfer: an aggregate of zeros).
bool denseConstant(Operation *op) {
  auto constant = dyn_cast<LLVM::ConstantOp>(op);
  return constant && isa<DenseElementsAttr>(constant.getValue());
}

/// Ops that only move their values' bits: they take the integer vectors as
/// well, and their results follow their operands' types.
bool onlyMoves(Operation *op) {
  return isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::InsertValueOp,
             LLVM::ExtractValueOp, LLVM::ShuffleVectorOp, LLVM::SelectOp,
             LLVM::PoisonOp, LLVM::UndefOp, LLVM::ZeroOp, LLVM::BrOp,
             LLVM::CondBrOp, LLVM::SwitchOp>(op) ||
         denseConstant(op);
}

/// A block argument the function (or the op holding the region) defines
/// the type of, rather than the branches into it.
bool typedByParent(BlockArgument arg) { return arg.getOwner()->isEntryBlock(); }

struct TestBF16VectorsAsBitsPass
    : PassWrapper<TestBF16VectorsAsBitsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestBF16VectorsAsBitsPass)
  StringRef getArgument() const final {
    return "flashnorm-test-bf16-vectors-as-bits";
  }
  StringRef getDescription() const final {
    return "Move bf16 vectors as i16 vectors on the LLVM dialect, for tests "
           "(LLVM's x86 backend promotes each bf16 vector to f32)";
  }

  void runOnOperation() override {
    getOperation().walk([](LLVM::LLVMFuncOp func) { rewrite(func); });
  }

  /// Plan, then apply: what changes is decided on the untouched function,
  /// which is left as it is if a value that changes cannot be bitcast.
  static void rewrite(LLVM::LLVMFuncOp func) {
    // Values that become their bits in place, and values that keep their
    // type but reach the moves through a bitcast.
    SmallVector<Value> retyped, castAfter;
    SmallVector<OpOperand *> castBefore;
    auto changes = [](Value value) {
      return asBits(value.getType()) != value.getType();
    };
    auto castable = [](Value value) {
      return isa<VectorType>(value.getType());
    };
    WalkResult walk = func.walk([&](Operation *op) {
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments()) {
            if (!changes(arg))
              continue;
            if (!typedByParent(arg)) {
              retyped.push_back(arg);
            } else if (castable(arg)) {
              castAfter.push_back(arg);
            } else {
              return WalkResult::interrupt();
            }
          }
      bool moves = onlyMoves(op);
      for (Value result : op->getResults()) {
        if (!changes(result))
          continue;
        if (moves) {
          retyped.push_back(result);
        } else if (castable(result)) {
          castAfter.push_back(result);
        } else {
          return WalkResult::interrupt();
        }
      }
      if (moves)
        return WalkResult::advance();
      for (OpOperand &operand : op->getOpOperands()) {
        if (!changes(operand.get()))
          continue;
        if (!castable(operand.get()))
          return WalkResult::interrupt();
        castBefore.push_back(&operand);
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted() || (retyped.empty() && castAfter.empty()))
      return;

    // Each operand of a computing op reads its value as it was: taken
    // before the types change, as the bitcasts back need them.
    SmallVector<Type> operandTypes;
    for (OpOperand *operand : castBefore)
      operandTypes.push_back(operand->get().getType());
    for (Value value : retyped) {
      value.setType(asBits(value.getType()));
      if (Operation *op = value.getDefiningOp(); op && denseConstant(op)) {
        auto constant = cast<LLVM::ConstantOp>(op);
        auto elements = cast<DenseElementsAttr>(constant.getValue());
        if (elements.getElementType().isBF16())
          constant.setValueAttr(
              elements.bitcast(IntegerType::get(op->getContext(), 16)));
      }
    }
    OpBuilder b(func.getContext());
    for (Value value : castAfter) {
      if (auto arg = dyn_cast<BlockArgument>(value))
        b.setInsertionPointToStart(arg.getOwner());
      else
        b.setInsertionPointAfter(value.getDefiningOp());
      auto bits = LLVM::BitcastOp::create(b, value.getLoc(),
                                          asBits(value.getType()), value);
      value.replaceUsesWithIf(bits, [&](OpOperand &use) {
        return use.getOwner() != bits && onlyMoves(use.getOwner());
      });
    }
    for (auto [operand, type] : llvm::zip_equal(castBefore, operandTypes)) {
      if (operand->get().getType() == type)
        continue;
      b.setInsertionPoint(operand->getOwner());
      operand->set(LLVM::BitcastOp::create(b, operand->get().getLoc(), type,
                                           operand->get()));
    }
  }
};
} // namespace

namespace mlir::flashnorm::test {
void registerTestBF16VectorsAsBitsPass() {
  PassRegistration<TestBF16VectorsAsBitsPass>();
}
} // namespace mlir::flashnorm::test
