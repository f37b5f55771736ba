// Constant integer bounds of size expressions by interval arithmetic.
//
// Soundness rests on two rules. (1) Endpoints are computed exactly, in 128 bits with explicit
// infinities, so no intermediate wraps. (2) Storing a result back into int64 rounds outward: a
// lower bound below INT64_MIN becomes kNegInf ("unbounded"), one above INT64_MAX becomes
// INT64_MAX, which is still a true lower bound; upper bounds mirror this. An interval thus never
// excludes a value the expression can take, even when the exact bound does not fit in int64.
#include <optional>
#include <vector>

#include "arith_internal.h"

namespace kiln {
namespace arith {
namespace internal {
namespace {

__extension__ using Int128 = __int128;

/// An interval endpoint: a finite value, or an infinity (kind -1 or +1).
struct Ext {
  int kind = 0;
  Int128 value = 0;

  static Ext Finite(Int128 v) { return Ext{0, v}; }
  static Ext Inf(int sign) { return Ext{sign, 0}; }
  bool is_inf() const { return kind != 0; }
  /// -1, 0 or +1.
  int sign() const { return kind != 0 ? kind : (value > 0) - (value < 0); }
};

bool Less(const Ext& a, const Ext& b) {
  if (a.kind != b.kind) return a.kind < b.kind;
  return a.kind == 0 && a.value < b.value;
}
Ext MinOf(const Ext& a, const Ext& b) { return Less(b, a) ? b : a; }
Ext MaxOf(const Ext& a, const Ext& b) { return Less(a, b) ? b : a; }

Ext Negate(const Ext& a) { return a.is_inf() ? Ext::Inf(-a.kind) : Ext::Finite(-a.value); }

/// a + b; never called with opposite infinities (a lower bound has no +inf, an upper no -inf).
Ext AddExt(const Ext& a, const Ext& b) {
  if (a.is_inf()) return a;
  if (b.is_inf()) return b;
  return Ext::Finite(a.value + b.value);
}

/// a * b over finite values; an infinity times zero is zero (the values are finite).
Ext MulExt(const Ext& a, const Ext& b) {
  if (!a.is_inf() && !b.is_inf()) return Ext::Finite(a.value * b.value);
  const int sign = a.sign() * b.sign();
  return sign == 0 ? Ext::Finite(0) : Ext::Inf(sign);
}

/// floor(a / b) for b >= 1 (finite or +inf); never +-inf / +inf (see BoundFloorDiv).
Ext FloorDivByPositive(const Ext& a, const Ext& b) {
  if (a.is_inf()) return a;
  if (b.is_inf()) return Ext::Finite(a.value >= 0 ? 0 : -1);
  const Int128 quotient = a.value / b.value;
  return Ext::Finite((a.value % b.value != 0 && a.value < 0) ? quotient - 1 : quotient);
}

Ext Lower(const ConstIntBound& b) {
  return b.min == ConstIntBound::kNegInf ? Ext::Inf(-1) : Ext::Finite(b.min);
}
Ext Upper(const ConstIntBound& b) {
  return b.max == ConstIntBound::kPosInf ? Ext::Inf(1) : Ext::Finite(b.max);
}

/// Rounds [lo, hi] outward into int64 (see the file comment).
ConstIntBound Make(const Ext& lo, const Ext& hi) {
  constexpr Int128 kMin = ConstIntBound::kNegInf;
  constexpr Int128 kMax = ConstIntBound::kPosInf;
  ConstIntBound out;
  if (lo.kind < 0 || (lo.kind == 0 && lo.value <= kMin)) {
    out.min = ConstIntBound::kNegInf;
  } else {
    out.min = static_cast<int64_t>(lo.kind > 0 || lo.value > kMax ? kMax : lo.value);
  }
  if (hi.kind > 0 || (hi.kind == 0 && hi.value >= kMax)) {
    out.max = ConstIntBound::kPosInf;
  } else {
    out.max = static_cast<int64_t>(hi.kind < 0 || hi.value < kMin ? kMin : hi.value);
  }
  return out;
}

/// An interval as two Ext endpoints, for the operations that flip or split intervals.
struct Interval {
  Ext lo;
  Ext hi;
};

Interval Of(const ConstIntBound& b) { return {Lower(b), Upper(b)}; }
Interval Hull(const Interval& a, const Interval& b) {
  return {MinOf(a.lo, b.lo), MaxOf(a.hi, b.hi)};
}

/// floor(a / b) for b within [b.lo, b.hi], b.lo >= 1: monotone in a; in b, falling for a >= 0
/// and rising for a < 0, so the extremes sit at corners.
Interval DivPositive(const Interval& a, const Interval& b) {
  const Ext lo = FloorDivByPositive(a.lo, a.lo.sign() >= 0 ? b.hi : b.lo);
  const Ext hi = FloorDivByPositive(a.hi, a.hi.sign() >= 0 ? b.lo : b.hi);
  return {lo, hi};
}

/// The divisor values above zero; nullopt when there are none. A division by zero is
/// undefined, so bounds only have to hold for the other divisor values.
std::optional<Interval> PositivePart(const Interval& b) {
  if (b.hi.sign() <= 0) return std::nullopt;
  return Interval{MaxOf(b.lo, Ext::Finite(1)), b.hi};
}

/// -b for the divisor values below zero; nullopt when there are none.
std::optional<Interval> NegatedNegativePart(const Interval& b) {
  if (b.lo.sign() >= 0) return std::nullopt;
  return Interval{MaxOf(Negate(b.hi), Ext::Finite(1)), Negate(b.lo)};
}

/// The smallest interval holding every part; the full range when there is none (an
/// expression defined nowhere may be given any bound).
ConstIntBound HullOf(const std::vector<Interval>& parts) {
  if (parts.empty()) return ConstIntBound{};
  Interval hull = parts[0];
  for (const Interval& part : parts) hull = Hull(hull, part);
  return Make(hull.lo, hull.hi);
}

ConstIntBound BoundFloorDiv(const ConstIntBound& x, const ConstIntBound& y) {
  const Interval a = Of(x);
  std::vector<Interval> parts;
  if (std::optional<Interval> positive = PositivePart(Of(y))) {
    parts.push_back(DivPositive(a, *positive));
  }
  // floor(a / b) = floor(-a / -b).
  if (std::optional<Interval> negated = NegatedNegativePart(Of(y))) {
    parts.push_back(DivPositive({Negate(a.hi), Negate(a.lo)}, *negated));
  }
  return HullOf(parts);
}

ConstIntBound BoundFloorMod(const ConstIntBound& x, const ConstIntBound& y) {
  const Interval a = Of(x);
  const Interval b = Of(y);
  std::vector<Interval> parts;
  if (b.hi.sign() > 0) {
    // Within [0, b.hi - 1]; exactly a when 0 <= a < the smallest positive divisor.
    const Ext smallest = MaxOf(b.lo, Ext::Finite(1));
    if (a.lo.sign() >= 0 && Less(a.hi, smallest)) {
      parts.push_back(a);
    } else {
      const Ext top = AddExt(b.hi, Ext::Finite(-1));
      parts.push_back({Ext::Finite(0), a.lo.sign() >= 0 ? MinOf(a.hi, top) : top});
    }
  }
  if (b.lo.sign() < 0) {
    // Within [b.lo + 1, 0]; exactly a when the largest negative divisor < a <= 0.
    const Ext largest = MinOf(b.hi, Ext::Finite(-1));
    if (a.hi.sign() <= 0 && Less(largest, a.lo)) {
      parts.push_back(a);
    } else {
      const Ext bottom = AddExt(b.lo, Ext::Finite(1));
      parts.push_back({a.hi.sign() <= 0 ? MaxOf(a.lo, bottom) : bottom, Ext::Finite(0)});
    }
  }
  return HullOf(parts);
}

ConstIntBound BoundMul(const ConstIntBound& x, const ConstIntBound& y) {
  const Interval a = Of(x);
  const Interval b = Of(y);
  const Ext corners[] = {MulExt(a.lo, b.lo), MulExt(a.lo, b.hi), MulExt(a.hi, b.lo),
                         MulExt(a.hi, b.hi)};
  Ext lo = corners[0];
  Ext hi = corners[0];
  for (const Ext& corner : corners) {
    lo = MinOf(lo, corner);
    hi = MaxOf(hi, corner);
  }
  return Make(lo, hi);
}

ConstIntBound BoundBinary(BinaryOp op, const ConstIntBound& x, const ConstIntBound& y) {
  switch (op) {
    case BinaryOp::kAdd: return Make(AddExt(Lower(x), Lower(y)), AddExt(Upper(x), Upper(y)));
    case BinaryOp::kSub:
      return Make(AddExt(Lower(x), Negate(Upper(y))), AddExt(Upper(x), Negate(Lower(y))));
    case BinaryOp::kMul: return BoundMul(x, y);
    case BinaryOp::kFloorDiv: return BoundFloorDiv(x, y);
    case BinaryOp::kFloorMod: return BoundFloorMod(x, y);
    case BinaryOp::kMin: return Make(MinOf(Lower(x), Lower(y)), MinOf(Upper(x), Upper(y)));
    case BinaryOp::kMax: return Make(MaxOf(Lower(x), Lower(y)), MaxOf(Upper(x), Upper(y)));
  }
  return ConstIntBound{};
}

}  // namespace

ConstIntBound VarBoundOf(const VarBounds& bounds, std::string_view name) {
  auto it = bounds.find(name);
  return it != bounds.end() ? it->second : ConstIntBound{0, ConstIntBound::kPosInf};
}

ConstIntBound TreeBound(const SizeExpr& expr, const VarBounds& bounds) {
  if (const auto* imm = expr.as<IntImmObj>())
    return Make(Ext::Finite(imm->value()), Ext::Finite(imm->value()));
  if (const auto* var = expr.as<SizeVarObj>()) return VarBoundOf(bounds, var->name().view());
  const auto* node = expr.as<BinaryObj>();
  KILN_ICHECK(node != nullptr) << "unknown size expression kind " << expr->GetTypeKey();
  return BoundBinary(node->op(), TreeBound(node->a(), bounds), TreeBound(node->b(), bounds));
}

}  // namespace internal
}  // namespace arith
}  // namespace kiln
