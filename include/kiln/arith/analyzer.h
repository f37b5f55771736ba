/// The Analyzer: simplification, constant bounds and proofs over size expressions.
///
///   Analyzer analyzer;                       // every variable is a size: >= 0
///   analyzer.Bind(batch, 1, 64);             // what the caller knows: 1 <= batch <= 64
///   analyzer.Simplify(FloorDiv(batch * 4 + 8, 4));          // batch + 2
///   analyzer.Bound(batch * 2 + 1);                          // [3, 129]
///   analyzer.CanProveGE(batch * 2, batch + 1);              // true, since batch >= 1
///   analyzer.CanProveDivisible(batch * 6 + 3, 3);           // true
///
/// Contract. Simplify returns an expression with the same value as its input wherever the input
/// is defined (no division by zero; values are mathematical integers), in the normal form of
/// docs/design.md §19, so expressions that simplify to the same form print the same text.
/// Every prover answers true only when the fact holds for every assignment of the variables
/// within their bounds at which the expressions are defined; false means "not proven", never
/// "false". Bound() is sound in the same sense. The algorithms are a normal form plus interval
/// arithmetic: cheap and incomplete (e.g. `x * x >= 0` for x of unknown sign is not proven).
///
/// Thread safety: const methods may run concurrently; Bind must not run alongside them.
#ifndef KILN_ARITH_ANALYZER_H_
#define KILN_ARITH_ANALYZER_H_

#include <kiln/arith/size_expr.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <map>
#include <string>

namespace kiln {
namespace arith {

/// An interval [min, max] of integers. kNegInf as min and kPosInf as max mean unbounded on that
/// side, so INT64_MIN and INT64_MAX themselves are never claimed as finite bounds.
struct ConstIntBound {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();

  int64_t min = kNegInf;
  int64_t max = kPosInf;

  /// True when the interval holds exactly one finite value.
  bool is_const() const { return min == max && min != kNegInf && max != kPosInf; }
  bool operator==(const ConstIntBound& other) const { return min == other.min && max == other.max; }
  bool operator!=(const ConstIntBound& other) const { return !(*this == other); }
};

/// Writes `[min, max]`, with -inf and +inf for the unbounded sides.
KILN_API std::ostream& operator<<(std::ostream& os, const ConstIntBound& bound);

/// What the Analyzer can prove of an expression's sign.
enum class Sign { kZero, kPositive, kNegative, kNonNegative, kNonPositive, kUnknown };

class Analyzer {
 public:
  /// Narrows what is known of `var` (of every variable of its name) to its current bound
  /// intersected with [min, max]; the default bound of a size is [0, +inf). ValueError when the
  /// variable is null or the intersection is empty.
  KILN_API void Bind(const SizeVar& var, int64_t min, int64_t max = ConstIntBound::kPosInf);
  /// The bound known for `var`.
  KILN_API ConstIntBound VarBound(const SizeVar& var) const;

  /// `expr` in normal form (see the contract above). ValueError when `expr` is null.
  KILN_API SizeExpr Simplify(const SizeExpr& expr) const;
  /// Constant bounds of `expr` over the variables' bounds.
  KILN_API ConstIntBound Bound(const SizeExpr& expr) const;

  /// a == b for every assignment.
  KILN_API bool CanProveEqual(const SizeExpr& a, const SizeExpr& b) const;
  /// a >= b, a > b, a <= b, a < b for every assignment.
  KILN_API bool CanProveGE(const SizeExpr& a, const SizeExpr& b) const;
  KILN_API bool CanProveGT(const SizeExpr& a, const SizeExpr& b) const;
  KILN_API bool CanProveLE(const SizeExpr& a, const SizeExpr& b) const;
  KILN_API bool CanProveLT(const SizeExpr& a, const SizeExpr& b) const;
  /// `expr` is a multiple of `divisor` for every assignment. ValueError when divisor is 0.
  KILN_API bool CanProveDivisible(const SizeExpr& expr, int64_t divisor) const;
  /// The most precise sign that holds for every assignment.
  KILN_API Sign ProveSign(const SizeExpr& expr) const;

 private:
  /// Bounds of the bound variables by name (vars of the same name are one variable).
  std::map<std::string, ConstIntBound, std::less<>> var_bounds_;
};

}  // namespace arith
}  // namespace kiln

#endif  // KILN_ARITH_ANALYZER_H_
