#include "flashnorm/InitAll.h"

#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.h"
#include "flashnorm/Pipelines/Pipelines.h"
#include "flashnorm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/DialectRegistry.h"

void mlir::flashnorm::registerAllDialects(DialectRegistry &registry) {
  registry.insert<FlashNormDialect, arith::ArithDialect, func::FuncDialect,
                  linalg::LinalgDialect, math::MathDialect,
                  ml_program::MLProgramDialect, tensor::TensorDialect,
                  tosa::TosaDialect>();
  registerConvertFlashNormToLLVMInterface(registry);
}

void mlir::flashnorm::registerAllPasses() {
  registerFlashNormTransformsPasses();
  registerFlashNormConversionPasses();
  registerPipelines();
}
