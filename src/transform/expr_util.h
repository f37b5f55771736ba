// Small questions rewrite rules ask of typed expressions.
#ifndef KILN_SRC_TRANSFORM_EXPR_UTIL_H_
#define KILN_SRC_TRANSFORM_EXPR_UTIL_H_

#include <kiln/ir/op.h>

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

}  // namespace transform
}  // namespace kiln

#endif  // KILN_SRC_TRANSFORM_EXPR_UTIL_H_
