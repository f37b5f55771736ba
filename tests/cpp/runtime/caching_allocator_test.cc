#include <kiln/runtime/memory.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "runtime/caching_allocator_internal.h"

namespace kiln {
namespace runtime {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kUInt8{kDLUInt, 8, 1};
constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;

/// Tests in one process share the CPU allocator: each looks at the change in its counters.
AllocatorStats operator-(const AllocatorStats& after, const AllocatorStats& before) {
  return {after.bytes_in_use - before.bytes_in_use, after.bytes_cached - before.bytes_cached,
          after.peak_bytes_in_use - before.peak_bytes_in_use,
          after.allocations - before.allocations, after.cache_hits - before.cache_hits};
}

Tensor Bytes(int64_t n) { return Empty({n}, kUInt8, kCpu); }

TEST(RoundAllocationSizeTest, FollowsTheDocumentedSizeClasses) {
  using internal::RoundAllocationSize;
  // Up to 4 KiB: multiples of 64 B; zero bytes still get a block.
  EXPECT_EQ(RoundAllocationSize(0), 64u);
  EXPECT_EQ(RoundAllocationSize(1), 64u);
  EXPECT_EQ(RoundAllocationSize(64), 64u);
  EXPECT_EQ(RoundAllocationSize(65), 128u);
  EXPECT_EQ(RoundAllocationSize(4 * kKiB), 4 * kKiB);
  // Up to 8 MiB: four classes per power of two.
  EXPECT_EQ(RoundAllocationSize(4 * kKiB + 1), 5 * kKiB);
  EXPECT_EQ(RoundAllocationSize(7 * kKiB + 1), 8 * kKiB);
  EXPECT_EQ(RoundAllocationSize(8 * kKiB + 1), 10 * kKiB);
  EXPECT_EQ(RoundAllocationSize(kMiB), kMiB);
  EXPECT_EQ(RoundAllocationSize(kMiB + 1), kMiB + kMiB / 4);
  EXPECT_EQ(RoundAllocationSize(8 * kMiB), 8 * kMiB);
  // Beyond: multiples of 2 MiB.
  EXPECT_EQ(RoundAllocationSize(8 * kMiB + 1), 10 * kMiB);
  EXPECT_EQ(RoundAllocationSize(64 * kMiB), 64 * kMiB);
  EXPECT_EQ(RoundAllocationSize(65 * kMiB), 66 * kMiB);
}

TEST(RoundAllocationSizeTest, NeverShrinksAndWastesAtMostAQuarterAboveFourKiB) {
  for (size_t n = 1; n < 64 * kMiB; n = n * 9 / 8 + 1) {
    const size_t rounded = internal::RoundAllocationSize(n);
    ASSERT_GE(rounded, n);
    ASSERT_EQ(rounded % 64, 0u) << n;
    if (n > 4 * kKiB) {
      ASSERT_LE(rounded - n, n / 4) << n;
    }
  }
}

TEST(CachingAllocatorTest, AFreedBlockIsReusedForTheSameSizeClass) {
  void* first = nullptr;
  {
    Tensor tensor = Bytes(3000);
    first = tensor.data();
  }
  const AllocatorStats before = GetAllocatorStats(kCpu);
  Tensor again = Bytes(2990);  // same 64 B class as 3000
  const AllocatorStats delta = GetAllocatorStats(kCpu) - before;
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(delta.allocations, 1);
  EXPECT_EQ(delta.cache_hits, 1);
  EXPECT_EQ(delta.bytes_cached, -3008);
  EXPECT_EQ(delta.bytes_in_use, 3008);
}

TEST(CachingAllocatorTest, CountsBytesInUseCachedAndPeak) {
  ReleaseCachedMemory();
  const AllocatorStats before = GetAllocatorStats(kCpu);
  EXPECT_EQ(before.bytes_cached, 0);
  {
    Tensor a = Bytes(5000);   // class 5 KiB
    Tensor b = Bytes(12000);  // class 12 KiB
    const AllocatorStats both = GetAllocatorStats(kCpu) - before;
    EXPECT_EQ(both.bytes_in_use, static_cast<int64_t>(17 * kKiB));
    EXPECT_EQ(both.allocations, 2);
    EXPECT_EQ(both.cache_hits, 0);
    EXPECT_GE(GetAllocatorStats(kCpu).peak_bytes_in_use,
              before.bytes_in_use + static_cast<int64_t>(17 * kKiB));
    a = Tensor();
    const AllocatorStats one = GetAllocatorStats(kCpu) - before;
    EXPECT_EQ(one.bytes_in_use, static_cast<int64_t>(12 * kKiB));
    EXPECT_EQ(one.bytes_cached, static_cast<int64_t>(5 * kKiB));
  }
  const AllocatorStats after = GetAllocatorStats(kCpu);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.bytes_cached, static_cast<int64_t>(17 * kKiB));
  EXPECT_GE(after.peak_bytes_in_use, after.bytes_in_use + static_cast<int64_t>(17 * kKiB));
  ReleaseCachedMemory();
  EXPECT_EQ(GetAllocatorStats(kCpu).bytes_cached, 0);
  EXPECT_EQ(GetAllocatorStats(kCpu).bytes_in_use, before.bytes_in_use);
}

TEST(CachingAllocatorTest, ManyThreadsAllocatingAndFreeingKeepTheCountsRight) {
  const AllocatorStats before = GetAllocatorStats(kCpu);
  constexpr int kThreads = 8;
  constexpr int kRounds = 500;
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &corrupted] {
      std::mt19937 random(t);
      std::vector<Tensor> live;
      for (int round = 0; round < kRounds; ++round) {
        const int64_t n = 1 + static_cast<int64_t>(random() % (64 * kKiB));
        Tensor tensor = Bytes(n);
        std::memset(tensor.data(), t, n);  // a block handed to two threads would be overwritten
        live.push_back(tensor);
        if (live.size() > 4) {
          const auto* bytes = static_cast<const unsigned char*>(live.front().data());
          for (int64_t i = 0; i < live.front().NumBytes(); ++i) {
            if (bytes[i] != t) ++corrupted;
          }
          live.erase(live.begin());
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const AllocatorStats delta = GetAllocatorStats(kCpu) - before;
  EXPECT_EQ(corrupted.load(), 0);
  EXPECT_EQ(delta.bytes_in_use, 0);
  EXPECT_EQ(delta.allocations, kThreads * kRounds);
  EXPECT_GT(delta.cache_hits, 0);
}

TEST(CachingAllocatorTest, StatsOfAnUnusedDeviceAreZero) {
  const AllocatorStats stats = GetAllocatorStats({kDLCUDA, 7});
  EXPECT_EQ(stats.bytes_in_use, 0);
  EXPECT_EQ(stats.allocations, 0);
}

}  // namespace
}  // namespace runtime
}  // namespace kiln
