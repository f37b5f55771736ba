// The canonical simplifier: size expressions to a normal form (docs/design.md §19).
//
// The normal form is a Sum (normal_form_internal.h): a constant plus terms `coeff * a1 * a2 ...`
// over atoms (variables, and floordiv/floormod/min/max nodes over operands in normal form),
// sorted, so two expressions with the same Sum print the same text. The rules below are each an
// identity on integers wherever the divisor is not zero; c and d are constants > 0, m a monomial:
//   floordiv(c*q + r, c) = q + floordiv(r, c), floormod(c*q + r, c) = floormod(r, c)
//       (q, r from floor division of the coefficients, so r's lie in [0, c))
//   floordiv(g*s + k, g*c) = floordiv(s + k div g, c)          g = gcd(coefficients, divisor)
//   floormod(g*s + k, g*c) = g*floormod(s + k div g, c) + k mod g
//   floordiv(r, c) = q, floormod(r, c) = r - q*c               when r's bounds lie in [qc, qc + c)
//   floordiv(floordiv(e, d) + k, c) = floordiv(e + k*d, d*c)
//   floormod(floormod(e, d) + k, c) = floormod(e + k, c)       when c divides d
//   c*k*floordiv(e, c) + k*floormod(e, c) = k*e                (also with c one atom)
//   floordiv(m*q, m) = q, floormod(m*q, m) = 0; floordiv(a, b) = 0, floormod(a, b) = a
//       when 0 <= a < b is proven
//   min/max: nested ones flattened, operands another one provably bounds dropped, the common
//   part (shared terms, the smallest constant) moved outside, operands sorted.
// Coefficient arithmetic is checked (normal_form.cc): when a normal form would overflow int64 or
// grow past kMaxTerms terms, the node at hand is kept as an atom over its simplified operands.
#include <algorithm>
#include <iterator>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arith_internal.h"
#include "int_arith_internal.h"
#include "normal_form_internal.h"

namespace kiln {
namespace arith {
namespace internal {
namespace {

/// The positive constant divisor of a floordiv/floormod node, else nullopt.
std::optional<int64_t> PositiveDivisor(const BinaryObj* node) {
  const std::optional<int64_t> divisor = node->b().as_int();
  return divisor.has_value() && *divisor > 0 ? divisor : std::nullopt;
}

class Canonicalizer {
 public:
  explicit Canonicalizer(const VarBounds& bounds) : bounds_(bounds) {}

  /// The normal form of `expr`. Memoized by node: the rules re-read the operands of atoms
  /// (nested divisions, bounds of remainders), which would otherwise be simplified again at
  /// every level of a nest.
  Sum Canon(const SizeExpr& expr) {
    if (auto it = memo_.find(expr.get()); it != memo_.end()) return it->second.second;
    Sum sum = CanonUncached(expr);
    memo_.emplace(expr.get(), std::make_pair(expr, sum));
    return sum;
  }

 private:
  Sum CanonUncached(const SizeExpr& expr) {
    if (const auto* imm = expr.as<IntImmObj>()) return ConstantSum(imm->value());
    if (const auto* var = expr.as<SizeVarObj>()) {
      const ConstIntBound bound = VarBoundOf(bounds_, var->name().view());
      return bound.is_const() ? ConstantSum(bound.min) : AtomSum(expr);
    }
    const auto* node = expr.as<BinaryObj>();
    KILN_ICHECK(node != nullptr) << "unknown size expression kind " << expr->GetTypeKey();
    if (node->op() == BinaryOp::kMin || node->op() == BinaryOp::kMax) return CanonMinMax(expr);
    const Sum a = Canon(node->a());
    const Sum b = Canon(node->b());
    try {
      return MergeDivMod(Apply(node->op(), a, b, node->b()));
    } catch (const TooComplex&) {
      return Opaque(expr, a, b);
    }
  }

