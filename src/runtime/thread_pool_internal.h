// Private to libkiln_runtime: how the thread pool decides its size. The parsers are inline so
// the tests can check them without the library exporting them.
#ifndef KILN_SRC_RUNTIME_THREAD_POOL_INTERNAL_H_
#define KILN_SRC_RUNTIME_THREAD_POOL_INTERNAL_H_

#include <kiln/ffi/error.h>

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {
namespace runtime {
// Not `detail`: a kiln::runtime::detail would hide kiln::detail from the unqualified
// `detail::` calls in the public runtime headers.
namespace internal {

/// The largest KILN_NUM_THREADS accepted: far above any machine we know, low enough that a
/// typo ("40000") fails instead of starting tens of thousands of threads.
constexpr int kMaxNumThreads = 4096;

inline std::string_view TrimSpaces(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\n");
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(" \t\n");
  return text.substr(first, last - first + 1);
}

/// The whole of `text` as an integer, or nullopt (sign, spaces inside, trailing junk, overflow).
template <typename Int>
std::optional<Int> ParseWholeNumber(std::string_view text) {
  Int value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

/// The thread count asked for by KILN_NUM_THREADS's `value`: nullopt when it is unset or
/// blank (use the cores available); a ValueError naming the variable for anything other than
/// a whole number in [1, kMaxNumThreads].
inline std::optional<int> ParseNumThreadsEnv(const char* value) {
  if (value == nullptr) return std::nullopt;
  const std::string_view text = TrimSpaces(value);
  if (text.empty()) return std::nullopt;
  const std::optional<int> threads = ParseWholeNumber<int>(text);
  KILN_CHECK(threads.has_value() && *threads >= 1 && *threads <= kMaxNumThreads, ValueError)
      << "KILN_NUM_THREADS must be a whole number from 1 to " << kMaxNumThreads << ", got '"
      << value << "'";
  return threads;
}

/// CPUs granted by a CFS quota of `quota_us` per `period_us`, rounded up (a quota of 1.5 CPUs
/// can keep two threads busy 75% of the time, which beats one thread at 100%); nullopt when
/// unlimited (quota -1) or malformed.
inline std::optional<int> CpusFromCfsQuota(int64_t quota_us, int64_t period_us) {
  if (quota_us <= 0 || period_us <= 0) return std::nullopt;
  const int64_t cpus = (quota_us + period_us - 1) / period_us;
  return static_cast<int>(cpus < kMaxNumThreads ? cpus : kMaxNumThreads);
}

/// CPUs granted by a cgroup v2 `cpu.max` line, "<quota> <period>" or "max <period>".
inline std::optional<int> CpusFromCgroupV2CpuMax(std::string_view line) {
  line = TrimSpaces(line);
  const size_t space = line.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::optional<int64_t> quota = ParseWholeNumber<int64_t>(line.substr(0, space));
  const std::optional<int64_t> period = ParseWholeNumber<int64_t>(TrimSpaces(line.substr(space)));
  if (!quota.has_value() || !period.has_value()) return std::nullopt;  // "max": no limit
  return CpusFromCfsQuota(*quota, *period);
}

}  // namespace internal
}  // namespace runtime
}  // namespace kiln

#endif  // KILN_SRC_RUNTIME_THREAD_POOL_INTERNAL_H_
