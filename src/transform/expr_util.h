// Small questions rewrite rules ask of typed expressions.
#ifndef KILN_SRC_TRANSFORM_EXPR_UTIL_H_
#define KILN_SRC_TRANSFORM_EXPR_UTIL_H_

#include <kiln/ir/expr_functor.h>
#include <kiln/ir/op.h>

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

/// The static shape of a typed tensor expression (rules run after InferType, on static shapes).
inline std::vector<int64_t> StaticShapeOf(const ir::Expr& expr) {
  std::vector<int64_t> shape;
  for (const ir::Dim& dim : expr->checked_type().as<ir::TensorTypeObj>()->shape()) {
    shape.push_back(dim.as_static().value());
  }
  return shape;
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
