// The CUDA backend: it must load and explain itself on a machine without a GPU or driver, and
// on a machine with one, allocate, copy and run PTX kernels through the "cuda" module kind.
// Tests that need a device skip, with runtime.cuda.Status() as the reason, when there is none.
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <kiln/ffi/plugin.h>
#include <kiln/runtime/device_api.h>

#include <kiln/runtime/memory.h>
#include <kiln/runtime/module.h>
#include "common/tensor_view_for_tests.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace kiln {
namespace {

using runtime::DeviceApiRef;
using runtime::Module;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr DLDataType kFloat32 = {kDLFloat, 32, 1};
constexpr DLDataType kInt64 = {kDLInt, 64, 1};
constexpr DLDataType kFloat64 = {kDLFloat, 64, 1};
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

TEST_F(CUDATest, RuntimeTensorsRoundTripAndRunKernels) {
  // Through the runtime, as a model would: Empty (the caching allocator), CopyTensor, and
  // Tensor objects as kernel arguments.
  constexpr int64_t kN = 1000;
  constexpr DLDevice kCPU0 = {kDLCPU, 0};
  Tensor host_a = runtime::Empty({kN}, kFloat32, kCPU0);
  Tensor host_b = runtime::Empty({kN}, kFloat32, kCPU0);
  Tensor host_c = runtime::Empty({kN}, kFloat32, kCPU0);
  auto* a = static_cast<float*>(host_a.data());
  auto* b = static_cast<float*>(host_b.data());
  for (int64_t i = 0; i < kN; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 1.0f;
  }
  Tensor da = runtime::Empty({kN}, kFloat32, kCUDA0);
  Tensor db = runtime::Empty({kN}, kFloat32, kCUDA0);
  Tensor dc = runtime::Empty({kN}, kFloat32, kCUDA0);
  runtime::CopyTensor(host_a, da);
  runtime::CopyTensor(host_b, dc);
  runtime::CopyTensor(dc, db);  // device to device
  CreateModule(TestPtx(), {"saxpy"})
      .GetFunctionRequired("saxpy")(da, db, dc, -2.0, kN, 4, 1, 1, 256, 1, 1);
  runtime::CopyTensor(dc, host_c);
  Api().Sync(0);
  const auto* c = static_cast<const float*>(host_c.data());
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(c[i], 1.0f - 2.0f * static_cast<float>(i)) << i;

  // An empty tensor on the device, and a cache hit for a freed block of the same size class.
  Tensor none = runtime::Empty({0}, kFloat32, kCUDA0);
  runtime::CopyTensor(runtime::Empty({0}, kFloat32, kCPU0), none);
  { Tensor scratch = runtime::Empty({kN}, kFloat32, kCUDA0); }
  const int64_t hits = runtime::GetAllocatorStats(kCUDA0).cache_hits;
  Tensor again = runtime::Empty({kN}, kFloat32, kCUDA0);
  EXPECT_EQ(runtime::GetAllocatorStats(kCUDA0).cache_hits, hits + 1);
  runtime::ReleaseCachedMemory();
}

TEST_F(CUDATest, CopiesThroughPinnedHostMemoryOnAStream) {
  constexpr int64_t kN = 4096;
  void* pinned_memory = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned_memory, 2 * kN * sizeof(float)), cudaSuccess);
  auto* pinned = static_cast<float*>(pinned_memory);
  for (int64_t i = 0; i < kN; ++i) pinned[i] = static_cast<float>(i) * 0.5f;
  void* buffer = Api().Alloc(0, kN * sizeof(float), 256);
  constexpr DLDevice kPinned = {kDLCUDAHost, 0};
  TensorView in(pinned, kN, kPinned, kFloat32), device(buffer, kN, kCUDA0, kFloat32),
      out(pinned, kN, kPinned, kFloat32, kN * sizeof(float));
  KilnStreamHandle stream = Api().CreateStream(0);
  Api().Copy(in.tensor, device.tensor, stream);
  Api().Copy(device.tensor, out.tensor, stream);
  Api().Sync(0, stream);  // into pinned memory the copy is complete only now
  Api().FreeStream(0, stream);
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(pinned[kN + i], pinned[i]) << "at " << i;
  Api().Free(0, buffer);
  cudaFreeHost(pinned);
}

