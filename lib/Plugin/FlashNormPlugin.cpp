//===- FlashNormPlugin.cpp - flashnorm for the stock mlir-opt -------------===//
//
//   mlir-opt --load-dialect-plugin=FlashNormPlugin.so \
//            --load-pass-plugin=FlashNormPlugin.so --flashnorm in.mlir
//
//===----------------------------------------------------------------------===//

#include "flashnorm/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK ::mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "FlashNorm", LLVM_VERSION_STRING,
          [](::mlir::DialectRegistry *registry) {
            ::mlir::flashnorm::registerAllDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK ::mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "FlashNorm", LLVM_VERSION_STRING,
          []() { ::mlir::flashnorm::registerAllPasses(); }};
}
