//===- VerifyAsync.cpp - Prove GPU buffer accesses are ordered ------------===//
//
// The static form of the fix in docs/MATH.md §6: every buffer a kernel reads
// must be written by work that happens before it, and no two conflicting
// accesses may be left unordered by the token graph.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Analysis/HappensBefore.h"
#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AsmState.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_VERIFYASYNC
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
using Kind = BufferAccess::Kind;

class Verifier {
public:
  Verifier(FunctionOpInterface fn, const HappensBefore &hb)
      : fn(fn), hb(hb), names(fn, OpPrintingFlags()) {}

  /// Reports every unordered conflicting pair; true if there was one.
  bool run() {
    ArrayRef<BufferAccess> accesses = hb.getAccesses();
    for (unsigned j = 0; j < accesses.size(); ++j)
      for (unsigned i = 0; i < j; ++i)
        check(accesses[i], accesses[j]);
    return failed;
  }

private:
  std::string name(Value value) {
    // A global named in a kernel or a callee: by its symbol.
    if (auto get = value.getDefiningOp<memref::GetGlobalOp>();
        get && !fn->isAncestor(get))
      return "@" + get.getName().str();
    std::string s;
    llvm::raw_string_ostream os(s);
    value.printAsOperand(os, names);
    return s;
  }

  static std::string describe(const BufferAccess &access) {
    std::string s = "'" + access.op->getName().getStringRef().str();
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(access.op)) {
      llvm::raw_string_ostream os(s);
      os << " " << launch.getKernel();
    }
    return s + "'";
  }

  static StringRef verb(Kind kind) {
    switch (kind) {
    case Kind::Read:
      return "reads";
    case Kind::Write:
      return "writes";
    case Kind::Alloc:
      return "allocates";
    case Kind::Free:
      return "deallocates";
    }
    llvm_unreachable("unknown access kind");
  }

  /// `first` is issued before `second`.
  void check(const BufferAccess &first, const BufferAccess &second) {
    if (first.op == second.op || (!first.isWrite() && !second.isWrite()))
      return;
    if (!mayAliasRoots(first.root, second.root))
      return;
    std::string problem;
    if (first.kind == Kind::Free) {
      problem = hb.happensBefore(first.op, second.op)
                    ? "after it was deallocated"
                    : "possibly during or after its deallocation";
    } else if (first.kind == Kind::Alloc) {
      if (hb.happensBefore(first.op, second.op))
        return;
      problem = "before its allocation is ordered before it";
    } else if (second.kind == Kind::Free) {
      if (hb.happensBefore(first.op, second.op))
        return;
      problem = "while " + describe(first) + " may still " +
                verb(first.kind).drop_back().str() + " it";
    } else {
      if (hb.happensBefore(first.op, second.op) ||
          hb.happensBefore(second.op, first.op))
        return;
      problem = "while " + describe(first) + " " + verb(first.kind).str() +
                " it, with no happens-before order between them";
    }
    // One report per pair of ops and buffer.
    if (!reported.insert({first.op, second.op, first.root}).second)
      return;
    failed = true;
    std::string buffer = name(second.buffer);
    InFlightDiagnostic diag = second.op->emitError()
                              << describe(second) << " " << verb(second.kind)
                              << " " << buffer << " " << problem;
    diag.attachNote(first.op->getLoc())
        << "the other access: " << describe(first) << " " << verb(first.kind)
        << " " << name(first.buffer);
    diag.attachNote(first.root.getLoc())
        << "the buffer (" << name(first.root) << ") is defined here";
  }

  FunctionOpInterface fn;
  const HappensBefore &hb;
  AsmState names;
  llvm::DenseSet<std::tuple<Operation *, Operation *, Value>> reported;
  bool failed = false;
};

struct VerifyAsyncPass : flashnorm::impl::VerifyAsyncBase<VerifyAsyncPass> {
  void runOnOperation() override {
    bool failed = false;
    getOperation()->walk([&](FunctionOpInterface fn) {
      if (fn.isExternal() || fn->getParentOfType<gpu::GPUModuleOp>())
        return WalkResult::skip();
      bool hasGpuWork = false;
      fn->walk([&](Operation *op) {
        hasGpuWork |= isa<gpu::AsyncOpInterface, gpu::LaunchOp>(op);
      });
      if (!hasGpuWork)
        return WalkResult::skip();
      HappensBefore hb(fn);
      if (const auto &why = hb.getUnsupportedReason()) {
        mlir::emitWarning(fn.getLoc())
            << "flashnorm-verify-async: not verified: " << *why;
        return WalkResult::skip();
      }
      failed |= Verifier(fn, hb).run();
      return WalkResult::skip();
    });
    if (failed)
      signalPassFailure();
  }
};
} // namespace
