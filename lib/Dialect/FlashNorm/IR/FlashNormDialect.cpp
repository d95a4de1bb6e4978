#include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::flashnorm;

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.cpp.inc"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormAttrs.cpp.inc"

void FlashNormDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.cpp.inc"
      >();
}
