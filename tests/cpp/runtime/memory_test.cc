#include <kiln/ffi/function.h>
#include <kiln/ffi/map.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/thread_pool.h>
#include <gtest/gtest.h>

#include "testing/expect_error.h"

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace kiln {
namespace runtime {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kFloat32{kDLFloat, 32, 1};
constexpr DLDataType kInt64{kDLInt, 64, 1};

using ::kiln::test_util::ExpectError;

/// A tensor over `storage` that starts `offset` bytes in, as DLPack producers may hand out.
Tensor View(std::vector<float>& storage, const std::vector<int64_t>& shape, uint64_t offset) {
  return Tensor::FromMemory(storage.data(), shape, kFloat32, kCpu, nullptr, {}, offset);
}

TEST(EmptyTest, MakesACompactAlignedTensorOfTheRequestedShapeAndDtype) {
  Tensor tensor = Empty({2, 3, 5}, kFloat32, kCpu);
  EXPECT_EQ(tensor.shape(), Shape({2, 3, 5}));
  EXPECT_EQ(DataTypeToString(tensor.dtype()), "float32");
  EXPECT_EQ(tensor.device().device_type, kDLCPU);
  EXPECT_EQ(tensor.device().device_id, 0);
  EXPECT_EQ(tensor.dl_tensor().byte_offset, 0u);
  EXPECT_TRUE(tensor.IsContiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor.data()) % 256, 0u);
  auto* values = static_cast<float*>(tensor.data());
  std::iota(values, values + 30, 0.0f);  // the whole extent is writable (ASan checks it)
  EXPECT_EQ(values[29], 29.0f);
}

TEST(EmptyTest, ScalarsAndZeroSizedTensorsGetDistinctNonNullData) {
  Tensor scalar = Empty({}, kInt64, kCpu);
  Tensor empty_a = Empty({0, 4}, kFloat32, kCpu);
  Tensor empty_b = Empty({0}, kFloat32, kCpu);
  EXPECT_EQ(scalar.ndim(), 0);
  EXPECT_EQ(scalar.NumBytes(), 8);
  EXPECT_NE(empty_a.data(), nullptr);
  EXPECT_NE(empty_a.data(), empty_b.data());
}

TEST(EmptyTest, RejectsBadShapesDtypesAndDevices) {
  ExpectError([] { Empty({2, -3}, kFloat32, kCpu); }, "ValueError", {"(2, -3)", "negative"});
  ExpectError(
      [] {
        Empty({int64_t{1} << 40, int64_t{1} << 40}, kFloat32, kCpu);
      },
      "ValueError", {"(1099511627776, 1099511627776)", "float32"});
  ExpectError([] { Empty({4}, DLDataType{kDLFloat, 0, 1}, kCpu); }, "ValueError", {"bits"});
  ExpectError(
      [] {
        Empty({4}, kFloat32, DLDevice{kDLCPU, 3});
      },
      "ValueError", {"cpu:3", "does not exist"});
}

TEST(EmptyTest, ADeviceWithoutBackendNamesTheLibraryToInstall) {
  if (Function::GetGlobal("device_api.vulkan").has_value()) GTEST_SKIP() << "vulkan is loaded";
  try {
    Empty({4}, kFloat32, DLDevice{kDLVulkan, 0});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "RuntimeError");
    EXPECT_NE(error.message().find("libkiln_runtime_vulkan.so"), std::string::npos);
    EXPECT_NE(error.context().find("float32 on vulkan:0"), std::string::npos) << error.context();
  }
}

TEST(CopyTensorTest, CopiesBetweenCpuTensorsHonouringByteOffsets) {
  std::vector<float> source(8), destination(10, -1.0f);
  std::iota(source.begin(), source.end(), 1.0f);
  // Elements 2..7 of `source` into elements 3..8 of `destination`.
  CopyTensor(View(source, {2, 3}, 2 * sizeof(float)), View(destination, {2, 3}, 3 * sizeof(float)));
  EXPECT_EQ(destination, (std::vector<float>{-1, -1, -1, 3, 4, 5, 6, 7, 8, -1}));
}

TEST(CopyTensorTest, RoundTripsThroughEmptyTensors) {
  std::vector<float> source(1000), result(1000);
  std::iota(source.begin(), source.end(), 0.5f);
  Tensor tensor = Empty({10, 100}, kFloat32, kCpu);
  CopyTensor(View(source, {10, 100}, 0), tensor);
  CopyTensor(tensor, View(result, {10, 100}, 0));
  EXPECT_EQ(result, source);
}

