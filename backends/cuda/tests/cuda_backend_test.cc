// The CUDA backend: it must load and explain itself on a machine without a GPU or driver, and
// on a machine with one, allocate, copy and run PTX kernels through the "cuda" module kind.
// Tests that need a device skip, with runtime.cuda.Status() as the reason, when there is none.
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <kiln/ffi/plugin.h>
#include <kiln/runtime/device_api.h>

#include <kiln/runtime/module.h>
#include "common/tensor_view_for_tests.h"

#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace kiln {
namespace {

using runtime::DeviceApiRef;
using runtime::Module;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr DLDataType kFloat32 = {kDLFloat, 32, 1};
constexpr DLDataType kInt64 = {kDLInt, 64, 1};
constexpr DLDevice kCUDA0 = {kDLCUDA, 0};
constexpr DLDevice kCPU = {kDLCPU, 0};

using backend::TensorView;

std::string CudaStatus() {
  return Function::GetGlobalRequired("runtime.cuda.Status")().cast<std::string>();
}

std::string TestPtx() {
  std::ifstream file(KILN_CUDA_TEST_PTX);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

Module CreateModule(const std::string& image, const std::vector<std::string>& kernels) {
  Array<String> names;
  for (const std::string& kernel : kernels) names.push_back(String(kernel));
  return Function::GetGlobalRequired("runtime.cuda.ModuleCreate")(Bytes(std::string_view(image)),
                                                                  names)
      .cast<Module>();
}

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

/// True when this process's own CUDA runtime sees a device.
bool RuntimeSeesADevice(int* count) {
  *count = 0;
  const bool usable = cudaGetDeviceCount(count) == cudaSuccess && *count > 0;
  cudaGetLastError();
  return usable;
}

// ---- always run: loading and reporting, with or without a GPU ------------------------------

TEST(CUDABackendTest, LoadsAndAgreesWithTheRuntimeOnDevices) {
  PluginInfo info = LoadPlugin(KILN_CUDA_BACKEND);
  ASSERT_EQ(info.at("status").cast<std::string>(), "loaded") << info.at("reason").cast<String>();
  ASSERT_TRUE(DeviceApiRef::Find(kDLCUDA).has_value());

  int count = 0;
  const bool has_device = RuntimeSeesADevice(&count);
  EXPECT_EQ(runtime::DeviceExists(kCUDA0), has_device);
  EXPECT_EQ(DeviceApiRef::Get(kDLCUDA).GetAttr(0, kKilnDeviceAttrDeviceCount).cast<int64_t>(),
            has_device ? count : 0);
  EXPECT_FALSE(runtime::DeviceExists({kDLCUDA, has_device ? count : 1}));
  const std::string status = CudaStatus();
  EXPECT_EQ(status.empty(), has_device) << status;
  if (!has_device) std::cout << "CUDA is not usable here: " << status << "\n";
}

TEST(CUDABackendTest, WithoutADeviceEveryCallSaysWhy) {
  ASSERT_NO_THROW(LoadPlugin(KILN_CUDA_BACKEND));
  if (runtime::DeviceExists(kCUDA0)) GTEST_SKIP() << "a CUDA device is usable here";
  const std::string status = CudaStatus();
  ASSERT_FALSE(status.empty());
  DeviceApiRef api = DeviceApiRef::Get(kDLCUDA);
  EXPECT_THAT(ErrorMessage("RuntimeError", [&] { api.Alloc(0, 1024, 64); }),
              AllOf(HasSubstr("CUDA device 0 cannot be used: "), HasSubstr(status)));
  EXPECT_THAT(ErrorMessage("RuntimeError", [&] { api.GetAttr(0, kKilnDeviceAttrName); }),
              HasSubstr(status));
  Module module = CreateModule(TestPtx(), {"saxpy"});
  EXPECT_THAT(
      ErrorMessage("RuntimeError", [&] { module.GetFunctionRequired("saxpy")(1, 2, 3, 4, 5, 6); }),
      HasSubstr(status));
}

TEST(CUDAModuleTest, SavesAndLoadsWithoutADevice) {
  ASSERT_NO_THROW(LoadPlugin(KILN_CUDA_BACKEND));
  const std::string ptx = TestPtx();
  ASSERT_THAT(ptx, HasSubstr(".entry saxpy"));
  Module module = CreateModule(ptx, {"saxpy", "fill"});
  EXPECT_EQ(module->kind(), "cuda");
  EXPECT_EQ(module->compatibility(), "cuda/1");
  EXPECT_EQ(module->runtime_library(), "libkiln_runtime_cuda.so");
  const Bytes saved = *module->SaveToBytes();
  Function load = Function::GetGlobalRequired("runtime.module.load_bytes.cuda");
  Module loaded = load(saved).cast<Module>();
  EXPECT_EQ(loaded->ListFunctions(), (std::vector<std::string>{"saxpy", "fill"}));
  EXPECT_TRUE(loaded->SaveToBytes()->view() == saved.view());

  EXPECT_THAT(
      ErrorMessage("ValueError", [&] { load(Bytes(saved.view().substr(0, saved.size() - 1))); }),
      HasSubstr("the saved CUDA module is truncated"));
  EXPECT_THAT(ErrorMessage("ValueError", [&] { CreateModule("not an image", {"saxpy"}); }),
              HasSubstr("needs PTX text, a cubin or a fatbin"));
  EXPECT_THAT(ErrorMessage("AttributeError", [&] { module.GetFunctionRequired("nope"); }),
              HasSubstr("has no function 'nope' (it has: saxpy, fill)"));
}

// ---- need a device ----------------------------------------------------------------------------

class CUDATest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_THROW(LoadPlugin(KILN_CUDA_BACKEND));
    if (!runtime::DeviceExists(kCUDA0)) GTEST_SKIP() << CudaStatus();
  }
  static DeviceApiRef Api() { return DeviceApiRef::Get(kDLCUDA); }
};

