#include <unistd.h>
#include <sys/wait.h>

#include <kiln/runtime/thread_pool.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

#include "runtime/thread_pool_internal.h"

#if defined(__SANITIZE_THREAD__)  // GCC
#define KILN_TEST_TSAN 1
#elif defined(__has_feature)  // Clang
#if __has_feature(thread_sanitizer)
#define KILN_TEST_TSAN 1
#endif
#endif

namespace kiln {
namespace runtime {
namespace {

#ifdef KILN_TEST_TSAN
constexpr bool kUnderThreadSanitizer = true;
#else
constexpr bool kUnderThreadSanitizer = false;
#endif

/// Runs ParallelFor over [begin, end) and returns how often each index was visited, checking
/// on the way that every chunk respects the grain (except when the whole range is shorter).
std::vector<int> VisitCounts(int64_t begin, int64_t end, int64_t grain) {
  std::vector<std::atomic<int>> counts(end > begin ? end - begin : 0);
  std::atomic<bool> short_chunk{false};
  ParallelFor(begin, end, grain, [&](int64_t chunk_begin, int64_t chunk_end) {
    if (chunk_end - chunk_begin < grain && chunk_end - chunk_begin < end - begin) {
      short_chunk = true;
    }
    for (int64_t i = chunk_begin; i < chunk_end; ++i) ++counts[i - begin];
  });
  EXPECT_FALSE(short_chunk) << "a chunk shorter than grain " << grain;
  std::vector<int> result;
  result.reserve(counts.size());
  for (const std::atomic<int>& count : counts) result.push_back(count.load());
  return result;
}

TEST(ParallelForTest, VisitsEveryIndexExactlyOnce) {
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> cases = {
      {0, 1, 1},      {0, 2, 1},       {0, 7, 1},         {0, 100, 1},   {0, 100, 3},
      {0, 100, 7},    {0, 100, 33},    {0, 100, 99},      {0, 100, 100}, {0, 100, 1000},
      {5, 17, 2},     {-50, 50, 4},    {0, 1000, 0},      {0, 1000, -5}, {0, 4097, 16},
      {0, 100000, 1}, {3, 100003, 64}, {-7, 10007, 1000}, {100, 101, 1}};
  for (const auto& [begin, end, grain] : cases) {
    const std::vector<int> counts = VisitCounts(begin, end, grain);
    ASSERT_EQ(counts.size(), static_cast<size_t>(end - begin));
    for (size_t i = 0; i < counts.size(); ++i) {
      ASSERT_EQ(counts[i], 1) << "index " << begin + static_cast<int64_t>(i) << " of [" << begin
                              << ", " << end << ") with grain " << grain;
    }
  }
}

TEST(ParallelForTest, EmptyAndReversedRangesNeverCallTheBody) {
  for (const auto& [begin, end] : {std::pair{0, 0}, std::pair{5, 5}, std::pair{10, 3}}) {
    bool called = false;
    ParallelFor(begin, end, 1, [&](int64_t, int64_t) { called = true; });
    EXPECT_FALSE(called) << "[" << begin << ", " << end << ")";
  }
}

TEST(ParallelForTest, RunsOnMoreThanOneThread) {
  if (NumThreads() < 2) GTEST_SKIP() << "NumThreads() is 1 on this machine";
  // Each chunk waits until a second thread has shown up (or a generous deadline passes), so the
  // test does not depend on how fast workers wake on a busy machine.
  std::mutex mutex;
  std::set<std::thread::id> ids;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  ParallelFor(0, 64, 1, [&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ids.insert(std::this_thread::get_id());
    }
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (ids.size() >= 2) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  EXPECT_GE(ids.size(), 2u);
}

TEST(ParallelForTest, RethrowsTheExceptionOfAChunkAndStaysUsable) {
  EXPECT_THROW(ParallelFor(0, 1000, 1,
                           [](int64_t begin, int64_t end) {
                             if (begin <= 500 && 500 < end) throw std::out_of_range("index 500");
                           }),
               std::out_of_range);
  try {
    ParallelFor(0, 100, 1, [](int64_t, int64_t) { KILN_THROW(ValueError) << "bad chunk"; });
    FAIL() << "expected a throw";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "ValueError");
    EXPECT_EQ(error.message(), "bad chunk");
  }
  EXPECT_EQ(VisitCounts(0, 1000, 1), std::vector<int>(1000, 1));
}

TEST(ParallelForTest, NestedCallsRunSeriallyWithoutDeadlock) {
  std::vector<std::atomic<int>> counts(size_t{64} * 64);
  ParallelFor(0, 64, 1, [&](int64_t outer_begin, int64_t outer_end) {
    for (int64_t i = outer_begin; i < outer_end; ++i) {
      ParallelFor(0, 64, 1, [&](int64_t inner_begin, int64_t inner_end) {
        for (int64_t j = inner_begin; j < inner_end; ++j) ++counts[i * 64 + j];
      });
    }
  });
  for (const std::atomic<int>& count : counts) ASSERT_EQ(count.load(), 1);
}

TEST(ParallelForTest, ConcurrentCallersFromManyThreadsAllComplete) {
  std::vector<std::thread> callers;
  callers.reserve(4);
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int round = 0; round < 50; ++round) {
        if (VisitCounts(0, 2000, 8) != std::vector<int>(2000, 1)) ++failures;
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ParallelForTest, WorksInAForkedChild) {
  if (kUnderThreadSanitizer) GTEST_SKIP() << "ThreadSanitizer kills children that start threads";
  ParallelFor(0, 1000, 1, [](int64_t, int64_t) {});  // make sure the parent's pool is running
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<int64_t> sum{0};
    ParallelFor(0, 1000, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum += i;
    });
    _exit(sum == 999 * 1000 / 2 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/// Block q's share of the next state of a recurrence, from the whole current state.
int64_t NextShare(const std::vector<int64_t>& now, int64_t q) {
  int64_t sum = 0;
  for (int64_t value : now) sum += value;
  return (sum + q * now[q]) % 1000003;
}

/// The recurrence run by ParallelSteps: at step s, block q writes its share of the next state in
/// plain memory, so only the barrier between steps makes the reads see the writes
/// (ThreadSanitizer checks that). Returns the final state.
std::vector<int64_t> StepRecurrence(int64_t steps, int64_t blocks) {
  std::vector<int64_t> state[2] = {std::vector<int64_t>(blocks, 1), std::vector<int64_t>(blocks)};
  ParallelSteps(steps, blocks,
                [&](int64_t s, int64_t q) { state[(s + 1) % 2][q] = NextShare(state[s % 2], q); });
  return state[steps % 2];
}

/// The same recurrence, one step and block at a time.
std::vector<int64_t> SerialRecurrence(int64_t steps, int64_t blocks) {
  std::vector<int64_t> state(blocks, 1);
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<int64_t> next(blocks);
    for (int64_t q = 0; q < blocks; ++q) next[q] = NextShare(state, q);
    state = next;
  }
  return state;
}

TEST(ParallelStepsTest, RunsEveryBlockOfAStepAfterAllOfTheStepBefore) {
  for (const int64_t blocks : {1, 2, 5}) {
    EXPECT_EQ(StepRecurrence(300, blocks), SerialRecurrence(300, blocks)) << blocks << " blocks";
  }
}

TEST(ParallelStepsTest, RunsEachBlockOncePerStepAndNothingForAnEmptyRange) {
  std::vector<std::atomic<int>> runs(size_t{50} * 3);
  ParallelSteps(50, 3, [&](int64_t s, int64_t q) { ++runs[s * 3 + q]; });
  for (const std::atomic<int>& count : runs) ASSERT_EQ(count.load(), 1);
  std::atomic<int> calls{0};
  ParallelSteps(0, 3, [&](int64_t, int64_t) { ++calls; });
  ParallelSteps(3, 0, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls.load(), 0);
}

TEST(ParallelStepsTest, RethrowsTheFirstExceptionAndSkipsTheStepsAfterIt) {
  std::atomic<int64_t> last_step{-1};
  EXPECT_THROW(ParallelSteps(100, 3,
                             [&](int64_t s, int64_t q) {
                               int64_t seen = last_step.load();
                               while (s > seen && !last_step.compare_exchange_weak(seen, s)) {
                               }
                               if (s == 7 && q == 1) throw std::out_of_range("step 7");
                             }),
               std::out_of_range);
  EXPECT_EQ(last_step.load(), 7);  // the blocks of step 7 may finish; none of step 8 starts
  EXPECT_EQ(StepRecurrence(20, 3), SerialRecurrence(20, 3));  // and usable after it
}

TEST(ParallelStepsTest, CompletesOnOneThreadWhenNestedInARegion) {
  std::vector<std::atomic<int>> runs(size_t{4} * 20 * 3);
  ParallelFor(0, 4, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      ParallelSteps(20, 3, [&](int64_t s, int64_t q) { ++runs[(i * 20 + s) * 3 + q]; });
    }
  });
  for (const std::atomic<int>& count : runs) ASSERT_EQ(count.load(), 1);
}

TEST(NumThreadsTest, IsPositiveAndMatchesTheEnvironmentWhenSet) {
  EXPECT_GE(NumThreads(), 1);
  if (std::optional<int> requested = internal::ParseNumThreadsEnv(getenv("KILN_NUM_THREADS"))) {
    EXPECT_EQ(NumThreads(), *requested);
  } else {
    EXPECT_LE(NumThreads(), static_cast<int>(std::max(std::thread::hardware_concurrency(), 1u)));
  }
}

TEST(NumThreadsEnvTest, AcceptsWholeNumbersAndTreatsBlankAsUnset) {
  EXPECT_EQ(internal::ParseNumThreadsEnv(nullptr), std::nullopt);
  EXPECT_EQ(internal::ParseNumThreadsEnv(""), std::nullopt);
  EXPECT_EQ(internal::ParseNumThreadsEnv("  "), std::nullopt);
  EXPECT_EQ(internal::ParseNumThreadsEnv("1"), 1);
  EXPECT_EQ(internal::ParseNumThreadsEnv("16"), 16);
  EXPECT_EQ(internal::ParseNumThreadsEnv(" 8\n"), 8);
  EXPECT_EQ(internal::ParseNumThreadsEnv("4096"), 4096);
}

TEST(NumThreadsEnvTest, RejectsAnythingElseNamingTheVariableAndTheValue) {
  for (const char* bad : {"0", "-2", "+4", "four", "4x", "4 4", "2.5", "4097", "99999999999"}) {
    try {
      internal::ParseNumThreadsEnv(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), "ValueError");
      EXPECT_NE(error.message().find("KILN_NUM_THREADS"), std::string::npos) << error.message();
      EXPECT_NE(error.message().find(std::string("'") + bad + "'"), std::string::npos)
          << error.message();
    }
  }
}

TEST(CgroupQuotaTest, RoundsQuotasUpAndIgnoresUnlimited) {
  EXPECT_EQ(internal::CpusFromCgroupV2CpuMax("max 100000"), std::nullopt);
  EXPECT_EQ(internal::CpusFromCgroupV2CpuMax("100000 100000\n"), 1);
  EXPECT_EQ(internal::CpusFromCgroupV2CpuMax("150000 100000"), 2);
  EXPECT_EQ(internal::CpusFromCgroupV2CpuMax("50000 100000"), 1);
  EXPECT_EQ(internal::CpusFromCgroupV2CpuMax("800000 100000"), 8);
  EXPECT_EQ(internal::CpusFromCgroupV2CpuMax("garbage"), std::nullopt);
  EXPECT_EQ(internal::CpusFromCgroupV2CpuMax(""), std::nullopt);
  EXPECT_EQ(internal::CpusFromCfsQuota(-1, 100000), std::nullopt);
  EXPECT_EQ(internal::CpusFromCfsQuota(250000, 100000), 3);
  EXPECT_EQ(internal::CpusFromCfsQuota(100000, 0), std::nullopt);
}

}  // namespace
}  // namespace runtime
}  // namespace kiln
