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

BufferRequest Over(int64_t over, int64_t bytes, int64_t first, int64_t last) {
  BufferRequest request = Live(bytes, first, last);
  request.over = over;
  return request;
}

TEST(MemoryPlanTest, AnOutputTakesTheStorageOfTheInputItMayBeOver) {
  // Step 1 reads tensors 0 and 1 and writes tensor 2 over tensor 1, which dies there.
  const MemoryPlan plan = PlanMemory({Live(64, 0, 1), Live(64, 0, 1), Over(1, 64, 1, 2)});
  EXPECT_EQ(plan.storage_of[2], plan.storage_of[1]);
  EXPECT_NE(plan.storage_of[1], plan.storage_of[0]);
  EXPECT_EQ(plan.total_bytes, 128);
}

TEST(MemoryPlanTest, AStorageTakenOverIsHeldUntilItsNewTensorDies) {
  // A residual chain: each tensor written over the one before. Tensor 3, written at step 2
  // while tensor 2 (over 1, over 0) is live, must not get their storage, nor may tensor 4
  // after step 2 though tensors 0 and 1 died long before.
  const MemoryPlan plan = PlanMemory(
      {Live(64, 0, 0), Over(0, 64, 0, 1), Over(1, 64, 1, 3), Live(64, 2, 3), Live(64, 3, 4)});
  EXPECT_EQ(plan.storage_of[1], plan.storage_of[0]);
  EXPECT_EQ(plan.storage_of[2], plan.storage_of[0]);
  EXPECT_NE(plan.storage_of[3], plan.storage_of[2]);
  EXPECT_NE(plan.storage_of[4], plan.storage_of[2]);
  EXPECT_NE(plan.storage_of[4], plan.storage_of[3]);
}

TEST(MemoryPlanTest, AnOverThatCannotBeHonouredIsIgnored) {
  // Tensor 0 is read after step 1 (by step 2), so 1 may not take its bytes; tensor 2 may not
  // take the bytes of a pinned tensor; tensor 5 may not take bytes 4 already took.
  BufferRequest pinned = Live(64, 0, 9, /*pinned=*/true);
  const MemoryPlan plan = PlanMemory({Live(64, 0, 2), Over(0, 64, 1, 2), pinned, Over(2, 64, 1, 1),
                                      Over(3, 64, 1, 3), Over(3, 64, 1, 3)});
  EXPECT_NE(plan.storage_of[1], plan.storage_of[0]);
  EXPECT_NE(plan.storage_of[3], plan.storage_of[2]);
  EXPECT_EQ(plan.storage_of[4], plan.storage_of[3]);
  EXPECT_NE(plan.storage_of[5], plan.storage_of[4]);
}

TEST(MemoryPlanTest, BadRequestsAreNamed) {
  test_util::ExpectError(
      [] {
        PlanMemory({Live(1, 0, 0), Live(-5, 0, 1)});
      },
      "ValueError", {"buffer 1", "negative size"});
  test_util::ExpectError([] { PlanMemory({Live(8, 3, 2)}); }, "ValueError",
                         {"buffer 0", "last used at step 2", "first use at step 3"});
  test_util::ExpectError(
      [] {
        PlanMemory({Live(8, 0, 1), Over(7, 8, 1, 1)});
      },
      "ValueError", {"buffer 1 may be over buffer 7", "not another of the 2 buffers"});
}

}  // namespace
}  // namespace runtime
}  // namespace kiln
