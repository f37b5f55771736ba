// What the OpenCL backend tests share: loading the backend, skipping without a device, and
// DLTensors over raw buffers (the device API is used directly, not the runtime's allocator).
#ifndef KILN_BACKENDS_OPENCL_TESTS_OPENCL_TEST_UTIL_H_
#define KILN_BACKENDS_OPENCL_TESTS_OPENCL_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <kiln/ffi/plugin.h>
#include <kiln/runtime/device_api.h>

#include "common/tensor_view_for_tests.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace opencl_test {

using backend::TensorView;

constexpr DLDataType kFloat32 = {kDLFloat, 32, 1};
constexpr DLDevice kOpenCL0 = {kDLOpenCL, 0};
constexpr DLDevice kCPU = {kDLCPU, 0};

/// Loads libkiln_runtime_opencl.so once per test (a second load is a no-op) and skips the test
/// when there is no OpenCL device, with the backend's reason.
class OpenCLTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_THROW(LoadPlugin(KILN_OPENCL_BACKEND));
    if (!runtime::DeviceExists(kOpenCL0)) {
      GTEST_SKIP() << "no OpenCL device: "
                   << Function::GetGlobalRequired("runtime.opencl.Status")().cast<std::string>();
    }
  }
  static runtime::DeviceApiRef Api() { return runtime::DeviceApiRef::Get(kDLOpenCL); }
};

/// The message of the kiln::Error that `body` throws, with its kind checked; "" if none.
template <typename Body>
std::string ErrorMessage(const char* expected_kind, Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), expected_kind) << error.what();
    return error.message();
  }
  ADD_FAILURE() << "expected a " << expected_kind << ", but nothing was thrown";
  return "";
}

}  // namespace opencl_test
}  // namespace kiln

#endif  // KILN_BACKENDS_OPENCL_TESTS_OPENCL_TEST_UTIL_H_