TEST(CopyTensorTest, LargeCopiesAreSplitAcrossThreadsCorrectly) {
  const int64_t n = int64_t{9} << 20;  // 36 MiB: past the CPU API's parallel copy grain
  Tensor a = Empty({n}, kFloat32, kCpu);
  Tensor b = Empty({n}, kFloat32, kCpu);
  auto* src = static_cast<float*>(a.data());
  for (int64_t i = 0; i < n; ++i) src[i] = static_cast<float>(i % 1013);
  CopyTensor(a, b);
  const auto* dst = static_cast<const float*>(b.data());
  int64_t first_wrong = -1;
  for (int64_t i = 0; i < n && first_wrong < 0; ++i) {
    if (dst[i] != static_cast<float>(i % 1013)) first_wrong = i;
  }
  EXPECT_EQ(first_wrong, -1);
}

TEST(CopyTensorTest, MismatchesAreValueErrorsNamingBothSides) {
  std::vector<float> storage(64);
  ExpectError(
      [&] {
        CopyTensor(View(storage, {2, 3}, 0), View(storage, {3, 2}, 0));
      },
      "ValueError", {"(2, 3)", "(3, 2)"});
  ExpectError([&] { CopyTensor(Empty({4}, kFloat32, kCpu), Empty({4}, kInt64, kCpu)); },
              "ValueError", {"float32", "int64"});
  ExpectError([&] { CopyTensor(Tensor(), View(storage, {2}, 0)); }, "ValueError", {"undefined"});
}

TEST(CopyTensorTest, CpuCopiesFollowAnyStrides) {
  std::vector<float> source(24);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<float>(i);
  // The transpose of a 4x6 matrix, read with strides (1, 6): element (i, j) is source[j * 6 + i].
  Tensor transposed = Tensor::FromMemory(source.data(), {6, 4}, kFloat32, kCpu, nullptr, {1, 6});
  Tensor compact = Empty({6, 4}, kFloat32, kCpu);
  CopyTensor(transposed, compact);
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(static_cast<float*>(compact.data())[i * 4 + j], source[j * 6 + i]);
    }
  }
  // Into every other element of a row, from the last row backwards (a negative stride).
  std::vector<float> target(48, -1.0f);
  Tensor reversed = Tensor::FromMemory(source.data(), {4, 6}, kFloat32, kCpu, nullptr, {-6, 1},
                                       static_cast<uint64_t>(18 * sizeof(float)));
  Tensor spaced = Tensor::FromMemory(target.data(), {4, 6}, kFloat32, kCpu, nullptr, {12, 2});
  CopyTensor(reversed, spaced);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 12; ++j) {
      EXPECT_EQ(target[i * 12 + j], j % 2 == 0 ? source[(3 - i) * 6 + j / 2] : -1.0f);
    }
  }
}

TEST(CopyTensorTest, ZeroSizedCopiesDoNothing) {
  CopyTensor(Empty({0, 3}, kFloat32, kCpu), Empty({0, 3}, kFloat32, kCpu));
}

TEST(RuntimeGlobalsTest, BindingsReachEmptyCopyAndStats) {
  Function empty = Function::GetGlobalRequired("runtime.Empty");
  Tensor a = empty(Shape({4}), kFloat32, kCpu).cast<Tensor>();
  Tensor b = empty(Shape({4}), kFloat32, kCpu).cast<Tensor>();
  static_cast<float*>(a.data())[3] = 42.0f;
  Function::GetGlobalRequired("runtime.CopyTensor")(a, b);
  EXPECT_EQ(static_cast<float*>(b.data())[3], 42.0f);

  auto stats =
      Function::GetGlobalRequired("runtime.AllocatorStats")(kCpu).cast<Map<String, int64_t>>();
  EXPECT_EQ(stats.at("bytes_in_use"), GetAllocatorStats(kCpu).bytes_in_use);
  for (const char* key : {"bytes_cached", "peak_bytes_in_use", "allocations", "cache_hits"}) {
    EXPECT_TRUE(stats.count(key)) << key;
  }
  EXPECT_EQ(Function::GetGlobalRequired("runtime.NumThreads")().cast<int64_t>(), NumThreads());
}

}  // namespace
}  // namespace runtime
}  // namespace kiln
