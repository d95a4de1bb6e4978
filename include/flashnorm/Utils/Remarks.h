//===- Remarks.h - How flashnorm passes report what they did ----*- C++ -*-===//
//
// Every rewrite and every refusal goes through MLIR's optimization-remark
// engine under the category "flashnorm", so users ask for them with
// `--remarks-filter=flashnorm` (and `--remark-format=emitRemark` to see them
// as diagnostics at the op's location). No remark is printed otherwise;
// what a user must hear without asking (norms not folded because their
// weights are arguments or checkpoint tensors) is a warning.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_UTILS_REMARKS_H
#define FLASHNORM_UTILS_REMARKS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::flashnorm {

/// Prints anything printable (types, locations, numbers) into a string.
template <typename T> std::string printToString(const T &value) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << value;
  return s;
}

/// A number as a person writes it (%g: 1e-06, 0.5, 6).
std::string formatNumber(double value);

/// `file:line:col` for file locations, the printed location otherwise.
std::string formatLoc(Location loc);

/// Reports one pass's rewrites and refusals in one function, then a one-line
/// summary on the function when it goes out of scope.
class PassReporter {
public:
  PassReporter(Operation *function, StringRef pass)
      : function(function), pass(pass) {}
  ~PassReporter();
  PassReporter(const PassReporter &) = delete;
  PassReporter &operator=(const PassReporter &) = delete;

  /// A rewrite applied at `op`.
  void applied(Operation *op, const Twine &what);
  /// A rewrite refused at `op`; reported once per op, however often a
  /// pattern driver retries it.
  void refused(Operation *op, const Twine &why);
  /// An inexact rewrite applied at `op`, with its error bound.
  void approximated(Operation *op, const Twine &what);

  /// Reports no refusal at `op` from now on (it was partly rewritten and a
  /// driver may visit it again).
  void silence(Operation *op) { silenced.insert(op); }

  /// Counts refusals without reporting each (a later run of the pass
  /// reports those that still stand).
  void countRefusalsOnly() { reportRefusals = false; }

  unsigned getNumApplied() const { return numApplied; }

private:
  Operation *function;
  StringRef pass;
  unsigned numApplied = 0;
  unsigned numApproximate = 0;
  bool reportRefusals = true;
  llvm::DenseSet<Operation *> refusedOps, silenced;
};

} // namespace mlir::flashnorm

#endif
