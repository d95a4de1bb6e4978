//===- ScaleDegree.cpp - How values depend on per-row scales --------------===//

#include "flashnorm/Analysis/ScaleDegree.h"
#include "flashnorm/Utils/IndexingMaps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flashnorm;

bool Degree::operator==(const Degree &o) const {
  if (kind != o.kind || of.size() != o.of.size())
    return false;
  return llvm::all_of(of, [&](auto &entry) {
    auto it = o.of.find(entry.first);
    return it != o.of.end() && it->second == entry.second;
  });
}

Degree flashnorm::product(const Degree &a, const Degree &b) {
  if (a.kind == Degree::None || b.kind == Degree::None)
    return Degree::none();
  if (a.kind == Degree::Zero || b.kind == Degree::Zero)
    return Degree::zero();
  Degree d = a;
  for (auto [op, n] : b.of)
    d.of[op] += n;
  return d;
}

Degree flashnorm::power(const Degree &a, int64_t p) {
  if (a.kind != Degree::Multiple)
    return a; // 0^p = 0 for p >= 1; no multiple stays none.
  Degree d = a;
  for (auto &entry : d.of)
    entry.second *= p;
  return d;
}

Degree flashnorm::unify(const Degree &a, const Degree &b) {
  if (a.kind == Degree::Zero)
    return b;
  if (b.kind == Degree::Zero)
    return a;
  return a == b ? a : Degree::none();
}

bool flashnorm::isZeroConstant(Value v) {
  return matchPattern(v, m_AnyZeroFloat());
}

std::optional<int64_t> flashnorm::getMovableExponent(Value v) {
  Attribute value;
  if (!matchPattern(v, m_Constant(&value)))
    return std::nullopt;
  if (auto splat = dyn_cast<SplatElementsAttr>(value))
    value = splat.getSplatValue<Attribute>();
  std::optional<int64_t> p;
  if (auto i = dyn_cast<IntegerAttr>(value)) {
    p = i.getValue().getSExtValue();
  } else if (auto f = dyn_cast<FloatAttr>(value)) {
    double d = f.getValueAsDouble();
    if (d == std::trunc(d) && std::abs(d) <= kMaxMovableExponent)
      p = static_cast<int64_t>(d);
  }
  if (!p || *p < 1 || *p > kMaxMovableExponent)
    return std::nullopt;
  return p;
}

bool flashnorm::isWideEnough(Type t) {
  Type elt = getElementTypeOrSelf(t);
  return elt.isF32() || elt.isF64() || elt.isBF16();
}

Degree flashnorm::degreeOfElementwise(Operation *op,
                                      function_ref<Degree(Value)> operand) {
  auto arg = [&](unsigned i) { return operand(op->getOperand(i)); };
  if (isa<arith::MulFOp, tosa::MulOp>(op))
    return product(arg(0), arg(1));
  // x^p, p a constant integer up to kMaxMovableExponent (squared ReLU as
  // torch writes relu(x) ** 2: math.fpowi by 2, or math.powf / tosa.pow of
  // 2.0): (s x)^p = s^p x^p, s >= 0 or not.
  if (isa<math::PowFOp, math::FPowIOp, tosa::PowOp>(op))
    if (std::optional<int64_t> p = getMovableExponent(op->getOperand(1)))
      return power(arg(0), *p);
  if (isa<arith::DivFOp>(op))
    return arg(1).isUnscaled() ? arg(0) : Degree::none();
  if (isa<arith::NegFOp, tosa::NegateOp, arith::ExtFOp, arith::TruncFOp,
          math::AbsFOp, tosa::AbsOp>(op))
    return arg(0);
  // A cast between floats keeps the degree; one to integers rounds (below).
  if (isa<tosa::CastOp>(op) &&
      isa<FloatType>(getElementTypeOrSelf(op->getOperand(0))) &&
      isa<FloatType>(getElementTypeOrSelf(op->getResult(0))))
    return arg(0);
  if (isa<arith::AddFOp, arith::SubFOp, arith::MaximumFOp, arith::MinimumFOp,
          arith::MaxNumFOp, arith::MinNumFOp, tosa::AddOp, tosa::SubOp,
          tosa::MaximumOp, tosa::MinimumOp>(op))
    return unify(arg(0), arg(1));
  if (isa<arith::SelectOp>(op))
    return arg(0).isUnscaled() ? unify(arg(1), arg(2)) : Degree::none();
  if (isa<arith::CmpFOp>(op))
    return unify(arg(0), arg(1)).kind == Degree::None ? Degree::none()
                                                      : Degree::unscaled();
  if (auto clamp = dyn_cast<tosa::ClampOp>(op)) {
    // ReLU: clamp to [0, the largest float]; a finite upper bound is not
    // homogeneous.
    auto lo = dyn_cast<FloatAttr>(clamp.getMinValAttr());
    auto hi = dyn_cast<FloatAttr>(clamp.getMaxValAttr());
    bool relu = lo && hi && lo.getValue().isZero() &&
                (hi.getValue().isInfinity() ||
                 hi.getValue() >=
                     llvm::APFloat::getLargest(hi.getValue().getSemantics()));
    return relu ? arg(0) : arg(0).isUnscaled() ? arg(0) : Degree::none();
  }
  // Anything else (exp, tanh, sigmoid, a constant added) is only defined
  // on unscaled values.
  for (Value v : op->getOperands())
    if (!operand(v).isUnscaled())
      return Degree::none();
  return Degree::unscaled();
}

Degree flashnorm::degreeOfGeneric(linalg::GenericOp generic,
                                  function_ref<Degree(OpOperand &)> operand,
                                  bool allowPermuted) {
  DenseMap<Value, Degree> local;
  for (OpOperand &use : generic->getOpOperands()) {
    Degree d = operand(use);
    AffineMap map = getUnitDimsMap(generic, &use);
    if (!d.isUnscaled() && !map.isIdentity() &&
        !(allowPermuted && map.isPermutation()))
      return Degree::none(); // A scaled value broadcast or permuted.
    local[generic.getMatchingBlockArgument(&use)] = d;
  }
  auto lookup = [&](Value v) -> Degree {
    auto it = local.find(v);
    if (it != local.end())
      return it->second;
    return isZeroConstant(v) ? Degree::zero() : Degree::unscaled();
  };
  Block *body = generic.getBody();
  for (Operation &op : body->without_terminator()) {
    if (op.getNumResults() != 1 || op.getNumRegions() != 0)
      return Degree::none();
    local[op.getResult(0)] = degreeOfElementwise(&op, lookup);
  }
  return lookup(body->getTerminator()->getOperand(0));
}
