// Runs the flashnorm pipeline from another compiler's own pass manager.
#include "flashnorm/InitAll.h"
#include "flashnorm/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: my-compiler FILE.mlir\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  mlir::flashnorm::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1;
  mlir::PassManager pm(&context);
  mlir::flashnorm::buildFlashNormPipeline(
      pm, mlir::flashnorm::FlashNormPipelineOptions());
  if (mlir::failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  return 0;
}
