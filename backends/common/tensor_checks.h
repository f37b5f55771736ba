/// Checks the device backends share for the DLTensors they are handed: copies need compact
/// tensors of equal size, and errors describe a tensor as "float32[2, 3] on opencl:0".
#ifndef KILN_BACKENDS_COMMON_TENSOR_CHECKS_H_
#define KILN_BACKENDS_COMMON_TENSOR_CHECKS_H_

#include <kiln/ffi/tensor.h>
#include <kiln/runtime/device_api.h>

#include <cstdint>
#include <string>

namespace kiln {
namespace backend {

/// "float32[2, 3] on opencl:0".
inline std::string DescribeTensor(const DLTensor& tensor) {
  std::string result = DataTypeToString(tensor.dtype) + "[";
  for (int32_t i = 0; i < tensor.ndim; ++i) {
    result += (i == 0 ? "" : ", ") + std::to_string(tensor.shape[i]);
  }
  return result + "] on " + runtime::DeviceTypeName(tensor.device.device_type) + ":" +
         std::to_string(tensor.device.device_id);
}

/// True when the elements are row-major without gaps (strides absent or matching).
inline bool IsCompact(const DLTensor& tensor) {
  if (tensor.strides == nullptr) return true;
  int64_t expected = 1;
  for (int32_t i = tensor.ndim - 1; i >= 0; --i) {
    if (tensor.shape[i] != 1 && tensor.strides[i] != expected) return false;
    expected *= tensor.shape[i];
  }
  return true;
}

/// Bytes of the tensor's elements, as laid out compactly.
inline size_t CompactBytes(const DLTensor& tensor) {
  int64_t count = 1;
  for (int32_t i = 0; i < tensor.ndim; ++i) count *= tensor.shape[i];
  const int64_t bits_per_element = static_cast<int64_t>(tensor.dtype.bits) * tensor.dtype.lanes;
  return static_cast<size_t>((count * bits_per_element + 7) / 8);
}

/// The bytes a copy moves; ValueError unless both sides are compact and of the same size.
inline size_t CheckCopyExtent(const DLTensor& from, const DLTensor& to) {
  KILN_CHECK(IsCompact(from) && IsCompact(to), ValueError)
      << "device copies need compact tensors, got a strided "
      << DescribeTensor(IsCompact(from) ? to : from);
  const size_t nbytes = CompactBytes(from);
  KILN_CHECK(nbytes == CompactBytes(to), ValueError)
      << "cannot copy " << DescribeTensor(from) << " (" << nbytes << " bytes) into "
      << DescribeTensor(to) << " (" << CompactBytes(to) << " bytes)";
  return nbytes;
}

}  // namespace backend
}  // namespace kiln

#endif  // KILN_BACKENDS_COMMON_TENSOR_CHECKS_H_
