// Reading and making small constant tensors in passes that rewrite arithmetic.
#include "constant_util.h"

#include <kiln/runtime/memory.h>
#include <kiln/transform/infer_type.h>

#include <cstring>

namespace kiln {
namespace transform {
namespace {

template <typename T>
double Load(const char* bytes, int64_t i) {
  T value;
  std::memcpy(&value, bytes + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return static_cast<double>(value);
}

/// Element `i` of a tensor of `dtype` as a double; nullopt for dtypes not read here.
std::optional<double> Element(DLDataType dtype, const char* bytes, int64_t i) {
  if (dtype.lanes != 1) return std::nullopt;
  if (dtype.code == kDLFloat && dtype.bits == 32) return Load<float>(bytes, i);
  if (dtype.code == kDLFloat && dtype.bits == 64) return Load<double>(bytes, i);
  if (dtype.code == kDLInt && dtype.bits == 8) return Load<int8_t>(bytes, i);
  if (dtype.code == kDLInt && dtype.bits == 16) return Load<int16_t>(bytes, i);
  if (dtype.code == kDLInt && dtype.bits == 32) return Load<int32_t>(bytes, i);
  if (dtype.code == kDLInt && dtype.bits == 64) return Load<int64_t>(bytes, i);
  if (dtype.code == kDLUInt && dtype.bits == 8) return Load<uint8_t>(bytes, i);
  return std::nullopt;
}

const char* Bytes(const Tensor& data) {
  return static_cast<const char*>(data.data()) + data.dl_tensor().byte_offset;
}

}  // namespace

std::optional<int64_t> ScalarInt(const ir::Expr& value) {
  const auto* constant = value.as<ir::ConstantObj>();
  if (constant == nullptr || constant->data().NumElements() != 1) return std::nullopt;
  const DLTensor& tensor = constant->data().dl_tensor();
  const char* data = static_cast<const char*>(tensor.data) + tensor.byte_offset;
  if (tensor.dtype.code == kDLInt && tensor.dtype.bits == 64) {
    int64_t result = 0;
    std::memcpy(&result, data, sizeof(result));
    return result;
  }
  if (tensor.dtype.code == kDLUInt && tensor.dtype.bits == 1) return data[0] != 0 ? 1 : 0;
  return std::nullopt;
}

std::optional<double> UniformValue(const ir::Constant& constant) {
  const Tensor& data = constant->data();
  const int64_t n = data.NumElements();
  if (n == 0) return std::nullopt;
  std::optional<double> first = Element(data.dtype(), Bytes(data), 0);
  for (int64_t i = 1; first.has_value() && i < n; ++i) {
    if (Element(data.dtype(), Bytes(data), i) != first) return std::nullopt;
  }
  return first;
}

std::optional<std::vector<float>> Float32Values(const ir::Constant& constant) {
  const Tensor& data = constant->data();
  const DLDataType dtype = data.dtype();
  if (dtype.code != kDLFloat || dtype.bits != 32 || dtype.lanes != 1) return std::nullopt;
  std::vector<float> values(static_cast<size_t>(data.NumElements()));
  std::memcpy(values.data(), Bytes(data), values.size() * sizeof(float));
  return values;
}

ir::Constant MakeFloat32Constant(const std::vector<float>& values,
                                 const std::vector<int64_t>& shape) {
  Tensor data = runtime::Empty(shape, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  KILN_ICHECK(static_cast<size_t>(data.NumElements()) == values.size());
  std::memcpy(data.data(), values.data(), values.size() * sizeof(float));
  ir::Constant constant(data);
  InferNodeType(constant);
  return constant;
}

}  // namespace transform
}  // namespace kiln