TEST_F(CUDATest, ReportsDeviceAttributes) {
  EXPECT_FALSE(Api().GetAttr(0, kKilnDeviceAttrName).cast<std::string>().empty());
  EXPECT_GT(Api().GetAttr(0, kKilnDeviceAttrTotalMemory).cast<int64_t>(), 0);
  EXPECT_THAT(Api().GetAttr(0, kKilnDeviceAttrComputeVersion).cast<std::string>(),
              ::testing::MatchesRegex("[0-9]+\\.[0-9]+"));
  EXPECT_GT(Api().GetAttr(0, kKilnDeviceAttrMaxThreadsPerBlock).cast<int64_t>(), 0);
  EXPECT_GT(Api().GetAttr(0, kKilnDeviceAttrMultiProcessorCount).cast<int64_t>(), 0);
  EXPECT_FALSE(Api().GetAttr(0, kKilnDeviceAttrDriverVersion).cast<std::string>().empty());
}

TEST_F(CUDATest, CopiesHostToDeviceToDeviceToHostWithByteOffsets) {
  constexpr int64_t kCount = 1000;
  std::vector<float> source(kCount + 16);
  std::iota(source.begin(), source.end(), 0.5f);
  std::vector<float> result(kCount + 8, -1.0f);
  void* first = Api().Alloc(0, 8192, 256);
  void* second = Api().Alloc(0, 8192, 256);
  TensorView host_in(source.data(), kCount, kCPU, kFloat32, 16 * sizeof(float));
  TensorView first_view(first, kCount, kCUDA0, kFloat32, 100);
  TensorView second_view(second, kCount, kCUDA0, kFloat32, 2000);
  TensorView host_out(result.data(), kCount, kCPU, kFloat32, 8 * sizeof(float));
  KilnStreamHandle stream = Api().CreateStream(0);
  Api().Copy(host_in.tensor, first_view.tensor, stream);
  Api().Copy(first_view.tensor, second_view.tensor, stream);
  Api().Copy(second_view.tensor, host_out.tensor, stream);
  Api().Sync(0, stream);
  Api().FreeStream(0, stream);
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(result[i], -1.0f) << "written before the offset";
  for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(result[8 + i], source[16 + i]) << "at " << i;
  Api().Free(0, first);
  Api().Free(0, second);
}