  /// `expr` kept as an atom when its normal form cannot be had: over its simplified operands,
  /// or as written when those are two constants (whose node the builders would fold, so that
  /// its text would not parse back: the value does not fit in int64).
  static Sum Opaque(const SizeExpr& expr, const Sum& a, const Sum& b) {
    if (a.is_const() && b.is_const()) return AtomSum(expr);
    return AtomSum(RawBinary(expr.as<BinaryObj>()->op(), ToExpr(a), ToExpr(b)));
  }

  Sum Apply(BinaryOp op, const Sum& a, const Sum& b, const SizeExpr& divisor) {
    switch (op) {
      case BinaryOp::kAdd: return AddScaled(a, b, 1);
      case BinaryOp::kSub: return AddScaled(a, b, -1);
      case BinaryOp::kMul: return Multiply(a, b);
      case BinaryOp::kFloorDiv: return Divide(a, b, divisor);
      case BinaryOp::kFloorMod: return Modulo(a, b, divisor);
      default: break;
    }
    KILN_THROW(InternalError) << "Apply: unexpected BinaryOp " << static_cast<int>(op);
  }

  /// A min/max chain is read whole (not operand by operand; see FlattenExpr).
  Sum CanonMinMax(const SizeExpr& expr) {
    const auto* node = expr.as<BinaryObj>();
    try {
      std::vector<Sum> operands;
      FlattenExpr(node->op(), node->a(), 0, &operands);
      FlattenExpr(node->op(), node->b(), 0, &operands);
      return MergeDivMod(MinMax(node->op(), operands));
    } catch (const TooComplex&) {
      return Opaque(expr, Canon(node->a()), Canon(node->b()));
    }
  }

 public:
  // ---------------------------------------------------------------- proofs on sums
  /// Bounds of a Sum. Interval arithmetic forgets that c*floordiv(e, c) and e differ by less
  /// than c, so the bound is also taken with each such term written as e - floormod(e, c),
  /// and the two intersected: x - floordiv(x, 2) * 2 is floormod(x, 2), within [0, 1].
  ConstIntBound BoundOf(const Sum& sum) {
    const ConstIntBound bound = TreeBound(ToExpr(sum), bounds_);
    Sum expanded = sum;
    bool any = false;
    for (const Term& term : sum.terms) {
      const auto* div = term.atoms.size() == 1 ? term.atoms[0].as<FloorDivObj>() : nullptr;
      const std::optional<int64_t> c = div != nullptr ? PositiveDivisor(div) : std::nullopt;
      if (!c.has_value() || term.coeff % *c != 0 || term.coeff == ConstIntBound::kNegInf) continue;
      try {
        const Sum e = Canon(div->a());
        const Sum multiple = AddScaled(e, ModByConst(e, *c), -1);  // c * floordiv(e, c)
        expanded = AddScaled(AddScaled(expanded, AtomSum(term.atoms[0]), -term.coeff), multiple,
                             term.coeff / *c);
        any = true;
      } catch (const TooComplex&) {  // NOLINT(bugprone-empty-catch): keep the plain bound
      }
    }
    if (!any) return bound;
    const ConstIntBound other = TreeBound(ToExpr(expanded), bounds_);
    const ConstIntBound both{std::max(bound.min, other.min), std::min(bound.max, other.max)};
    return both.min <= both.max ? both : bound;
  }

 private:
  /// x - y >= k provably; false when unknown or the difference overflows.
  bool ProveDiffAtLeast(const Sum& x, const Sum& y, int64_t k) {
    try {
      return BoundOf(AddScaled(x, y, -1)).min >= k;
    } catch (const TooComplex&) {
      return false;
    }
  }

  /// 0 <= a < b provably, so floordiv(a, b) = 0 and floormod(a, b) = a.
  bool ProveBelow(const Sum& a, const Sum& b) {
    return BoundOf(a).min >= 0 && ProveDiffAtLeast(b, a, 1);
  }

