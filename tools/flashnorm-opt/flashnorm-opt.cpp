//===- flashnorm-opt.cpp - mlir-opt with the flashnorm dialect and passes -===//

#include "flashnorm/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace mlir::flashnorm::test {
void registerTestPasses();
} // namespace mlir::flashnorm::test

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::flashnorm::registerAllPasses();
  mlir::flashnorm::test::registerTestPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates kernels to LLVM IR in process.
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::flashnorm::registerAllDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "flashnorm-opt: the FlashNorm MLIR optimizer\n", registry));
}