/// Runs saxpy from `module` on the device and checks it against the host.
void ExpectSaxpyRuns(DeviceApiRef api, const Module& module) {
  constexpr int64_t kN = 1000;
  std::vector<float> a(kN), b(kN), c(kN, 0.0f);
  for (int64_t i = 0; i < kN; ++i) {
    a[i] = 0.25f * static_cast<float>(i);
    b[i] = 1000.0f - static_cast<float>(i);
  }
  void* buffers[3];
  for (void*& buffer : buffers) buffer = api.Alloc(0, kN * sizeof(float), 256);
  TensorView da(buffers[0], kN, kCUDA0, kFloat32), db(buffers[1], kN, kCUDA0, kFloat32),
      dc(buffers[2], kN, kCUDA0, kFloat32);
  TensorView ha(a.data(), kN, kCPU, kFloat32), hb(b.data(), kN, kCPU, kFloat32),
      hc(c.data(), kN, kCPU, kFloat32);
  api.Copy(ha.tensor, da.tensor);
  api.Copy(hb.tensor, db.tensor);
  // 4 blocks of 256 threads cover 1000 elements.
  module.GetFunctionRequired("saxpy")(&da.tensor, &db.tensor, &dc.tensor, 2.5, kN, 4, 1, 1, 256, 1,
                                      1);
  api.Copy(dc.tensor, hc.tensor);
  api.Sync(0);
  for (int64_t i = 0; i < kN; ++i) ASSERT_FLOAT_EQ(c[i], 2.5f * a[i] + b[i]) << "at " << i;
  for (void* buffer : buffers) api.Free(0, buffer);
}

TEST_F(CUDATest, RunsAPtxKernelThroughTheModuleFunction) {
  ExpectSaxpyRuns(Api(), CreateModule(TestPtx(), {"saxpy", "fill"}));
}

TEST_F(CUDATest, SavedModuleLoadsAndRunsAgain) {
  const Bytes saved = *CreateModule(TestPtx(), {"saxpy", "fill"})->SaveToBytes();
  ExpectSaxpyRuns(
      Api(), Function::GetGlobalRequired("runtime.module.load_bytes.cuda")(saved).cast<Module>());
}

TEST_F(CUDATest, PassesScalarsByTheirSizeInTheImage) {
  Module module = CreateModule(TestPtx(), {"fill"});
  constexpr int64_t kN = 16;
  void* buffer = Api().Alloc(0, kN * sizeof(int64_t), 256);
  TensorView device(buffer, kN, kCUDA0, kInt64);
  const int64_t big = (int64_t{1} << 40) + 7;
  module.GetFunctionRequired("fill")(&device.tensor, big, kN, 1, 1, 1, 32, 1, 1);
  std::vector<int64_t> result(kN, 0);
  TensorView host(result.data(), kN, kCPU, kInt64);
  Api().Copy(device.tensor, host.tensor);
  Api().Sync(0);
  EXPECT_EQ(result, std::vector<int64_t>(kN, big));
  Api().Free(0, buffer);
}

TEST_F(CUDATest, BadKernelsAndArgumentsAreNamed) {
  Module module = CreateModule(TestPtx(), {"saxpy", "fill", "missing"});
  EXPECT_THAT(
      ErrorMessage("AttributeError", [&] { module.GetFunctionRequired("missing")(1); }),
      AllOf(HasSubstr("kernel 'missing' is listed"), HasSubstr("saxpy"), HasSubstr("fill")));
  Function saxpy = module.GetFunctionRequired("saxpy");
  void* buffer = Api().Alloc(0, 64, 256);
  TensorView device(buffer, 16, kCUDA0, kFloat32);
  EXPECT_THAT(ErrorMessage("TypeError", [&] { saxpy(&device.tensor, 1, 1, 1, 1, 1); }),
              HasSubstr("takes 5 arguments followed by grid x, y, z, block x, y, z"));
  EXPECT_THAT(ErrorMessage("TypeError",
                           [&] {
                             saxpy(&device.tensor, &device.tensor, &device.tensor, "two", 16, 1, 1,
                                   1, 16, 1, 1);
                           }),
              HasSubstr("argument #3 (4 bytes) of CUDA kernel 'saxpy' expects a tensor, an int or "
                        "a float, got str"));
  EXPECT_THAT(
      ErrorMessage("ValueError",
                   [&] {
                     saxpy(&device.tensor, &device.tensor, &device.tensor, 1.0, int64_t{1} << 40, 1,
                           1, 1, 16, 1, 1);
                   }),
      HasSubstr("argument #4 (4 bytes) of CUDA kernel 'saxpy': 1099511627776 does not fit"));
  Api().Free(0, buffer);
}

}  // namespace
}  // namespace kiln
