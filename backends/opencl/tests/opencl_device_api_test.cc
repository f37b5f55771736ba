// The OpenCL device API through the C table ("device_api.opencl"), as the runtime uses it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "opencl_test_util.h"

namespace kiln {
namespace opencl_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(OpenCLBackendTest, LoadsAsARuntimePlugin) {
  PluginInfo info = LoadPlugin(KILN_OPENCL_BACKEND);
  EXPECT_EQ(info.at("status").cast<std::string>(), "loaded") << info.at("reason").cast<String>();
  EXPECT_EQ(info.at("name").cast<std::string>(), "runtime_opencl");
  EXPECT_TRUE(runtime::DeviceApiRef::Find(kDLOpenCL).has_value());
  // Exist never throws, whatever the device id.
  EXPECT_FALSE(runtime::DeviceExists({kDLOpenCL, -1}));
  EXPECT_FALSE(runtime::DeviceExists({kDLOpenCL, 1 << 20}));
}

TEST_F(OpenCLTest, ReportsDeviceAttributes) {
  const int64_t count = Api().GetAttr(0, kKilnDeviceAttrDeviceCount).cast<int64_t>();
  ASSERT_GE(count, 1);
  EXPECT_TRUE(runtime::DeviceExists({kDLOpenCL, static_cast<int32_t>(count - 1)}));
  EXPECT_FALSE(runtime::DeviceExists({kDLOpenCL, static_cast<int32_t>(count)}));
  EXPECT_FALSE(Api().GetAttr(0, kKilnDeviceAttrName).cast<std::string>().empty());
  EXPECT_THAT(Api().GetAttr(0, kKilnDeviceAttrComputeVersion).cast<std::string>(),
              StartsWith("OpenCL "));
  EXPECT_GT(Api().GetAttr(0, kKilnDeviceAttrTotalMemory).cast<int64_t>(), 0);
  EXPECT_GT(Api().GetAttr(0, kKilnDeviceAttrMaxThreadsPerBlock).cast<int64_t>(), 0);
  EXPECT_GT(Api().GetAttr(0, kKilnDeviceAttrMultiProcessorCount).cast<int64_t>(), 0);
  EXPECT_FALSE(Api().GetAttr(0, kKilnDeviceAttrDriverVersion).cast<std::string>().empty());
  EXPECT_THAT(ErrorMessage("ValueError", [&] { Api().GetAttr(count, kKilnDeviceAttrName); }),
              HasSubstr("OpenCL device " + std::to_string(count) + " does not exist"));
}

TEST_F(OpenCLTest, AllocatesAndFrees) {
  void* buffer = Api().Alloc(0, 1 << 20, 64);
  ASSERT_NE(buffer, nullptr);
  Api().Free(0, buffer);
  // A zero-byte tensor still gets a handle it can pass to kernels.
  void* empty = Api().Alloc(0, 0, 64);
  EXPECT_NE(empty, nullptr);
  Api().Free(0, empty);
  Api().Free(0, nullptr);
  EXPECT_THAT(ErrorMessage("ValueError", [&] { Api().Alloc(1 << 20, 16, 64); }),
              HasSubstr("OpenCL device 1048576 does not exist: "));
}

TEST_F(OpenCLTest, CopiesHostToDeviceToDeviceToHostWithByteOffsets) {
  constexpr int64_t kCount = 1000;
  std::vector<float> source(kCount + 16);
  std::iota(source.begin(), source.end(), 0.5f);
  std::vector<float> result(kCount + 8, -1.0f);
  void* first = Api().Alloc(0, 8192, 64);
  void* second = Api().Alloc(0, 8192, 64);

  // Host elements [16, 16 + kCount) -> first @ 100 bytes -> second @ 2000 bytes -> result[8..].
  TensorView host_in(source.data(), kCount, kCPU, kFloat32, 16 * sizeof(float));
  TensorView first_view(first, kCount, kOpenCL0, kFloat32, 100);
  TensorView second_view(second, kCount, kOpenCL0, kFloat32, 2000);
  TensorView host_out(result.data(), kCount, kCPU, kFloat32, 8 * sizeof(float));
  Api().Copy(host_in.tensor, first_view.tensor);
  Api().Copy(first_view.tensor, second_view.tensor);
  Api().Copy(second_view.tensor, host_out.tensor);
  Api().Sync(0);

  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(result[i], -1.0f) << "written before the offset";
  for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(result[8 + i], source[16 + i]) << "at " << i;
  Api().Free(0, first);
  Api().Free(0, second);
}

TEST_F(OpenCLTest, CopiesOnAStream) {
  std::vector<float> source = {1, 2, 3, 4};
  std::vector<float> result(4, 0.0f);
  void* buffer = Api().Alloc(0, sizeof(float) * 4, 64);
  KilnStreamHandle stream = Api().CreateStream(0);
  ASSERT_NE(stream, nullptr);
  TensorView host_in(source.data(), 4, kCPU, kFloat32);
  TensorView device(buffer, 4, kOpenCL0, kFloat32);
  TensorView host_out(result.data(), 4, kCPU, kFloat32);
  Api().Copy(host_in.tensor, device.tensor, stream);
  Api().Copy(device.tensor, host_out.tensor, stream);
  Api().Sync(0, stream);
  EXPECT_EQ(result, source);
  Api().FreeStream(0, stream);
  Api().Free(0, buffer);
}

TEST_F(OpenCLTest, RejectsCopiesThatDoNotFit) {
  std::vector<float> host(64, 0.0f);
  void* buffer = Api().Alloc(0, 64 * sizeof(float), 64);
  TensorView host_view(host.data(), 64, kCPU, kFloat32);
  TensorView shifted(buffer, 64, kOpenCL0, kFloat32, 16);
  EXPECT_THAT(ErrorMessage("ValueError", [&] { Api().Copy(host_view.tensor, shifted.tensor); }),
              HasSubstr("overrun its OpenCL buffer of 256 bytes"));

  TensorView shorter(buffer, 32, kOpenCL0, kFloat32);
  EXPECT_THAT(ErrorMessage("ValueError", [&] { Api().Copy(host_view.tensor, shorter.tensor); }),
              HasSubstr("cannot copy float32[64] on cpu:0 (256 bytes) into float32[32]"));

  TensorView on_cuda(host.data(), 64, {kDLCUDA, 0}, kFloat32);
  TensorView device(buffer, 64, kOpenCL0, kFloat32);
  EXPECT_THAT(ErrorMessage("ValueError", [&] { Api().Copy(on_cuda.tensor, device.tensor); }),
              HasSubstr("copies between OpenCL and CPU memory"));
  Api().Free(0, buffer);
}

}  // namespace
}  // namespace opencl_test
}  // namespace kiln
