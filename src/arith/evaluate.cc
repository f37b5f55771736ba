// Evaluation of size expressions under an assignment, and the variables they mention.
//
// Evaluation is the reference the simplifier is tested against, so it is deliberately plain:
// one recursive walk in int64 with every step checked, no shortcuts.
#include <kiln/arith/size_expr.h>

#include <set>

#include "arith_internal.h"
#include "int_arith_internal.h"

namespace kiln {
namespace arith {
namespace {

class Evaluator {
 public:
  Evaluator(const SizeExpr& root, const std::map<std::string, int64_t>& values)
      : root_(root), values_(values) {}

  int64_t Eval(const SizeExpr& expr) {
    if (const auto* imm = expr.as<IntImmObj>()) return imm->value();
    if (const auto* var = expr.as<SizeVarObj>()) {
      auto it = values_.find(var->name().str());
      KILN_CHECK(it != values_.end(), ValueError)
          << "Evaluate: variable '" << var->name() << "' of " << root_ << " has no value";
      return it->second;
    }
    const auto* node = expr.as<BinaryObj>();
    KILN_ICHECK(node != nullptr) << "unknown size expression kind " << expr->GetTypeKey();
    const int64_t x = Eval(node->a());
    const int64_t y = Eval(node->b());
    std::optional<int64_t> result;
    switch (node->op()) {
      case BinaryOp::kAdd: result = internal::CheckedAdd(x, y); break;
      case BinaryOp::kSub: result = internal::CheckedSub(x, y); break;
      case BinaryOp::kMul: result = internal::CheckedMul(x, y); break;
      case BinaryOp::kFloorDiv:
        CheckDivisor(expr, y);
        result = internal::CheckedFloorDiv(x, y);
        break;
      case BinaryOp::kFloorMod:
        CheckDivisor(expr, y);
        result = internal::FloorModOf(x, y);
        break;
      case BinaryOp::kMin: result = std::min(x, y); break;
      case BinaryOp::kMax: result = std::max(x, y); break;
    }
    KILN_CHECK(result.has_value(), OverflowError)
        << "Evaluate: " << expr << Where(expr) << " does not fit in int64 (operands " << x
        << " and " << y << ")";
    return *result;
  }

 private:
  void CheckDivisor(const SizeExpr& expr, int64_t divisor) const {
    KILN_CHECK(divisor != 0, ValueError) << "Evaluate: division by zero in " << expr << Where(expr);
  }

  /// " of <root>" when the subexpression at fault is not the whole expression.
  std::string Where(const SizeExpr& expr) const {
    return expr.same_as(root_) ? std::string() : " of " + root_.ToString();
  }

  const SizeExpr& root_;
  const std::map<std::string, int64_t>& values_;
};

void CollectVars(const SizeExpr& expr, std::set<std::string>* names) {
  if (const auto* var = expr.as<SizeVarObj>()) {
    names->insert(var->name().str());
  } else if (const auto* node = expr.as<BinaryObj>()) {
    CollectVars(node->a(), names);
    CollectVars(node->b(), names);
  }
}

}  // namespace

int64_t Evaluate(const SizeExpr& expr, const std::map<std::string, int64_t>& values) {
  KILN_CHECK(expr.defined(), ValueError) << "Evaluate: the expression is null";
  return Evaluator(expr, values).Eval(expr);
}

std::vector<std::string> FreeSizeVars(const SizeExpr& expr) {
  std::set<std::string> names;
  if (expr.defined()) CollectVars(expr, &names);
  return std::vector<std::string>(names.begin(), names.end());
}

SizeExpr Substitute(const SizeExpr& expr, const std::map<std::string, SizeExpr>& values) {
  if (const auto* var = expr.as<SizeVarObj>()) {
    auto it = values.find(var->name().str());
    return it == values.end() ? expr : it->second;
  }
  if (const auto* binary = expr.as<BinaryObj>()) {
    const SizeExpr a = Substitute(binary->a(), values);
    const SizeExpr b = Substitute(binary->b(), values);
    if (a.same_as(binary->a()) && b.same_as(binary->b())) return expr;
    return MakeBinary(binary->op(), a, b);
  }
  return expr;
}

}  // namespace arith
}  // namespace kiln