  /// q when the bounds of `r` lie within [q*c, q*c + c) for a constant c > 0.
  std::optional<int64_t> ConstQuotient(const Sum& r, int64_t c) {
    const ConstIntBound bound = BoundOf(r);
    if (bound.min == ConstIntBound::kNegInf || bound.max == ConstIntBound::kPosInf) {
      return std::nullopt;
    }
    const std::optional<int64_t> low = CheckedFloorDiv(bound.min, c);
    const std::optional<int64_t> high = CheckedFloorDiv(bound.max, c);
    return low == high ? low : std::nullopt;
  }

  // ---------------------------------------------------------------- floordiv / floormod
  Sum Divide(const Sum& a, const Sum& b, const SizeExpr& divisor) {
    if (b.is_const()) {
      if (b.constant == 0) return ByZero(BinaryOp::kFloorDiv, a, divisor);
      // floor(a / -c) = floor(-a / c).
      return b.constant > 0 ? DivByConst(a, b.constant)
                            : DivByConst(Scale(a, -1), MulOrThrow(b.constant, -1));
    }
    if (a.is_zero()) return ConstantSum(0);
    if (AddScaled(a, b, -1).is_zero()) return ConstantSum(1);
    if (std::optional<Sum> quotient = ExactQuotient(a, b)) return *quotient;
    if (ProveBelow(a, b)) return ConstantSum(0);
    return AtomSum(RawBinary(BinaryOp::kFloorDiv, ToExpr(a), ToExpr(b)));
  }

  Sum Modulo(const Sum& a, const Sum& b, const SizeExpr& divisor) {
    if (b.is_const()) {
      if (b.constant == 0) return ByZero(BinaryOp::kFloorMod, a, divisor);
      // a mod -c = -((-a) mod c).
      return b.constant > 0 ? ModByConst(a, b.constant)
                            : Scale(ModByConst(Scale(a, -1), MulOrThrow(b.constant, -1)), -1);
    }
    if (a.is_zero() || AddScaled(a, b, -1).is_zero() || ExactQuotient(a, b).has_value()) {
      return ConstantSum(0);
    }
    if (ProveBelow(a, b)) return a;
    return AtomSum(RawBinary(BinaryOp::kFloorMod, ToExpr(a), ToExpr(b)));
  }

  /// a / b when b is one term k * m and every term of a is a multiple of it (a has no
  /// constant): floordiv(batch * h * w, h) = batch * w wherever h != 0.
  static std::optional<Sum> ExactQuotient(const Sum& a, const Sum& b) {
    if (b.constant != 0 || b.terms.size() != 1 || a.constant != 0) return std::nullopt;
    const Term& divisor = b.terms[0];
    Sum quotient;
    for (const Term& term : a.terms) {
      if (FloorModOf(term.coeff, divisor.coeff) != 0 ||
          !std::includes(term.atoms.begin(), term.atoms.end(), divisor.atoms.begin(),
                         divisor.atoms.end(), AtomLess)) {
        return std::nullopt;
      }
      Atoms rest;
      std::set_difference(term.atoms.begin(), term.atoms.end(), divisor.atoms.begin(),
                          divisor.atoms.end(), std::back_inserter(rest), AtomLess);
      const std::optional<int64_t> coeff = CheckedFloorDiv(term.coeff, divisor.coeff);
      if (!coeff.has_value()) return std::nullopt;
      Sum part = rest.empty() ? ConstantSum(*coeff) : Sum{{Term{rest, *coeff}}, 0};
      quotient = AddScaled(quotient, part, 1);
    }
    return quotient;
  }

  /// A division whose divisor is always zero: undefined everywhere, so any result would do;
  /// the division is kept (with the divisor as written) so that evaluating it still fails.
  /// A zero dividend gives 0, as the builders do, so that the text parses back the same.
  static Sum ByZero(BinaryOp op, const Sum& a, const SizeExpr& divisor) {
    return a.is_zero() ? ConstantSum(0) : AtomSum(RawBinary(op, ToExpr(a), divisor));
  }

