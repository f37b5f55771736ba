// Private to Kiln's runtime libraries: how the allocator, CopyTensor and the CPU device API
// write tensors in error messages (the DLTensor facts themselves are in kiln/ffi/tensor.h), and
// module functions' view of the DLTensor arguments the graph executor passes.
#ifndef KILN_SRC_RUNTIME_TENSOR_UTIL_INTERNAL_H_
#define KILN_SRC_RUNTIME_TENSOR_UTIL_INTERNAL_H_

#include <kiln/ffi/tensor.h>
#include <kiln/runtime/device_api.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

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

/// A Tensor over `tensor`'s memory, without ownership: valid while `tensor` is, as a module
/// function's arguments are during the call.
inline Tensor ViewOf(const DLTensor& tensor) {
  std::vector<int64_t> strides;
  if (tensor.strides != nullptr) strides.assign(tensor.strides, tensor.strides + tensor.ndim);
  return Tensor::FromMemory(DataStart(tensor),
                            std::vector<int64_t>(tensor.shape, tensor.shape + tensor.ndim),
                            tensor.dtype, tensor.device, nullptr, strides);
}

}  // namespace internal
}  // namespace runtime
}  // namespace kiln

#endif  // KILN_SRC_RUNTIME_TENSOR_UTIL_INTERNAL_H_
