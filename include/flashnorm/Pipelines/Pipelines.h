#ifndef FLASHNORM_PIPELINES_PIPELINES_H
#define FLASHNORM_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::flashnorm {

/// Options of the `flashnorm` pipeline; each forwards to the pass it names.
struct FlashNormPipelineOptions
    : public PassPipelineOptions<FlashNormPipelineOptions> {
  PassOptions::Option<bool> allowApproximate{
      *this, "allow-approximate",
      llvm::cl::desc("flashnorm-drop-redundant: also cancel norms before an "
                     "eps > 0 norm (inexact, reported)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> cloneSharedWeights{
      *this, "clone-shared-weights",
      llvm::cl::desc("flashnorm-fold-gains: clone weights that have other "
                     "users"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> prepareFunction{
      *this, "prepare-function",
      llvm::cl::desc("flashnorm-fold-gains: fold gains into argument weights "
                     "through a @<fn>_flashnorm_prepare function"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> partial{
      *this, "partial",
      llvm::cl::desc("flashnorm-defer-scale: defer projections of norms that "
                     "have other users too"),
      llvm::cl::init(true)};
};

/// fold-gains, drop-redundant, defer-scale, canonicalize, cse (on functions).
void buildFlashNormPipeline(OpPassManager &pm,
                            const FlashNormPipelineOptions &options);

/// Options of flashnorm-cpu-pipeline.
struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  PassOptions::Option<bool> concurrent{
      *this, "concurrent",
      llvm::cl::desc("Run each deferred norm's statistic and projections as "
                     "async tasks joined before the post-scale (false: "
                     "serial)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Tile and vectorize linalg ops (flashnorm-cpu-codegen); "
                     "false: scalar loops"),
      llvm::cl::init(true)};
  PassOptions::ListOption<int64_t> tileSizes{
      *this, "tile-sizes",
      llvm::cl::desc("Projection tiles (m, n, k); default 4,16,1")};
  PassOptions::Option<int64_t> vectorWidth{
      *this, "vector-width",
      llvm::cl::desc("Innermost tile of other linalg ops (default 8)"),
      llvm::cl::init(8)};
};

/// Appends the CPU lowering to LLVM (flashnorm-cpu-pipeline) to a
/// builtin.module pass manager.
LogicalResult buildCpuPipeline(OpPassManager &pm,
                               const CpuPipelineOptions &options,
                               llvm::raw_ostream &errors);

/// Appends the reference CPU lowering (flashnorm-lower-to-llvm) to a
/// builtin.module pass manager.
LogicalResult buildLowerToLLVMPipeline(OpPassManager &pm,
                                       llvm::raw_ostream &errors);

/// Registers every pipeline under the name users type (`flashnorm`).
void registerPipelines();

} // namespace mlir::flashnorm

#endif
