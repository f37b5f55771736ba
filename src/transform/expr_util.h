// Small questions rewrite rules ask of typed expressions.
#ifndef KILN_SRC_TRANSFORM_EXPR_UTIL_H_
#define KILN_SRC_TRANSFORM_EXPR_UTIL_H_

#include <kiln/ir/expr_functor.h>
#include <kiln/ir/op.h>

#include <optional>
#include <unordered_map>
#include <vector>

namespace kiln {
namespace transform {

/// `expr` as a Call of the op named `name`, or nullptr.
inline const ir::CallObj* AsCallOf(const ir::Expr& expr, const char* name) {
  const auto* call = expr.as<ir::CallObj>();
  if (call == nullptr) return nullptr;
  const auto* op = call->op().as<ir::OpObj>();
  return op != nullptr && op->name() == name ? call : nullptr;
}

/// The static shape of a typed tensor expression, or nullopt when a dimension is symbolic (rules
/// that need extents leave such expressions unchanged).
inline std::optional<std::vector<int64_t>> StaticShapeOf(const ir::Expr& expr) {
  std::vector<int64_t> shape;
  for (const ir::Dim& dim : expr->checked_type().as<ir::TensorTypeObj>()->shape()) {
    const std::optional<int64_t> extent = dim.as_static();
    if (!extent.has_value()) return std::nullopt;
    shape.push_back(*extent);
  }
  return shape;
}

/// The rank of a typed tensor expression, whose dimensions may be symbolic.
inline int64_t RankOf(const ir::Expr& expr) {
  return static_cast<int64_t>(expr->checked_type().as<ir::TensorTypeObj>()->shape().size());
}

/// How many times each node of `func`'s body is read: as a call argument, a tuple field, the
/// tuple of a TupleGetItem, or the body's own result (read by the caller). For rules that may
/// only absorb a producer nothing else reads.
inline std::unordered_map<const Object*, int> CountUses(const ir::Function& func) {
  std::unordered_map<const Object*, int> uses;
  ir::PostOrderVisit(func->body(), [&uses](const ir::Expr& expr) {
    if (const auto* call = expr.as<ir::CallObj>()) {
      for (const ir::Expr& arg : call->args()) ++uses[arg.get()];
    } else if (const auto* tuple = expr.as<ir::TupleObj>()) {
      for (const ir::Expr& field : tuple->fields()) ++uses[field.get()];
    } else if (const auto* item = expr.as<ir::TupleGetItemObj>()) {
      ++uses[item->tuple().get()];
    }
  });
  ++uses[func->body().get()];
  return uses;
}

}  // namespace transform
}  // namespace kiln

#endif  // KILN_SRC_TRANSFORM_EXPR_UTIL_H_
