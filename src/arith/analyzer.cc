// The Analyzer: variable bounds, and the provers built on the normal form and interval bounds.
//
// Every prover reduces to a bound: a >= b is proven when the bound of a - b has min >= 0. The
// difference is built with RawBinary, not the folding `-`, so that comparing two constants near
// the int64 limits cannot throw; the simplifier then folds what fits and keeps what does not as
// an opaque node, whose interval bound is still sound.
#include <kiln/arith/analyzer.h>

#include <algorithm>
#include <ostream>

#include "arith_internal.h"

namespace kiln {
namespace arith {

std::ostream& operator<<(std::ostream& os, const ConstIntBound& bound) {
  os << '[';
  if (bound.min == ConstIntBound::kNegInf) {
    os << "-inf";
  } else {
    os << bound.min;
  }
  os << ", ";
  if (bound.max == ConstIntBound::kPosInf) {
    os << "+inf";
  } else {
    os << bound.max;
  }
  return os << ']';
}

void Analyzer::Bind(const SizeVar& var, int64_t min, int64_t max) {
  KILN_CHECK(var.defined(), ValueError) << "Analyzer::Bind: the variable is null";
  const std::string name = var->name().str();
  const ConstIntBound known = internal::VarBoundOf(var_bounds_, name);
  const ConstIntBound narrowed{std::max(known.min, min), std::min(known.max, max)};
  KILN_CHECK(narrowed.min <= narrowed.max, ValueError)
      << "Analyzer::Bind: " << name << " in [" << min << ", " << max
      << "] leaves no value (already known: [" << known.min << ", " << known.max << "])";
  var_bounds_[name] = narrowed;
}

ConstIntBound Analyzer::VarBound(const SizeVar& var) const {
  KILN_CHECK(var.defined(), ValueError) << "Analyzer::VarBound: the variable is null";
  return internal::VarBoundOf(var_bounds_, var->name().view());
}

SizeExpr Analyzer::Simplify(const SizeExpr& expr) const {
  KILN_CHECK(expr.defined(), ValueError) << "Analyzer::Simplify: the expression is null";
  return internal::CanonicalSimplify(expr, var_bounds_);
}

ConstIntBound Analyzer::Bound(const SizeExpr& expr) const {
  KILN_CHECK(expr.defined(), ValueError) << "Analyzer::Bound: the expression is null";
  // Both bounds hold wherever `expr` is defined (the normal form equals it there), so their
  // intersection does too. It is empty only for an expression defined nowhere.
  const ConstIntBound tree = internal::TreeBound(expr, var_bounds_);
  const ConstIntBound normal = internal::NormalFormBound(expr, var_bounds_);
  const ConstIntBound both{std::max(tree.min, normal.min), std::min(tree.max, normal.max)};
  return both.min <= both.max ? both : tree;
}

namespace {

SizeExpr Difference(const SizeExpr& a, const SizeExpr& b) {
  KILN_CHECK(a.defined() && b.defined(), ValueError) << "Analyzer: an operand is null";
  return internal::RawBinary(BinaryOp::kSub, a, b);
}

}  // namespace

bool Analyzer::CanProveEqual(const SizeExpr& a, const SizeExpr& b) const {
  const ConstIntBound bound = Bound(Difference(a, b));
  return bound.min == 0 && bound.max == 0;
}

bool Analyzer::CanProveGE(const SizeExpr& a, const SizeExpr& b) const {
  return Bound(Difference(a, b)).min >= 0;
}

bool Analyzer::CanProveGT(const SizeExpr& a, const SizeExpr& b) const {
  return Bound(Difference(a, b)).min >= 1;
}

bool Analyzer::CanProveLE(const SizeExpr& a, const SizeExpr& b) const { return CanProveGE(b, a); }

bool Analyzer::CanProveLT(const SizeExpr& a, const SizeExpr& b) const { return CanProveGT(b, a); }

bool Analyzer::CanProveDivisible(const SizeExpr& expr, int64_t divisor) const {
  KILN_CHECK(divisor != 0, ValueError) << "Analyzer::CanProveDivisible: the divisor is 0";
  KILN_CHECK(expr.defined(), ValueError) << "Analyzer::CanProveDivisible: the expression is null";
  // floormod(expr, d) == 0 exactly when d divides expr, for either sign of d.
  const ConstIntBound bound =
      Bound(internal::RawBinary(BinaryOp::kFloorMod, expr, IntImm(divisor)));
  return bound.min == 0 && bound.max == 0;
}

Sign Analyzer::ProveSign(const SizeExpr& expr) const {
  const ConstIntBound bound = Bound(expr);
  if (bound.min == 0 && bound.max == 0) return Sign::kZero;
  if (bound.min > 0) return Sign::kPositive;
  if (bound.max < 0) return Sign::kNegative;
  if (bound.min >= 0) return Sign::kNonNegative;
  if (bound.max <= 0) return Sign::kNonPositive;
  return Sign::kUnknown;
}

}  // namespace arith
}  // namespace kiln
