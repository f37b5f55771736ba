#include "tensor_proto.h"

#include <kiln/ffi/error.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/narrow_float.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

using onnx::TensorProto;

constexpr DLDevice kHost{kDLCPU, 0};

/// Calls `visit(T{})` with the C++ type of `dtype`'s elements (Float16 and BFloat16 for the
/// 16-bit floats).
template <typename Visit>
auto VisitElementType(DLDataType dtype, Visit&& visit) {
  switch (dtype.code) {
    case kDLFloat:
      switch (dtype.bits) {
        case 16: return visit(Float16{});
        case 64: return visit(double{});
        default: KILN_ICHECK(dtype.bits == 32) << "float" << int{dtype.bits}; return visit(float{});
      }
    case kDLBfloat: return visit(BFloat16{});
    case kDLUInt:
      switch (dtype.bits) {
        // Kiln's bool is uint1, stored one byte per element.
        case 1: return visit(bool{});
        case 8: return visit(uint8_t{});
        case 16: return visit(uint16_t{});
        case 32: return visit(uint32_t{});
        default:
          KILN_ICHECK(dtype.bits == 64) << "uint" << int{dtype.bits};
          return visit(uint64_t{});
      }
    default: break;
  }
  switch (dtype.bits) {
    case 8: return visit(int8_t{});
    case 16: return visit(int16_t{});
    case 32: return visit(int32_t{});
    default: KILN_ICHECK(dtype.bits == 64) << "int" << int{dtype.bits}; return visit(int64_t{});
  }
}

/// Converts `values` into `tensor`'s elements, in order.
template <typename Source>
void StoreElements(const Tensor& tensor, const Source& values) {
  VisitElementType(tensor.dtype(), [&](auto zero) {
    using T = decltype(zero);
    auto* out = static_cast<T*>(tensor.data());
    int64_t i = 0;
    for (const auto& value : values) out[i++] = static_cast<T>(value);
  });
}

template <typename Result>
std::vector<Result> LoadElements(const Tensor& tensor) {
  return VisitElementType(tensor.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const auto* in = static_cast<const T*>(tensor.data());
    return std::vector<Result>(in, in + tensor.NumElements());
  });
}

/// Number of elements of the typed field that holds `proto`'s data (ONNX stores the integers
/// of up to 16 bits, bool and the 16-bit floats in int32_data, one element per entry, and
/// uint32 with uint64 in uint64_data).
int64_t TypedFieldSize(const TensorProto& proto) {
  switch (proto.data_type()) {
    case TensorProto::FLOAT: return proto.float_data_size();
    case TensorProto::DOUBLE: return proto.double_data_size();
    case TensorProto::INT64: return proto.int64_data_size();
    case TensorProto::UINT32:
    case TensorProto::UINT64: return proto.uint64_data_size();
    default: return proto.int32_data_size();
  }
}

void StoreTypedField(const TensorProto& proto, const Tensor& tensor) {
  switch (proto.data_type()) {
    case TensorProto::FLOAT: StoreElements(tensor, proto.float_data()); break;
    case TensorProto::DOUBLE: StoreElements(tensor, proto.double_data()); break;
    case TensorProto::INT64: StoreElements(tensor, proto.int64_data()); break;
    case TensorProto::UINT32:
    case TensorProto::UINT64: StoreElements(tensor, proto.uint64_data()); break;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16: {
      // int32_data holds their bit patterns, not their values.
      auto* out = static_cast<uint16_t*>(tensor.data());
      int64_t i = 0;
      for (const int32_t bits : proto.int32_data()) out[i++] = static_cast<uint16_t>(bits);
      break;
    }
    default: StoreElements(tensor, proto.int32_data()); break;
  }
}

/// The ONNX element types Kiln imports, each with its dtype.
struct ElementTypeEntry {
  int32_t onnx;
  DLDataType dtype;
};
constexpr ElementTypeEntry kElementTypes[] = {
    {TensorProto::FLOAT, {kDLFloat, 32, 1}},   {TensorProto::DOUBLE, {kDLFloat, 64, 1}},
    {TensorProto::FLOAT16, {kDLFloat, 16, 1}}, {TensorProto::BFLOAT16, {kDLBfloat, 16, 1}},
    {TensorProto::INT8, {kDLInt, 8, 1}},       {TensorProto::INT16, {kDLInt, 16, 1}},
    {TensorProto::INT32, {kDLInt, 32, 1}},     {TensorProto::INT64, {kDLInt, 64, 1}},
    {TensorProto::UINT8, {kDLUInt, 8, 1}},     {TensorProto::UINT16, {kDLUInt, 16, 1}},
    {TensorProto::UINT32, {kDLUInt, 32, 1}},   {TensorProto::UINT64, {kDLUInt, 64, 1}},
    {TensorProto::BOOL, {kDLUInt, 1, 1}},
};
constexpr const char* kImportedTypeNames =
    "float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, uint16, uint32, "
    "uint64, bool";

}  // namespace

DLDataType DTypeFromOnnx(int32_t elem_type, const std::string& what) {
  for (const ElementTypeEntry& entry : kElementTypes) {
    if (entry.onnx == elem_type) return entry.dtype;
  }
  const std::string name = TensorProto::DataType_IsValid(elem_type)
                               ? TensorProto::DataType_Name(elem_type)
                               : std::to_string(elem_type);
  KILN_THROW(NotImplementedError) << what << " has ONNX element type " << name
                                  << ", which Kiln does not import (" << kImportedTypeNames << ")";
}