TEST_F(CUDATest, RejectsCopiesItCannotMake) {
  std::vector<float> host(16);
  void* buffer = Api().Alloc(0, 64, 256);
  TensorView cpu_a(host.data(), 16, kCPU, kFloat32), cpu_b(host.data(), 16, kCPU, kFloat32),
      device(buffer, 16, kCUDA0, kFloat32), small(buffer, 8, kCUDA0, kFloat32);
  EXPECT_THAT(ErrorMessage("ValueError", [&] { Api().Copy(cpu_a.tensor, cpu_b.tensor); }),
              HasSubstr("copies between CUDA and host memory"));
  EXPECT_THAT(ErrorMessage("ValueError", [&] { Api().Copy(cpu_a.tensor, small.tensor); }),
              HasSubstr("(64 bytes) into float32[8] on cuda:0 (32 bytes)"));
  Api().Free(0, buffer);
}

TEST_F(CUDATest, ZeroByteAllocationsAreDistinctAndFreeable) {
  // As on the CPU: DLPack consumers and allocator bookkeeping expect a real, non-null address.
  void* first = Api().Alloc(0, 0, 256);
  void* second = Api().Alloc(0, 0, 256);
  EXPECT_NE(first, nullptr);
  EXPECT_NE(first, second);
  Api().Free(0, first);
  Api().Free(0, second);
}

TEST_F(CUDATest, OutOfMemoryIsAMemoryErrorAndLeavesTheDeviceUsable) {
  const auto total =
      static_cast<size_t>(Api().GetAttr(0, kKilnDeviceAttrTotalMemory).cast<int64_t>());
  EXPECT_THAT(ErrorMessage("MemoryError", [&] { Api().Alloc(0, 4 * total, 256); }),
              AllOf(HasSubstr("cudaMalloc failed"), HasSubstr("on CUDA device 0")));
  ExpectSaxpyRuns(Api(), CreateModule(TestPtx(), {"saxpy"}));
}

TEST_F(CUDATest, PassesScalarsOfEveryWidth) {
  Module module = CreateModule(TestPtx(), {"scalars"});
  void* buffer = Api().Alloc(0, 6 * sizeof(double), 256);
  TensorView device(buffer, 6, kCUDA0, kFloat64);
  module.GetFunctionRequired("scalars")(&device.tensor, 0.1, -5, -30000, true, int64_t{1} << 53,
                                        1.5, 1, 1, 1, 1, 1, 1);
  std::vector<double> result(6, 0.0);
  TensorView host(result.data(), 6, kCPU, kFloat64);
  Api().Copy(device.tensor, host.tensor);
  Api().Sync(0);
  EXPECT_EQ(result, (std::vector<double>{0.1, -5, -30000, 1, 9007199254740992.0, 1.5}));
  Api().Free(0, buffer);
}

TEST_F(CUDATest, LaunchesWithDynamicSharedMemory) {
  constexpr int64_t kBlock = 128;
  constexpr int64_t kN = 2 * kBlock;
  std::vector<float> data(kN);
  std::iota(data.begin(), data.end(), 0.0f);
  void* buffer = Api().Alloc(0, kN * sizeof(float), 256);
  TensorView device(buffer, kN, kCUDA0, kFloat32), host(data.data(), kN, kCPU, kFloat32);
  Api().Copy(host.tensor, device.tensor);
  CreateModule(TestPtx(), {"reverse_in_block"})
      .GetFunctionRequired("reverse_in_block")(&device.tensor, 2, 1, 1, kBlock, 1, 1,
                                               kBlock * int64_t{sizeof(float)});
  Api().Copy(device.tensor, host.tensor);
  Api().Sync(0);
  for (int64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(data[i], static_cast<float>(i / kBlock * kBlock + kBlock - 1 - i % kBlock)) << i;
  }
  Api().Free(0, buffer);
}