  /// Splits `a` as c*q + r with r's coefficients and constant in [0, c).
  static std::pair<Sum, Sum> SplitByConst(const Sum& a, int64_t c) {
    Sum q;
    Sum r;
    for (const Term& term : a.terms) {
      if (const int64_t quotient = *CheckedFloorDiv(term.coeff, c); quotient != 0) {
        q.terms.push_back(Term{term.atoms, quotient});
      }
      if (const int64_t remainder = FloorModOf(term.coeff, c); remainder != 0) {
        r.terms.push_back(Term{term.atoms, remainder});
      }
    }
    q.constant = *CheckedFloorDiv(a.constant, c);
    r.constant = FloorModOf(a.constant, c);
    return {q, r};
  }

  /// gcd of the coefficients of `r` and c (in [1, c]).
  static int64_t CommonFactor(const Sum& r, int64_t c) {
    int64_t g = c;
    for (const Term& term : r.terms) g = GcdWithPositive(term.coeff, g);
    return g;
  }

  /// (r - r mod g) / g: coefficients divided by g (exactly), the constant floored.
  static Sum DivideOut(const Sum& r, int64_t g) {
    Sum out = r;
    for (Term& term : out.terms) term.coeff /= g;
    out.constant = *CheckedFloorDiv(r.constant, g);
    return out;
  }

  Sum DivByConst(const Sum& a, int64_t c) {
    if (c == 1) return a;
    const auto [q, r] = SplitByConst(a, c);
    if (r.is_const()) return q;  // 0 <= r.constant < c
    // Splitting can complete a floordiv/floormod pair: floormod(x, 2) - floordiv(x, 2) split by
    // 3 leaves r = floormod(x, 2) + floordiv(x, 2) * 2, which is x. Merge, then start over.
    bool merged = false;
    if (Sum whole = MergeDivMod(r, &merged); merged) return DivByConst(AddScaled(whole, q, c), c);
    const int64_t g = CommonFactor(r, c);
    return AddScaled(q, DivRemainder(g > 1 ? DivideOut(r, g) : r, c / g), 1);
  }

  /// floordiv(r, c) for r with coefficients in [1, c) sharing no factor with c.
  Sum DivRemainder(const Sum& r, int64_t c) {
    if (c == 1) return r;
    if (std::optional<int64_t> quotient = ConstQuotient(r, c)) return ConstantSum(*quotient);
    if (const BinaryObj* inner = SoleAtom(r);
        inner != nullptr && inner->op() == BinaryOp::kFloorDiv) {
      if (const std::optional<int64_t> d = PositiveDivisor(inner)) {
        return DivByConst(AddScaled(Canon(inner->a()), ConstantSum(r.constant), *d),
                          MulOrThrow(*d, c));
      }
    }
    return AtomSum(RawBinary(BinaryOp::kFloorDiv, ToExpr(r), IntImm(c)));
  }

  Sum ModByConst(const Sum& a, int64_t c) {
    if (c == 1) return ConstantSum(0);
    Sum r = SplitByConst(a, c).second;
    if (r.is_const()) return r;
    bool merged = false;
    if (Sum whole = MergeDivMod(r, &merged); merged) return ModByConst(whole, c);
    const int64_t g = CommonFactor(r, c);
    if (g == 1) return ModRemainder(r, c);
    return AddScaled(Scale(ModRemainder(DivideOut(r, g), c / g), g),
                     ConstantSum(FloorModOf(r.constant, g)), 1);
  }