int32_t DTypeToOnnx(DLDataType dtype, const std::string& what) {
  for (const ElementTypeEntry& entry : kElementTypes) {
    if (DataTypeEqual(entry.dtype, dtype)) return entry.onnx;
  }
  KILN_THROW(NotImplementedError) << what << " has dtype " << DataTypeToString(dtype)
                                  << ", which Kiln does not import (" << kImportedTypeNames << ")";
}

TensorProto TensorToProto(const Tensor& tensor, const std::string& name) {
  const std::string what = "the value of '" + name + "'";
  KILN_CHECK(tensor.device().device_type == kDLCPU && tensor.IsContiguous(), ValueError)
      << what << " must be a compact host (CPU) tensor";
  TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(DTypeToOnnx(tensor.dtype(), what));
  for (int32_t axis = 0; axis < tensor.ndim(); ++axis) proto.add_dims(tensor.shape(axis));
  // An empty tensor may have no data pointer; raw_data must still be present (and empty).
  const auto bytes = static_cast<size_t>(tensor.NumBytes());
  const char* data = bytes == 0
                         ? nullptr
                         : static_cast<const char*>(tensor.data()) + tensor.dl_tensor().byte_offset;
  proto.set_raw_data(bytes == 0 ? std::string() : std::string(data, bytes));
  return proto;
}

/// The number of elements `proto`'s dims give; ValueError for negative dims or an overflow.
int64_t ElementCount(const TensorProto& proto, const std::string& what) {
  int64_t count = 1;
  for (int64_t dim : proto.dims()) {
    KILN_CHECK(dim >= 0 && !__builtin_mul_overflow(count, dim, &count), ValueError)
        << what << " has an invalid shape (a negative dimension or more than 2^63 elements)";
  }
  return count;
}

void CheckDataInside(const TensorProto& proto) {
  KILN_CHECK(proto.data_location() != TensorProto::EXTERNAL, NotImplementedError)
      << "tensor '" << proto.name()
      << "' keeps its data in an external file, which Kiln does not import yet; "
      << "save the model with its tensors inside (onnx.save(model, path, "
      << "save_as_external_data=False))";
}

namespace {

/// ValueError naming `what` unless `proto`'s data (raw_data bytes or typed elements) are as many
/// as its shape needs of `dtype`; the element count.
int64_t CheckDataSize(const TensorProto& proto, DLDataType dtype, const std::string& what) {
  const int64_t count = ElementCount(proto, what);
  const bool raw = proto.has_raw_data();
  const auto given = static_cast<int64_t>(raw ? proto.raw_data().size() / ElementBytes(dtype)
                                              : TypedFieldSize(proto));
  KILN_CHECK(given == count && (!raw || proto.raw_data().size() % ElementBytes(dtype) == 0),
             ValueError)
      << what << " holds " << (raw ? proto.raw_data().size() : TypedFieldSize(proto))
      << (raw ? " bytes of raw_data" : " elements") << ", but its shape needs " << count
      << " elements";
  return count;
}

bool Imports(int32_t elem_type) {
  return std::any_of(
      std::begin(kElementTypes), std::end(kElementTypes),
      [elem_type](const ElementTypeEntry& entry) { return entry.onnx == elem_type; });
}

}  // namespace

void CheckTensorData(const TensorProto& proto) {
  CheckDataInside(proto);
  // Element types Kiln does not import fail with their own error when a converter reads them.
  if (!Imports(proto.data_type())) return;
  const std::string what = "tensor '" + proto.name() + "'";
  CheckDataSize(proto, DTypeFromOnnx(proto.data_type(), what), what);
}

Tensor TensorFromProto(const TensorProto& proto) {
  const std::string what = "tensor '" + proto.name() + "'";
  CheckDataInside(proto);
  const DLDataType dtype = DTypeFromOnnx(proto.data_type(), what);
  // The data are checked against the shape before allocating, so a model cannot make Kiln
  // allocate more than it holds.
  const int64_t count = CheckDataSize(proto, dtype, what);
  const bool raw = proto.has_raw_data();
  Tensor tensor =
      runtime::Empty(std::vector<int64_t>(proto.dims().begin(), proto.dims().end()), dtype, kHost);
  if (!raw) {
    StoreTypedField(proto, tensor);
  } else if (count > 0) {
    std::memcpy(tensor.data(), proto.raw_data().data(), proto.raw_data().size());
  }
  return tensor;
}

std::vector<double> TensorAsDoubles(const Tensor& tensor) { return LoadElements<double>(tensor); }

std::vector<int64_t> TensorAsInts(const Tensor& tensor) { return LoadElements<int64_t>(tensor); }

Tensor TensorFromDoubles(const std::vector<double>& values, const std::vector<int64_t>& shape,
                         DLDataType dtype) {
  Tensor tensor = runtime::Empty(shape, dtype, kHost);
  KILN_ICHECK(tensor.NumElements() == static_cast<int64_t>(values.size()));
  StoreElements(tensor, values);
  return tensor;
}

Tensor FilledTensor(const std::vector<int64_t>& shape, DLDataType dtype, double value) {
  Tensor tensor = runtime::Empty(shape, dtype, kHost);
  StoreElements(tensor, std::vector<double>(tensor.NumElements(), value));
  return tensor;
}

Tensor Int64Tensor(const std::vector<int64_t>& values,
                   const std::optional<std::vector<int64_t>>& shape) {
  Tensor tensor =
      runtime::Empty(shape.value_or(std::vector<int64_t>{static_cast<int64_t>(values.size())}),
                     DLDataType{kDLInt, 64, 1}, kHost);
  KILN_ICHECK(tensor.NumElements() == static_cast<int64_t>(values.size()));
  StoreElements(tensor, values);
  return tensor;
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
