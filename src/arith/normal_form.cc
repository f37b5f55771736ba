// The normal form's arithmetic: sums merged in order, products expanded, checked coefficients.
#include <algorithm>
#include <iterator>
#include <map>
#include <optional>

#include "arith_internal.h"
#include "int_arith_internal.h"
#include "normal_form_internal.h"

namespace kiln {
namespace arith {
namespace internal {

int64_t AddOrThrow(int64_t a, int64_t b) {
  const std::optional<int64_t> sum = CheckedAdd(a, b);
  if (!sum.has_value()) throw TooComplex{};
  return *sum;
}

int64_t MulOrThrow(int64_t a, int64_t b) {
  const std::optional<int64_t> product = CheckedMul(a, b);
  if (!product.has_value()) throw TooComplex{};
  return *product;
}

bool AtomLess(const SizeExpr& a, const SizeExpr& b) { return StructuralCompare(a, b) < 0; }

int CompareAtoms(const Atoms& x, const Atoms& y) {
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (const int order = StructuralCompare(x[i], y[i]); order != 0) return order;
  }
  return x.size() == y.size() ? 0 : (x.size() < y.size() ? -1 : 1);
}

namespace {

struct AtomsLess {
  bool operator()(const Atoms& x, const Atoms& y) const { return CompareAtoms(x, y) < 0; }
};

/// `atoms` multiplied out, times `coeff` unless it is 1.
SizeExpr TermExpr(const Atoms& atoms, int64_t coeff) {
  SizeExpr expr = atoms[0];
  for (size_t i = 1; i < atoms.size(); ++i) expr = RawBinary(BinaryOp::kMul, expr, atoms[i]);
  return coeff == 1 ? expr : RawBinary(BinaryOp::kMul, expr, IntImm(coeff));
}

/// The nodes of `term` as the tree it prints as (an atom shared by several terms, or within one,
/// counted at each use), counted up to just past kMaxProductNodes.
size_t TreeSize(const Term& term) {
  size_t count = 0;
  std::vector<const SizeExprObj*> stack;
  for (const SizeExpr& atom : term.atoms) stack.push_back(atom.get());
  while (!stack.empty() && count <= kMaxProductNodes) {
    const SizeExprObj* node = stack.back();
    stack.pop_back();
    ++count;
    if (node->IsInstance<BinaryObj>()) {
      const auto* binary = static_cast<const BinaryObj*>(node);
      stack.push_back(binary->a().get());
      stack.push_back(binary->b().get());
    }
  }
  return count;
}

/// The nodes of the terms of `sum`, summed.
size_t TreeSize(const Sum& sum) {
  size_t total = 0;
  for (const Term& term : sum.terms) total += TreeSize(term);
  return total;
}

}  // namespace

Sum ConstantSum(int64_t value) {
  Sum sum;
  sum.constant = value;
  return sum;
}

Sum AtomSum(SizeExpr atom) {
  Sum sum;
  sum.terms.push_back(Term{{std::move(atom)}, 1});
  return sum;
}

/// x + k * y, by a merge of the sorted term lists.
Sum AddScaled(const Sum& x, const Sum& y, int64_t k) {
  Sum out;
  out.constant = AddOrThrow(x.constant, MulOrThrow(y.constant, k));
  size_t i = 0;
  size_t j = 0;
  while (i < x.terms.size() || j < y.terms.size()) {
    const int order = i == x.terms.size()   ? 1
                      : j == y.terms.size() ? -1
                                            : CompareAtoms(x.terms[i].atoms, y.terms[j].atoms);
    int64_t coeff = 0;
    const Atoms* atoms = nullptr;
    if (order < 0) {
      coeff = x.terms[i].coeff;
      atoms = &x.terms[i++].atoms;
    } else if (order > 0) {
      coeff = MulOrThrow(y.terms[j].coeff, k);
      atoms = &y.terms[j++].atoms;
    } else {
      coeff = AddOrThrow(x.terms[i].coeff, MulOrThrow(y.terms[j++].coeff, k));
      atoms = &x.terms[i++].atoms;
    }
    if (coeff != 0) out.terms.push_back(Term{*atoms, coeff});
  }
  return out;
}

Sum Scale(const Sum& x, int64_t k) { return AddScaled(ConstantSum(0), x, k); }

/// x * y, expanded.
Sum Multiply(const Sum& x, const Sum& y) {
  if (x.is_const()) return Scale(y, x.constant);
  if (y.is_const()) return Scale(x, y.constant);
  // Each term of x meets each of y (and the other's constant): the expansion's size, before
  // any of it is built.
  const size_t nodes = TreeSize(x) * (y.terms.size() + 1) + TreeSize(y) * (x.terms.size() + 1);
  if (nodes > kMaxProductNodes) throw TooComplex{};
  std::map<Atoms, int64_t, AtomsLess> terms;
  auto add = [&terms](Atoms atoms, int64_t coeff) {
    if (atoms.size() > kMaxTerms) throw TooComplex{};
    auto [it, inserted] = terms.emplace(std::move(atoms), coeff);
    if (!inserted) it->second = AddOrThrow(it->second, coeff);
  };
  for (const Term& a : x.terms) {
    for (const Term& b : y.terms) {
      Atoms atoms;
      std::merge(a.atoms.begin(), a.atoms.end(), b.atoms.begin(), b.atoms.end(),
                 std::back_inserter(atoms), AtomLess);
      add(std::move(atoms), MulOrThrow(a.coeff, b.coeff));
    }
    if (y.constant != 0) add(a.atoms, MulOrThrow(a.coeff, y.constant));
  }
  if (x.constant != 0) {
    for (const Term& b : y.terms) add(b.atoms, MulOrThrow(b.coeff, x.constant));
  }
  Sum out;
  out.constant = MulOrThrow(x.constant, y.constant);
  for (auto& [atoms, coeff] : terms) {
    if (coeff != 0) out.terms.push_back(Term{atoms, coeff});
  }
  if (out.terms.size() > kMaxTerms) throw TooComplex{};
  return out;
}

/// The expression of a Sum: positive terms, then negative ones subtracted, then the constant
/// (`batch * 3 + 1`, `a - b * 2`); `3 - a` when only the constant is positive.
SizeExpr ToExpr(const Sum& sum) {
  SizeExpr out;
  bool constant_done = false;
  for (const Term& term : sum.terms) {
    if (term.coeff < 0) continue;
    SizeExpr expr = TermExpr(term.atoms, term.coeff);
    out = out.defined() ? RawBinary(BinaryOp::kAdd, out, expr) : expr;
  }
  if (!out.defined() && sum.constant > 0) {
    out = IntImm(sum.constant);
    constant_done = true;
  }
  for (const Term& term : sum.terms) {
    if (term.coeff > 0) continue;
    if (!out.defined()) {
      out = TermExpr(term.atoms, term.coeff);
    } else if (term.coeff == ConstIntBound::kNegInf) {  // -coeff does not exist
      out = RawBinary(BinaryOp::kAdd, out, TermExpr(term.atoms, term.coeff));
    } else {
      out = RawBinary(BinaryOp::kSub, out, TermExpr(term.atoms, -term.coeff));
    }
  }
  if (!out.defined()) return IntImm(sum.constant);
  if (constant_done || sum.constant == 0) return out;
  if (sum.constant > 0 || sum.constant == ConstIntBound::kNegInf) {
    return RawBinary(BinaryOp::kAdd, out, IntImm(sum.constant));
  }
  return RawBinary(BinaryOp::kSub, out, IntImm(-sum.constant));
}

/// The single atom of `sum` when it is `1 * atom + constant`.
const BinaryObj* SoleAtom(const Sum& sum) {
  if (sum.terms.size() != 1 || sum.terms[0].coeff != 1 || sum.terms[0].atoms.size() != 1) {
    return nullptr;
  }
  return sum.terms[0].atoms[0].as<BinaryObj>();
}

}  // namespace internal
}  // namespace arith
}  // namespace kiln