  /// floormod(r, c) for r with coefficients in [1, c) sharing no factor with c.
  Sum ModRemainder(const Sum& r, int64_t c) {
    if (c == 1) return ConstantSum(0);
    if (std::optional<int64_t> quotient = ConstQuotient(r, c)) {
      return AddScaled(r, ConstantSum(*quotient), -c);
    }
    if (const BinaryObj* inner = SoleAtom(r);
        inner != nullptr && inner->op() == BinaryOp::kFloorMod) {
      if (const std::optional<int64_t> d = PositiveDivisor(inner); d && *d % c == 0) {
        return ModByConst(AddScaled(Canon(inner->a()), ConstantSum(r.constant), 1), c);
      }
    }
    return AtomSum(RawBinary(BinaryOp::kFloorMod, ToExpr(r), IntImm(c)));
  }

  /// Replaces k*c*floordiv(e, c) + k*floormod(e, c) by k*e (c a constant or one atom).
  Sum MergeDivMod(Sum sum, bool* any_merged = nullptr) {
    for (bool merged = true; merged;) {
      merged = false;
      for (size_t i = 0; i < sum.terms.size() && !merged; ++i) {
        const Term& mod_term = sum.terms[i];
        if (mod_term.atoms.size() != 1) continue;
        const auto* mod = mod_term.atoms[0].as<FloorModObj>();
        if (mod == nullptr) continue;
        std::optional<Term> div_term = MatchingDivTerm(mod, mod_term.coeff);
        if (!div_term.has_value()) continue;
        for (size_t j = 0; j < sum.terms.size(); ++j) {
          if (sum.terms[j].coeff != div_term->coeff ||
              CompareAtoms(sum.terms[j].atoms, div_term->atoms) != 0) {
            continue;
          }
          const int64_t k = mod_term.coeff;
          const SizeExpr dividend = mod->a();
          Sum rest = sum;
          rest.terms.erase(rest.terms.begin() + std::max(i, j));
          rest.terms.erase(rest.terms.begin() + std::min(i, j));
          sum = AddScaled(rest, Canon(dividend), k);
          merged = true;
          if (any_merged != nullptr) *any_merged = true;
          break;
        }
      }
    }
    return sum;
  }

  /// The term k*c*floordiv(e, c) that completes k*floormod(e, c) to k*e, if it can be named.
  std::optional<Term> MatchingDivTerm(const FloorModObj* mod, int64_t k) {
    const SizeExpr div = RawBinary(BinaryOp::kFloorDiv, mod->a(), mod->b());
    if (const std::optional<int64_t> c = mod->b().as_int()) {
      const std::optional<int64_t> coeff = CheckedMul(k, *c);
      if (!coeff.has_value()) return std::nullopt;
      return Term{{div}, *coeff};
    }
    const Sum divisor = Canon(mod->b());
    if (divisor.constant != 0 || divisor.terms.size() != 1 || divisor.terms[0].coeff != 1 ||
        divisor.terms[0].atoms.size() != 1) {
      return std::nullopt;
    }
    Atoms atoms{div, divisor.terms[0].atoms[0]};
    std::sort(atoms.begin(), atoms.end(), AtomLess);
    return Term{atoms, k};
  }

  // ---------------------------------------------------------------- min / max
  /// The operands of nested nodes of kind `op` (shifted by a constant they carry).
  void Flatten(BinaryOp op, const Sum& sum, std::vector<Sum>* out) {
    const BinaryObj* inner = SoleAtom(sum);
    if (inner == nullptr || inner->op() != op) {
      out->push_back(sum);
      return;
    }
    FlattenExpr(op, inner->a(), sum.constant, out);
    FlattenExpr(op, inner->b(), sum.constant, out);
  }

  /// Walks a chain of `op` nodes without simplifying it: simplifying a part of the chain on
  /// its own would pull out a common part of that part only, and the result would depend on
  /// how the chain was nested.
  void FlattenExpr(BinaryOp op, const SizeExpr& expr, int64_t shift, std::vector<Sum>* out) {
    if (const auto* node = expr.as<BinaryObj>(); node != nullptr && node->op() == op) {
      FlattenExpr(op, node->a(), shift, out);
      FlattenExpr(op, node->b(), shift, out);
      return;
    }
    Flatten(op, AddScaled(Canon(expr), ConstantSum(shift), 1), out);
  }

