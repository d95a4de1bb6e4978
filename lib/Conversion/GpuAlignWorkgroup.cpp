//===- GpuAlignWorkgroup.cpp - Shared buffers aligned for vector access ---===//
//
// A kernel's shared-memory buffers (workgroup attributions) become LLVM
// globals whose alignment, unless the gpu.func says otherwise, is their
// element's: a buffer of f32 is declared `.align 4` in the PTX. LLVM's
// load-store vectorizer still merges a lane's neighbouring accesses into
// one vector access when the offsets say so (the split-k kernel's partial
// tiles are stored as `st.shared.v2.b32`, which needs 8 bytes), relying on
// where the buffer happens to land: at the start of the block's window it
// is aligned, behind another buffer it need not be. So every workgroup
// attribution of an outlined kernel is declared aligned for the widest
// vector access (16 bytes), through the attribution's `llvm.align`, which
// the NVVM lowering gives the global.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_GPUALIGNWORKGROUP
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// The widest access a thread makes: a 16-byte vector (v4.b32).
constexpr int64_t kWorkgroupAlignment = 16;

struct GpuAlignWorkgroupPass
    : flashnorm::impl::GpuAlignWorkgroupBase<GpuAlignWorkgroupPass> {
  void runOnOperation() override {
    auto name =
        StringAttr::get(&getContext(), LLVM::LLVMDialect::getAlignAttrName());
    auto alignment = IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                      kWorkgroupAlignment);
    getOperation()->walk([&](gpu::GPUFuncOp kernel) {
      // An alignment the kernel states already stands.
      for (unsigned i = 0, e = kernel.getNumWorkgroupAttributions(); i < e; ++i)
        if (!kernel.getWorkgroupAttributionAttr(i, name))
          kernel.setWorkgroupAttributionAttr(i, name, alignment);
    });
  }
};
} // namespace
