// Private to libkiln_runtime: DLTensor facts shared by the allocator, CopyTensor and the CPU
// device API, and how they are written in error messages.
#ifndef KILN_SRC_RUNTIME_TENSOR_UTIL_INTERNAL_H_
#define KILN_SRC_RUNTIME_TENSOR_UTIL_INTERNAL_H_

#include <kiln/ffi/tensor.h>
#include <kiln/runtime/device_api.h>

#include <cstdint>
#include <sstream>
#include <string>

namespace kiln {
namespace runtime {
namespace internal {

/// Bytes per element of `dtype`, as Tensor::NumBytes counts them (sub-byte types take a byte).
inline int64_t ElementBytes(DLDataType dtype) {
  return (static_cast<int64_t>(dtype.bits) * dtype.lanes + 7) / 8;
}

/// Bytes of a compact tensor with `tensor`'s shape and dtype.
inline int64_t NumBytes(const DLTensor& tensor) {
  int64_t elements = 1;
  for (int32_t i = 0; i < tensor.ndim; ++i) elements *= tensor.shape[i];
  return elements * ElementBytes(tensor.dtype);
}

/// True when the elements are row-major without gaps (strides absent or equal to those).
inline bool IsCompact(const DLTensor& tensor) {
  if (tensor.strides == nullptr) return true;
  int64_t expected = 1;
  for (int32_t i = tensor.ndim - 1; i >= 0; --i) {
    if (tensor.shape[i] != 1 && tensor.strides[i] != expected) return false;
    expected *= tensor.shape[i];
  }
  return true;
}

/// "(2, 3)", "(4,)", "()": Python's tuple syntax, as users see shapes.
inline std::string ShapeToString(const DLTensor& tensor) {
  std::ostringstream os;
  os << Shape(tensor.shape, tensor.ndim);
  return os.str();
}

/// "cpu:0", "cuda:1"; "device_type 42:0" for a type Kiln has no name for.
inline std::string DeviceToString(DLDevice device) {
  std::string type = DeviceTypeName(device.device_type);
  if (type == "unknown") type = "device_type " + std::to_string(device.device_type);
  return type + ":" + std::to_string(device.device_id);
}

/// The first byte of `tensor`'s elements.
inline char* DataStart(const DLTensor& tensor) {
  return static_cast<char*>(tensor.data) + tensor.byte_offset;
}

}  // namespace internal
}  // namespace runtime
}  // namespace kiln

#endif  // KILN_SRC_RUNTIME_TENSOR_UTIL_INTERNAL_H_