  /// Whether `x` makes `y` redundant among the operands of a min (x <= y) or max (x >= y).
  bool Dominates(BinaryOp op, const Sum& x, const Sum& y) {
    return op == BinaryOp::kMin ? ProveDiffAtLeast(y, x, 0) : ProveDiffAtLeast(x, y, 0);
  }

  /// min or max of the operands of a flattened chain.
  Sum MinMax(BinaryOp op, const std::vector<Sum>& operands) {
    std::vector<Sum> kept;
    for (const Sum& operand : operands) {
      const bool redundant = std::any_of(kept.begin(), kept.end(), [&](const Sum& other) {
        return Dominates(op, other, operand);
      });
      if (redundant) continue;
      kept.erase(std::remove_if(kept.begin(), kept.end(),
                                [&](const Sum& other) { return Dominates(op, operand, other); }),
                 kept.end());
      kept.push_back(operand);
    }
    if (kept.size() == 1) return kept[0];
    const Sum common = CommonPart(kept);
    if (!common.is_zero()) {
      // Without the common part an operand may be a nested chain again (x + min(y, z) less
      // x is min(y, z)): flatten once more, and prune against the new operands.
      std::vector<Sum> rest;
      for (const Sum& operand : kept) Flatten(op, AddScaled(operand, common, -1), &rest);
      return AddScaled(common, MinMax(op, rest), 1);
    }
    std::vector<SizeExpr> exprs;
    exprs.reserve(kept.size());
    for (const Sum& operand : kept) exprs.push_back(ToExpr(operand));
    // Sorted, the constant (at most one survives) last: `min(x, 8)`.
    std::sort(exprs.begin(), exprs.end(), [](const SizeExpr& x, const SizeExpr& y) {
      const bool x_const = x.as_int().has_value();
      return x_const != y.as_int().has_value() ? !x_const : AtomLess(x, y);
    });
    SizeExpr node = exprs[0];
    for (size_t i = 1; i < exprs.size(); ++i) node = RawBinary(op, node, exprs[i]);
    return AtomSum(node);
  }

  /// The terms every operand has with the same coefficient, plus the smallest constant.
  static Sum CommonPart(const std::vector<Sum>& operands) {
    Sum common;
    common.constant = operands[0].constant;
    for (const Sum& operand : operands)
      common.constant = std::min(common.constant, operand.constant);
    for (const Term& term : operands[0].terms) {
      const bool shared = std::all_of(operands.begin(), operands.end(), [&](const Sum& operand) {
        return std::any_of(operand.terms.begin(), operand.terms.end(), [&](const Term& other) {
          return other.coeff == term.coeff && CompareAtoms(other.atoms, term.atoms) == 0;
        });
      });
      if (shared) common.terms.push_back(term);
    }
    return common;
  }

  const VarBounds& bounds_;
  /// Normal forms by node; each entry holds its node so that the address stays its own.
  std::unordered_map<const Object*, std::pair<SizeExpr, Sum>> memo_;
};

}  // namespace

ConstIntBound NormalFormBound(const SizeExpr& expr, const VarBounds& bounds) {
  try {
    Canonicalizer canonicalizer(bounds);
    return canonicalizer.BoundOf(canonicalizer.Canon(expr));
  } catch (const Error& error) {
    if (error.kind() != "ValueError") throw;  // too deep, as in CanonicalSimplify
    return ConstIntBound{};
  }
}

SizeExpr CanonicalSimplify(const SizeExpr& expr, const VarBounds& bounds) {
  try {
    Canonicalizer canonicalizer(bounds);
    return ToExpr(canonicalizer.Canon(expr));
  } catch (const Error& error) {
    // A normal form deeper than kMaxSizeExprDepth cannot be built; the input is still right.
    if (error.kind() != "ValueError") throw;
    return expr;
  }
}

}  // namespace internal
}  // namespace arith
}  // namespace kiln
