//===- FlashNormToLLVM.cpp - The dialect's GPU ops to runtime calls -------===//
//
// The dialect's LLVM conversion interface: gpu-to-llvm collects its patterns,
// so `flashnorm.gemm_lt`, `flashnorm.resident` and
// `flashnorm.check_alignment` are converted with the
// same type converter as the gpu ops around them, where an async token is the
// stream it runs on.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMInterface.h"
#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// The runtime's element type codes (runtime/cuda/GemmLt.cpp).
int32_t dtypeCode(Type type) {
  if (type.isF16())
    return 1;
  if (type.isBF16())
    return 2;
  return 0;
}

struct GemmLtToLLVM : ConvertOpToLLVMPattern<GemmLtOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(GemmLtOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (adaptor.getAsyncDependencies().size() != 1)
      return rewriter.notifyMatchFailure(op, "needs one async dependency");
    Location loc = op.getLoc();
    Value stream = adaptor.getAsyncDependencies().front();
    Value zero = createIndexAttrConstant(rewriter, loc, getIndexType(), 0);
    Type i32 = rewriter.getI32Type(), i64 = rewriter.getI64Type();
    Type ptr = LLVM::LLVMPointerType::get(rewriter.getContext());
    auto pointer = [&](Value memref, Value descriptor) {
      return getStridedElementPtr(rewriter, loc,
                                  cast<MemRefType>(memref.getType()),
                                  descriptor, {zero, zero});
    };
    MemRefDescriptor a(adaptor.getA()), c(adaptor.getC());
    auto constant = [&](Type type, int64_t value) -> Value {
      return LLVM::ConstantOp::create(rewriter, loc, type, value);
    };
    Value args[] = {
        stream,
        a.size(rewriter, loc, 0),
        c.size(rewriter, loc, 1),
        a.size(rewriter, loc, 1),
        pointer(op.getA(), adaptor.getA()),
        pointer(op.getB(), adaptor.getB()),
        pointer(op.getC(), adaptor.getC()),
        constant(i32, dtypeCode(op.getA().getType().getElementType())),
        constant(i32, dtypeCode(op.getC().getType().getElementType())),
        constant(i32, op.getTransposeB() ? 1 : 0)};
    FailureOr<LLVM::LLVMFuncOp> fn = LLVM::lookupOrCreateFn(
        rewriter, op->getParentOfType<ModuleOp>(), "mgpuFlashNormGemmLt",
        {ptr, i64, i64, i64, ptr, ptr, ptr, i32, i32, i32},
        LLVM::LLVMVoidType::get(rewriter.getContext()));
    if (failed(fn))
      return failure();
    LLVM::CallOp::create(rewriter, loc, *fn, args);
    // Like every async gpu op, its token is its stream.
    rewriter.replaceOp(op, stream);
    return success();
  }
};

/// `mgpuFlashNormResident(stream, host, bytes)` returns the device copy of a
/// constant (uploaded on the first call in the process); the device buffer
/// gets the host buffer's static shape and identity strides.
struct ResidentToLLVM : ConvertOpToLLVMPattern<ResidentOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(ResidentOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (adaptor.getAsyncDependencies().size() != 1)
      return rewriter.notifyMatchFailure(op, "needs one async dependency");
    Location loc = op.getLoc();
    MemRefType type = op.getHost().getType();
    Value stream = adaptor.getAsyncDependencies().front();
    Value zero = createIndexAttrConstant(rewriter, loc, getIndexType(), 0);
    SmallVector<Value> origin(type.getRank(), zero);
    Value host =
        getStridedElementPtr(rewriter, loc, type, adaptor.getHost(), origin);
    // Whole bytes per element (the verifier's 8 to 64 bits).
    int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
    Type i64 = rewriter.getI64Type();
    Type ptr = LLVM::LLVMPointerType::get(rewriter.getContext());
    FailureOr<LLVM::LLVMFuncOp> fn =
        LLVM::lookupOrCreateFn(rewriter, op->getParentOfType<ModuleOp>(),
                               "mgpuFlashNormResident", {ptr, ptr, i64}, ptr);
    if (failed(fn))
      return failure();
    Value args[] = {stream, host,
                    LLVM::ConstantOp::create(rewriter, loc, i64, bytes)};
    Value device = LLVM::CallOp::create(rewriter, loc, *fn, args).getResult();
    Value descriptor = MemRefDescriptor::fromStaticShape(
        rewriter, loc, *getTypeConverter(), type, device);
    rewriter.replaceOp(op, {descriptor, stream});
    return success();
  }
};

/// `mgpuFlashNormCheckAlignment(buffer, alignment, what)` on the buffer's
/// aligned pointer, the base its layout's offset counts from; `what` is a
/// string constant of the module.
struct CheckAlignmentToLLVM : ConvertOpToLLVMPattern<CheckAlignmentOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;

  LogicalResult
  matchAndRewrite(CheckAlignmentOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto module = op->getParentOfType<ModuleOp>();
    Type i64 = rewriter.getI64Type();
    Type ptr = LLVM::LLVMPointerType::get(rewriter.getContext());
    FailureOr<LLVM::LLVMFuncOp> fn = LLVM::lookupOrCreateFn(
        rewriter, module, "mgpuFlashNormCheckAlignment", {ptr, i64, ptr},
        LLVM::LLVMVoidType::get(rewriter.getContext()));
    if (failed(fn))
      return failure();
    // The message as a NUL-terminated constant of its own (each names
    // one argument of one function).
    std::string name;
    for (unsigned i = 0;; ++i) {
      name = "flashnorm_check_alignment_" + std::to_string(i);
      if (!SymbolTable::lookupSymbolIn(module, name))
        break;
    }
    std::string text = op.getWhat().str();
    text.push_back('\0');
    Value what = LLVM::createGlobalString(loc, rewriter, name, text,
                                          LLVM::Linkage::Internal);
    Value buffer =
        MemRefDescriptor(adaptor.getBuffer()).alignedPtr(rewriter, loc);
    Value args[] = {
        buffer, LLVM::ConstantOp::create(rewriter, loc, i64, op.getAlignment()),
        what};
    LLVM::CallOp::create(rewriter, loc, *fn, args);
    rewriter.eraseOp(op);
    return success();
  }
};

struct FlashNormToLLVMInterface : ConvertToLLVMPatternInterface {
  using ConvertToLLVMPatternInterface::ConvertToLLVMPatternInterface;

  void populateConvertToLLVMConversionPatterns(
      ConversionTarget &target, LLVMTypeConverter &converter,
      RewritePatternSet &patterns) const final {
    patterns.add<CheckAlignmentToLLVM, GemmLtToLLVM, ResidentToLLVM>(converter);
    // Illegal, so that one the patterns cannot lower (a GEMM given no
    // stream) fails the conversion instead of staying behind its casts.
    target.addIllegalOp<CheckAlignmentOp, GemmLtOp, ResidentOp>();
  }
};
} // namespace

void flashnorm::registerConvertFlashNormToLLVMInterface(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *, FlashNormDialect *dialect) {
    dialect->addInterfaces<FlashNormToLLVMInterface>();
  });
}
