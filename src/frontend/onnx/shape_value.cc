#include "shape_value.h"

#include <kiln/ffi/error.h>

#include <cmath>

#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {

std::optional<std::vector<int64_t>> ConstantSizes(const std::vector<arith::SizeExpr>& sizes) {
  std::vector<int64_t> values;
  for (const arith::SizeExpr& size : sizes) {
    const std::optional<int64_t> value = size.as_int();
    if (!value.has_value()) return std::nullopt;
    values.push_back(*value);
  }
  return values;
}

std::optional<std::vector<int64_t>> ShapeValue::AsInts() const { return ConstantSizes(elements); }

ir::TensorType ShapeValue::Type() const {
  Array<ir::Dim> shape;
  if (!scalar) shape.push_back(ir::IntDim(static_cast<int64_t>(elements.size())));
  return ir::TensorType(shape, dtype);
}

std::string ShapeValue::ToString() const {
  if (scalar && elements.size() == 1) return elements[0].ToString();
  std::string text = "[";
  for (size_t i = 0; i < elements.size(); ++i) text += (i ? ", " : "") + elements[i].ToString();
  return text + "]";
}

namespace {

/// Whether `value` is an integer that int64 holds exactly (2^63 itself does not fit).
bool IsInt64Integer(double value) {
  constexpr double kTwoTo63 = 9223372036854775808.0;
  return std::trunc(value) == value && value >= -kTwoTo63 && value < kTwoTo63;
}

}  // namespace

std::optional<ShapeValue> ShapeValueOfTensor(const Tensor& tensor) {
  const DLDataType dtype = tensor.dtype();
  if (tensor.ndim() > 1 || dtype.lanes != 1) return std::nullopt;
  std::vector<int64_t> values;
  if (dtype.code == kDLFloat) {
    for (double value : TensorAsDoubles(tensor)) {
      if (!IsInt64Integer(value)) return std::nullopt;
      values.push_back(static_cast<int64_t>(value));
    }
  } else if (dtype.code == kDLInt || dtype.code == kDLUInt) {
    values = TensorAsInts(tensor);
  } else {
    return std::nullopt;
  }
  ShapeValue value{{}, tensor.ndim() == 0, dtype};
  for (int64_t element : values) value.elements.push_back(arith::IntImm(element));
  return value;
}

Tensor ShapeValueTensor(const ShapeValue& value) {
  const std::optional<std::vector<int64_t>> ints = value.AsInts();
  KILN_ICHECK(ints.has_value()) << "shape value " << value.ToString() << " is symbolic";
  std::vector<int64_t> shape;
  if (!value.scalar) shape.push_back(static_cast<int64_t>(ints->size()));
  // int64 elements directly, so that no value passes through a double.
  if (DataTypeEqual(value.dtype, DLDataType{kDLInt, 64, 1})) return Int64Tensor(*ints, shape);
  return TensorFromDoubles(std::vector<double>(ints->begin(), ints->end()), shape, value.dtype);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
