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

/// The discardable attributes' values are checked here, where they are
/// declared: a pass that reads one may then trust its type. Names of the
/// dialect's namespace that it does not declare are refused, so that a
/// misspelt mark is not silently ignored.
LogicalResult
FlashNormDialect::verifyOperationAttribute(Operation *op,
                                           NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  Attribute value = attribute.getValue();
  auto expect = [&](bool ok, StringRef what) -> LogicalResult {
    if (ok)
      return success();
    return op->emitOpError() << "attribute '" << name << "' must be " << what
                             << ", not " << value;
  };
  if (name == kAsyncGroupAttr || name == kAsyncPairAttr ||
      name == kColumnSumsArgumentAttr) {
    auto integer = dyn_cast<IntegerAttr>(value);
    return expect(integer && integer.getType().isSignlessInteger(64) &&
                      integer.getInt() >= 0,
                  "a non-negative i64");
  }
  if (name == kAsyncRoleAttr)
    return expect(isa<AsyncRoleAttr>(value),
                  "#flashnorm.async_role<stat|proj|post|post_fused>");
  if (name == kSerialPanelsAttr || name == kCenteredWeightsAttr)
    return expect(isa<UnitAttr>(value), "a unit attribute");
  if (name == kColumnSumsAttr)
    return expect(isa<SymbolRefAttr>(value),
                  "a symbol reference (the global of the column sums)");
  return op->emitOpError() << "attribute '" << name
                           << "' is not one the flashnorm dialect declares";
}

LogicalResult
FlashNormDialect::verifyRegionArgAttribute(Operation *op, unsigned region,
                                           unsigned argument,
                                           NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name != kFoldedArgAttr)
    return op->emitOpError() << "argument attribute '" << name
                             << "' is not one the flashnorm dialect declares";
  if (!isa<UnitAttr>(attribute.getValue()))
    return op->emitOpError()
           << "argument attribute '" << name
           << "' must be a unit attribute, not " << attribute.getValue();
  return success();
}
