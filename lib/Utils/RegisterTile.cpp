//===- RegisterTile.cpp - The CPU micro-kernels' register tiles -----------===//

#include "flashnorm/Utils/RegisterTile.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace mlir::flashnorm;

int64_t flashnorm::hostVectorBits() {
  static const int64_t bits = [] {
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    return features.lookup("avx512f") ? 512
           : features.lookup("avx")   ? 256
                                      : 128;
  }();
  return bits;
}

bool flashnorm::hostConvertsBF16() {
  static const bool native = [] {
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    return features.lookup("avx512bf16") || features.lookup("avxneconvert");
  }();
  return native;
}

FailureOr<RegisterTile> flashnorm::registerTileFor(int64_t bits) {
  switch (bits == 0 ? hostVectorBits() : bits) {
  case 512:
    return RegisterTile{16, 32};
  case 256:
    return RegisterTile{8, 16};
  case 128:
    return RegisterTile{4, 16};
  default:
    return failure();
  }
}
