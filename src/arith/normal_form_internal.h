// The normal form of size expressions as a value (a Sum of Terms) and its arithmetic; the
// rules that bring expressions into it are in canonical_simplify.cc.
#ifndef KILN_SRC_ARITH_NORMAL_FORM_INTERNAL_H_
#define KILN_SRC_ARITH_NORMAL_FORM_INTERNAL_H_

#include <kiln/arith/size_expr.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {
namespace arith {
namespace internal {

/// Products of sums are expanded; past this many terms (or atoms in one term) the product
/// stays an atom, so (a + b + 1) * (c + d + 1) * ... cannot blow up. (A sum has at most as
/// many terms as its input has leaves, so sums need no limit.)
constexpr size_t kMaxTerms = 64;
/// Nor may an expanded product hold more than this many nodes, its atoms counted as the trees
/// they print as: terms of a product share atoms, so an atom kept whole that holds an earlier
/// expanded product would otherwise have its text grow exponentially with each factor.
constexpr size_t kMaxProductNodes = 4096;

/// Thrown when a normal form would overflow int64 or grow past kMaxTerms; the simplifier catches
/// it per node and keeps that node as it is.
struct TooComplex {};

/// a + b and a * b, or TooComplex.
int64_t AddOrThrow(int64_t a, int64_t b);
int64_t MulOrThrow(int64_t a, int64_t b);

/// The atoms of a term: variables and nodes the normal form does not open (floordiv, floormod,
/// min, max, and nodes kept whole), sorted by StructuralCompare, with repetition (x * x).
using Atoms = std::vector<SizeExpr>;

bool AtomLess(const SizeExpr& a, const SizeExpr& b);
/// Lexicographic by StructuralCompare, a prefix first.
int CompareAtoms(const Atoms& x, const Atoms& y);

struct Term {
  Atoms atoms;
  int64_t coeff;
};

/// constant + sum of coeff * product(atoms). Terms are sorted by CompareAtoms, no coefficient is
/// zero and no two terms have the same atoms, so equal values of Sum print the same text.
struct Sum {
  std::vector<Term> terms;
  int64_t constant = 0;

  bool is_const() const { return terms.empty(); }
  bool is_zero() const { return terms.empty() && constant == 0; }
};

Sum ConstantSum(int64_t value);
/// 1 * atom.
Sum AtomSum(SizeExpr atom);
/// x + k * y.
Sum AddScaled(const Sum& x, const Sum& y, int64_t k);
/// k * x.
Sum Scale(const Sum& x, int64_t k);
/// x * y, expanded; TooComplex past kMaxTerms or kMaxProductNodes.
Sum Multiply(const Sum& x, const Sum& y);

/// The expression of a Sum: positive terms, then negative ones subtracted, then the constant
/// (`batch * 3 + 1`, `a - b * 2`); `3 - a` when only the constant is positive. Built with
/// RawBinary, so the builders' rules cannot reshape it.
SizeExpr ToExpr(const Sum& sum);

/// The single atom of `sum` when it is `1 * atom + constant` and the atom is a binary node.
const BinaryObj* SoleAtom(const Sum& sum);

}  // namespace internal
}  // namespace arith
}  // namespace kiln

#endif  // KILN_SRC_ARITH_NORMAL_FORM_INTERNAL_H_
