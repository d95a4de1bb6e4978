//===- GpuReproducibleBinaries.cpp - Binaries without compile times -------===//
//
// gpu-module-to-binary stores, beside each kernel binary, how long its
// compilation steps took (`LLVMIRToISATimeInMs`, `ISAToBinaryTimeInMs` in
// the `#gpu.object`'s properties). Those are the only bytes of the GPU
// pipeline's output that change from one run to the next on the same input,
// and a compiler whose output is not a function of its input defeats build
// caches and every comparison of two runs. They are measurements, not
// compilation results: nothing downstream reads them, so they are dropped.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_GPUREPRODUCIBLEBINARIES
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// The object without its timing properties, or null if it has none.
gpu::ObjectAttr withoutCompileTimes(gpu::ObjectAttr object) {
  DictionaryAttr properties = object.getProperties();
  if (!properties)
    return nullptr;
  SmallVector<NamedAttribute> kept;
  for (NamedAttribute property : properties)
    if (!property.getName().getValue().ends_with("TimeInMs"))
      kept.push_back(property);
  if (kept.size() == properties.size())
    return nullptr;
  MLIRContext *ctx = object.getContext();
  return gpu::ObjectAttr::get(
      ctx, object.getTarget(), object.getFormat(), object.getObject(),
      kept.empty() ? DictionaryAttr() : DictionaryAttr::get(ctx, kept),
      object.getKernels());
}

struct GpuReproducibleBinariesPass
    : flashnorm::impl::GpuReproducibleBinariesBase<
          GpuReproducibleBinariesPass> {
  void runOnOperation() override {
    getOperation().walk([](gpu::BinaryOp binary) {
      SmallVector<Attribute> objects;
      bool changed = false;
      for (Attribute attr : binary.getObjects()) {
        auto object = dyn_cast<gpu::ObjectAttr>(attr);
        gpu::ObjectAttr stripped =
            object ? withoutCompileTimes(object) : gpu::ObjectAttr();
        changed |= static_cast<bool>(stripped);
        objects.push_back(stripped ? stripped : attr);
      }
      if (changed)
        binary.setObjectsAttr(ArrayAttr::get(binary.getContext(), objects));
    });
  }
};
} // namespace
