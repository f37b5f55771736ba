// Types and dimensions of the graph IR.
#include <kiln/ir/type.h>

#include <kiln/ffi/tensor.h>

#include "validate_internal.h"

namespace kiln {
namespace ir {

std::optional<int64_t> Dim::as_static() const {
  if (const auto* dim = get(); dim->IsInstance<IntDimObj>()) {
    return static_cast<const IntDimObj*>(dim)->value();
  }
  return std::nullopt;
}

arith::SizeExpr Dim::AsSizeExpr() const {
  if (const std::optional<int64_t> extent = as_static()) return arith::IntImm(*extent);
  KILN_ICHECK(get()->IsInstance<SymDimObj>()) << "unknown dimension kind " << get()->GetTypeKey();
  return static_cast<const SymDimObj*>(get())->expr();
}

std::string Dim::ToString() const {
  // Every kind prints itself here, so a new kind adds one branch and callers stay as they are.
  // A symbolic extent prints as its expression, which the text format reads back.
  if (const std::optional<int64_t> extent = as_static()) return std::to_string(*extent);
  return AsSizeExpr().ToString();
}

Dim Dim::FromSizeExpr(const arith::SizeExpr& expr) {
  KILN_CHECK(expr.defined(), ValueError) << "a dimension's size expression is null";
  if (const std::optional<int64_t> extent = expr.as_int()) return IntDim(*extent);
  return SymDim(expr);
}

IntDim::IntDim(int64_t value) {
  KILN_CHECK(value >= 0, ValueError) << "a static dimension cannot be negative, got " << value;
  data_ = make_object<IntDimObj>(value);
}

SymDim::SymDim(arith::SizeExpr expr) {
  KILN_CHECK(expr.defined(), ValueError) << "SymDim: the size expression is null";
  KILN_CHECK(!expr.as_int().has_value(), ValueError)
      << "SymDim: " << expr << " is a constant; a static extent is an IntDim "
      << "(Dim::FromSizeExpr picks the kind)";
  data_ = make_object<SymDimObj>(std::move(expr));
}

TensorType::TensorType(Array<Dim> shape, DLDataType dtype) {
  CheckNoNullElement(shape, "TensorType", "dimension");
  KILN_CHECK(dtype.bits > 0 && dtype.lanes > 0, ValueError)
      << "TensorType: dtype " << DataTypeToString(dtype) << " has no bits or no lanes";
  data_ = make_object<TensorTypeObj>(std::move(shape), dtype);
}

TensorType TensorType::Static(const std::vector<int64_t>& shape, DLDataType dtype) {
  Array<Dim> dims;
  for (int64_t extent : shape) dims.push_back(IntDim(extent));
  return TensorType(std::move(dims), dtype);
}

TupleType::TupleType(Array<Type> fields) {
  CheckNoNullElement(fields, "TupleType", "field");
  data_ = make_object<TupleTypeObj>(std::move(fields));
}

FuncType::FuncType(Array<Type> params, Type ret) {
  CheckNoNullElement(params, "FuncType", "parameter type");
  KILN_CHECK(ret.defined(), ValueError) << "FuncType: the result type is null";
  data_ = make_object<FuncTypeObj>(std::move(params), std::move(ret));
}

}  // namespace ir
}  // namespace kiln