TEST_F(CUDATest, OptsInToMoreThan48KiBOfDynamicSharedMemory) {
  int most = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), cudaSuccess);
  if (most <= 48 * 1024) GTEST_SKIP() << "this device allows only " << most << " bytes per block";
  constexpr int64_t kBlock = 256;
  std::vector<float> data(kBlock);
  std::iota(data.begin(), data.end(), 0.0f);
  void* buffer = Api().Alloc(0, kBlock * sizeof(float), 256);
  TensorView device(buffer, kBlock, kCUDA0, kFloat32), host(data.data(), kBlock, kCPU, kFloat32);
  Api().Copy(host.tensor, device.tensor);
  Function reverse =
      CreateModule(TestPtx(), {"reverse_in_block"}).GetFunctionRequired("reverse_in_block");
  // The kernel uses only the first kBlock floats; asking for more must still launch.
  reverse(&device.tensor, 1, 1, 1, kBlock, 1, 1, int64_t{most});
  reverse(&device.tensor, 1, 1, 1, kBlock, 1, 1, int64_t{64 * 1024});  // already allowed
  reverse(&device.tensor, 1, 1, 1, kBlock, 1, 1, int64_t{most});
  Api().Copy(device.tensor, host.tensor);
  Api().Sync(0);
  for (int64_t i = 0; i < kBlock; ++i) ASSERT_EQ(data[i], static_cast<float>(kBlock - 1 - i)) << i;
  EXPECT_THAT(
      ErrorMessage("ValueError",
                   [&] { reverse(&device.tensor, 1, 1, 1, kBlock, 1, 1, int64_t{most} + 1); }),
      AllOf(HasSubstr("asks for " + std::to_string(most + 1) + " bytes of dynamic shared"),
            HasSubstr("at most " + std::to_string(most) + " bytes per block")));
  Api().Free(0, buffer);
}

TEST_F(CUDATest, AnEmptyGridLaunchesNothing) {
  constexpr int64_t kN = 8;
  std::vector<int64_t> result(kN, 3);
  void* buffer = Api().Alloc(0, kN * sizeof(int64_t), 256);
  TensorView device(buffer, kN, kCUDA0, kInt64), host(result.data(), kN, kCPU, kInt64);
  Api().Copy(host.tensor, device.tensor);
  CreateModule(TestPtx(), {"fill"})
      .GetFunctionRequired("fill")(&device.tensor, 9, kN, 0, 1, 1, 8, 1, 1);
  Api().Copy(device.tensor, host.tensor);
  Api().Sync(0);
  EXPECT_EQ(result, std::vector<int64_t>(kN, 3));
  Api().Free(0, buffer);
}

TEST_F(CUDATest, LaunchesFromManyThreads) {
  // Each thread must make the device current itself; the runtime API's current device is
  // per thread.
  Module module = CreateModule(TestPtx(), {"fill"});
  constexpr int kThreads = 8;
  constexpr int64_t kN = 1 << 16;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        void* buffer = Api().Alloc(0, kN * sizeof(int64_t), 256);
        TensorView device(buffer, kN, kCUDA0, kInt64);
        KilnStreamHandle stream = Api().CreateStream(0);
        for (int round = 0; round < 20; ++round) {
          module.GetFunctionRequired("fill")(&device.tensor, t * 100 + round, kN, kN / 256, 1, 1,
                                             256, 1, 1);
        }
        std::vector<int64_t> result(kN);
        TensorView host(result.data(), kN, kCPU, kInt64);
        Api().Copy(device.tensor, host.tensor, stream);
        Api().Sync(0, stream);
        Api().FreeStream(0, stream);
        Api().Free(0, buffer);
        if (result != std::vector<int64_t>(kN, t * 100 + 19)) failures[t] = "wrong values";
      } catch (const std::exception& error) {
        failures[t] = error.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures, std::vector<std::string>(kThreads));
}

TEST(CUDADeathTest, AKernelFaultIsReportedBySync) {
  // A fault poisons the CUDA context for good, so it happens in a child process.
  ASSERT_NO_THROW(LoadPlugin(KILN_CUDA_BACKEND));
  if (!runtime::DeviceExists(kCUDA0)) GTEST_SKIP() << CudaStatus();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        LoadPlugin(KILN_CUDA_BACKEND);
        CreateModule(TestPtx(), {"fault"}).GetFunctionRequired("fault")(1, 1, 1, 1, 1, 1);
        try {
          DeviceApiRef::Get(kDLCUDA).Sync(0);
        } catch (const Error& error) {
          std::cerr << error.kind() << ": " << error.message() << "\n";
          std::exit(3);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(3), "RuntimeError: cudaStreamSynchronize failed: cudaError");
}

}  // namespace
}  // namespace kiln
