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

/// The bytes a copy moves; ValueError unless both sides are compact and of the same size.
inline size_t CheckCopyExtent(const DLTensor& from, const DLTensor& to) {
  KILN_CHECK(IsCompact(from) && IsCompact(to), ValueError)
      << "device copies need compact tensors, got a strided "
      << DescribeTensor(IsCompact(from) ? to : from);
  const auto nbytes = static_cast<size_t>(CompactBytes(from));
  KILN_CHECK(static_cast<int64_t>(nbytes) == CompactBytes(to), ValueError)
      << "cannot copy " << DescribeTensor(from) << " (" << nbytes << " bytes) into "
      << DescribeTensor(to) << " (" << CompactBytes(to) << " bytes)";
  return nbytes;
}

}  // namespace backend
}  // namespace kiln

#endif  // KILN_BACKENDS_COMMON_TENSOR_CHECKS_H_
