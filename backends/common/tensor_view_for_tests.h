/// For backend tests: a 1-D DLTensor over memory the test owns (the device API is exercised
/// directly, without the runtime's allocator).
#ifndef KILN_BACKENDS_COMMON_TENSOR_VIEW_FOR_TESTS_H_
#define KILN_BACKENDS_COMMON_TENSOR_VIEW_FOR_TESTS_H_

#include <dlpack/dlpack.h>

#include <cstdint>
#include <vector>

namespace kiln {
namespace backend {

/// A 1-D DLTensor over `data`; `shape` lives with it, so the view must not be copied.
struct TensorView {
  TensorView(void* data, int64_t num_elements, DLDevice device, DLDataType dtype,
             uint64_t byte_offset = 0)
      : shape{num_elements} {
    tensor.data = data;
    tensor.device = device;
    tensor.ndim = 1;
    tensor.dtype = dtype;
    tensor.shape = shape.data();
    tensor.strides = nullptr;
    tensor.byte_offset = byte_offset;
  }
  TensorView(const TensorView&) = delete;
  TensorView& operator=(const TensorView&) = delete;

  std::vector<int64_t> shape;
  DLTensor tensor{};
};

}  // namespace backend
}  // namespace kiln

#endif  // KILN_BACKENDS_COMMON_TENSOR_VIEW_FOR_TESTS_H_
