// Private to libkiln_runtime: how the allocator, CopyTensor and the CPU device API write
// tensors in error messages (the DLTensor facts themselves are in kiln/ffi/tensor.h).
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
