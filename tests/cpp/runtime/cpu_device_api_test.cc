#include <kiln/runtime/device_api.h>
#include <kiln/runtime/thread_pool.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)  // GCC
#define KILN_TEST_ASAN 1
#elif defined(__has_feature)  // Clang
#if __has_feature(address_sanitizer)
#define KILN_TEST_ASAN 1
#endif
#endif

namespace kiln {
namespace runtime {
namespace {

#ifdef KILN_TEST_ASAN
constexpr bool kUnderAddressSanitizer = true;
#else
constexpr bool kUnderAddressSanitizer = false;
#endif

DeviceApiRef Cpu() { return DeviceApiRef::Get(kDLCPU); }

TEST(CpuDeviceApiTest, OnlyDeviceZeroExists) {
  EXPECT_TRUE(DeviceExists({kDLCPU, 0}));
  EXPECT_FALSE(DeviceExists({kDLCPU, 1}));
  EXPECT_FALSE(DeviceExists({kDLCPU, -1}));
  EXPECT_EQ(Cpu().GetAttr(5, kKilnDeviceAttrDeviceCount).cast<int64_t>(), 1);
}

TEST(CpuDeviceApiTest, AnswersItsAttributes) {
  const std::string name = Cpu().GetAttr(0, kKilnDeviceAttrName).cast<std::string>();
  EXPECT_FALSE(name.empty());
  EXPECT_GT(Cpu().GetAttr(0, kKilnDeviceAttrTotalMemory).cast<int64_t>(), int64_t{1} << 20);
  EXPECT_EQ(Cpu().GetAttr(0, kKilnDeviceAttrMultiProcessorCount).cast<int64_t>(), NumThreads());
  // Attributes that mean nothing for a CPU are None, not errors.
  EXPECT_EQ(Cpu().GetAttr(0, kKilnDeviceAttrComputeVersion).type_index(), kKilnTypeNone);
  EXPECT_EQ(Cpu().GetAttr(0, kKilnDeviceAttrMaxThreadsPerBlock).type_index(), kKilnTypeNone);
}

TEST(CpuDeviceApiTest, AttributesOfAMissingDeviceAreValueErrors) {
  try {
    Cpu().GetAttr(2, kKilnDeviceAttrName);
    FAIL() << "expected a ValueError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "ValueError");
    EXPECT_NE(error.message().find("device_id 2"), std::string::npos) << error.message();
  }
}

TEST(CpuDeviceApiTest, AllocatesAtLeastCacheLineAlignedMemory) {
  for (size_t alignment : {size_t{0}, size_t{1}, size_t{16}, size_t{64}, size_t{4096}}) {
    void* ptr = Cpu().Alloc(0, 1000, alignment);
    ASSERT_NE(ptr, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % std::max<size_t>(alignment, 64), 0u);
    std::memset(ptr, 0xab, 1000);
    Cpu().Free(0, ptr);
  }
  void* empty = Cpu().Alloc(0, 0, 64);
  EXPECT_NE(empty, nullptr);
  Cpu().Free(0, empty);
}

TEST(CpuDeviceApiTest, RejectsBadAlignmentsAndImpossibleSizes) {
  EXPECT_THROW(Cpu().Alloc(0, 100, 48), Error);
  if (kUnderAddressSanitizer) {
    GTEST_SKIP() << "AddressSanitizer aborts on impossible sizes instead of failing them";
  }
  try {
    Cpu().Alloc(0, SIZE_MAX / 2, 64);
    FAIL() << "expected a MemoryError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "MemoryError");
  }
}

TEST(CpuDeviceApiTest, CopiesHonourByteOffsetsAndRefuseOtherDevices) {
  std::vector<int32_t> source = {1, 2, 3, 4, 5}, destination(5, 0);
  int64_t shape[] = {3};
  DLTensor from{source.data(), {kDLCPU, 0}, 1, {kDLInt, 32, 1}, shape, nullptr, 8};
  DLTensor to{destination.data(), {kDLCPU, 0}, 1, {kDLInt, 32, 1}, shape, nullptr, 4};
  Cpu().Copy(from, to);
  EXPECT_EQ(destination, (std::vector<int32_t>{0, 3, 4, 5, 0}));

  to.device = {kDLCUDA, 0};
  try {
    Cpu().Copy(from, to);
    FAIL() << "expected a ValueError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "ValueError");
    EXPECT_NE(error.message().find("cuda:0"), std::string::npos) << error.message();
  }
  Cpu().Sync(0);  // nothing pending, nothing to fail
}

TEST(DeviceExistsTest, IsFalseForAKindWithoutABackend) {
  // No Metal backend exists for Linux: discovery runs, finds none, and the answer is false.
  EXPECT_FALSE(DeviceExists({kDLMetal, 0}));
  EXPECT_FALSE(DeviceApiRef::Find(kDLMetal).has_value());
}

TEST(DeviceExistsTest, AnswersForCudaWithOrWithoutADriver) {
  // The CUDA backend may be present and loaded; without a GPU or driver it must say false.
  const bool exists = DeviceExists({kDLCUDA, 0});
  if (std::optional<DeviceApiRef> cuda = DeviceApiRef::Find(kDLCUDA)) {
    const int64_t count = cuda->GetAttr(0, kKilnDeviceAttrDeviceCount).cast<int64_t>();
    EXPECT_EQ(exists, count > 0);
  } else {
    EXPECT_FALSE(exists);
  }
}

}  // namespace
}  // namespace runtime
}  // namespace kiln
