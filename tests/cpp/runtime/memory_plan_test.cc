#include <kiln/runtime/memory_plan.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "../testing/expect_error.h"

namespace kiln {
namespace runtime {
namespace {

BufferRequest Live(int64_t bytes, int64_t first, int64_t last, bool pinned = false) {
  return BufferRequest{bytes, first, last, pinned};
}

TEST(MemoryPlanTest, AChainNeedsTwoStorages) {
  // Step i reads tensor i-1 and writes tensor i: at most two are live at once.
  std::vector<BufferRequest> chain;
  for (int64_t i = 0; i < 10; ++i) chain.push_back(Live(100, i, i + 1));
  const MemoryPlan plan = PlanMemory(chain);
  EXPECT_EQ(plan.storage_bytes, (std::vector<int64_t>{128, 128}));
  EXPECT_EQ(plan.total_bytes, 256);
  EXPECT_EQ(plan.naive_bytes, 1280);
  for (size_t i = 1; i < chain.size(); ++i) EXPECT_NE(plan.storage_of[i], plan.storage_of[i - 1]);
}

TEST(MemoryPlanTest, PinnedTensorsKeepTheirOwnStorage) {
  const MemoryPlan plan = PlanMemory({Live(64, 0, 0, true), Live(64, 1, 1), Live(64, 2, 2)});
  EXPECT_NE(plan.storage_of[1], plan.storage_of[0]);
  EXPECT_EQ(plan.storage_of[2], plan.storage_of[1]);  // the unpinned ones share
  EXPECT_EQ(plan.storage_bytes.size(), 2u);
}

TEST(MemoryPlanTest, PicksTheSmallestFreeStorageThatFits) {
  const MemoryPlan plan =
      PlanMemory({Live(256, 0, 1), Live(1024, 0, 1), Live(200, 2, 3)}, /*alignment=*/1);
  EXPECT_EQ(plan.storage_of[2], plan.storage_of[0]);
  EXPECT_EQ(plan.total_bytes, 1280);
}

TEST(MemoryPlanTest, GrowsAFreeStorageRatherThanAddingOne) {
  const MemoryPlan plan = PlanMemory({Live(128, 0, 0), Live(500, 1, 1)});
  EXPECT_EQ(plan.storage_bytes, (std::vector<int64_t>{512}));
}

TEST(MemoryPlanTest, LiveTensorsNeverShareBytes) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int64_t> size(0, 4096);
  std::uniform_int_distribution<int64_t> step(0, 200);
  std::uniform_int_distribution<int64_t> length(0, 20);
  std::vector<BufferRequest> requests;
  for (int i = 0; i < 500; ++i) {
    const int64_t first = step(rng);
    requests.push_back(Live(size(rng), first, first + length(rng), i % 17 == 0));
  }
  const MemoryPlan plan = PlanMemory(requests);
  ASSERT_EQ(plan.storage_of.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_GE(plan.storage_bytes[plan.storage_of[i]], requests[i].bytes);
    for (size_t j = i + 1; j < requests.size(); ++j) {
      if (plan.storage_of[i] != plan.storage_of[j]) continue;
      EXPECT_FALSE(requests[i].pinned || requests[j].pinned) << i << " and " << j;
      const bool overlap = requests[i].first_use <= requests[j].last_use &&
                           requests[j].first_use <= requests[i].last_use;
      EXPECT_FALSE(overlap) << "tensors " << i << " and " << j << " share a storage while live";
    }
  }
  EXPECT_LT(plan.total_bytes, plan.naive_bytes);
}

TEST(MemoryPlanTest, BadRequestsAreNamed) {
  test_util::ExpectError(
      [] {
        PlanMemory({Live(1, 0, 0), Live(-5, 0, 1)});
      },
      "ValueError", {"buffer 1", "negative size"});
  test_util::ExpectError([] { PlanMemory({Live(8, 3, 2)}); }, "ValueError",
                         {"buffer 0", "last used at step 2", "first use at step 3"});
}

}  // namespace
}  // namespace runtime
}  // namespace kiln
