#include "flashnorm/Utils/Remarks.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Remarks.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include <cstdio>

using namespace mlir;
using namespace mlir::flashnorm;

std::string flashnorm::formatNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", value);
  return buf;
}

std::string flashnorm::formatLoc(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().getValue() + ":" + Twine(file.getLine()) + ":" +
            Twine(file.getColumn()))
        .str();
  return printToString(loc);
}

static StringRef functionNameOf(Operation *op) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    fn = op->getParentOfType<FunctionOpInterface>();
  return fn ? fn.getName() : StringRef();
}

static remark::RemarkOpts optsFor(Operation *op, StringRef pass) {
  return remark::RemarkOpts::name(pass)
      .category("flashnorm")
      .function(functionNameOf(op));
}

void PassReporter::applied(Operation *op, const Twine &what) {
  ++numApplied;
  remark::passed(op->getLoc(), optsFor(op, pass)) << what.str();
}

void PassReporter::approximated(Operation *op, const Twine &what) {
  ++numApplied;
  ++numApproximate;
  remark::passed(op->getLoc(), optsFor(op, pass))
      << ("approximate: " + what).str();
}

void PassReporter::refused(Operation *op, const Twine &why) {
  if (silenced.contains(op) || !refusedOps.insert(op).second || !reportRefusals)
    return;
  remark::missed(op->getLoc(), optsFor(op, pass)) << why.str();
}

PassReporter::~PassReporter() {
  std::string text =
      (Twine(numApplied) + " rewritten (" + Twine(numApproximate) +
       " approximate), " + Twine(refusedOps.size()) + " refused")
          .str();
  remark::analysis(function->getLoc(), optsFor(function, pass)) << text;
}
