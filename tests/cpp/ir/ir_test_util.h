// Small builders shared by the IR tests.
#ifndef KILN_TESTS_CPP_IR_IR_TEST_UTIL_H_
#define KILN_TESTS_CPP_IR_IR_TEST_UTIL_H_

#include <kiln/ir/expr.h>

#include <memory>
#include <vector>

namespace kiln {
namespace ir {
namespace testing {

inline DLDataType Float32() { return DLDataType{kDLFloat, 32, 1}; }

inline TensorType F32(const std::vector<int64_t>& shape) {
  return TensorType::Static(shape, Float32());
}

/// A host float32 tensor that owns a copy of `values`.
inline Tensor HostTensor(const std::vector<float>& values, const std::vector<int64_t>& shape) {
  auto storage = std::make_shared<std::vector<float>>(values);
  return Tensor::FromMemory(storage->data(), shape, Float32(), DLDevice{kDLCPU, 0}, [storage] {});
}

}  // namespace testing
}  // namespace ir
}  // namespace kiln

#endif  // KILN_TESTS_CPP_IR_IR_TEST_UTIL_H_
