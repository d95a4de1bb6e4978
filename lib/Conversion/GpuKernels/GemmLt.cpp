//===- GemmLt.cpp - Projections through cuBLASLt
//---------------------------===//
//
// A projection over row-major 2-D buffers (unit batch dimensions leading)
// with an f32 accumulator that starts at zero becomes `flashnorm.gemm_lt`:
// cuBLASLt on the op's stream, lowered by the dialect's LLVM interface.
// cuBLASLt overwrites the whole output, so the zero fill before it goes.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

FailureOr<GemmLtPlan> kernels::planGemmLt(linalg::LinalgOp op,
                                          std::string &why) {
  FailureOr<RowMajorProjection> p = matchRowMajor(op, why);
  if (failed(p))
    return failure();
  // cuBLASLt overwrites c: it must hold zeros.
  if (!startsAtZero(p->c, op)) {
    why = "the accumulator does not start at zero";
    return failure();
  }
  return GemmLtPlan{op, *p, deadZeroFill(p->c, op)};
}

void kernels::buildGemmLt(const GemmLtPlan &plan) {
  linalg::LinalgOp op = plan.op;
  const RowMajorProjection &p = plan.projection;
  OpBuilder b(op);
  Location loc = op.getLoc();
  GemmLtOp::create(b, loc, gpu::AsyncTokenType::get(b.getContext()),
                   ValueRange{}, to2d(b, loc, p.a), to2d(b, loc, p.b),
                   to2d(b, loc, p.c), p.transposeB);
  if (plan.deadFill)
    plan.deadFill->erase();
  op->erase();
}
