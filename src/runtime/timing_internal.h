// Private to Kiln: the timing helpers that profiling (the graph executor) and measured BYOC
// placement (src/driver) share.
#ifndef KILN_SRC_RUNTIME_TIMING_INTERNAL_H_
#define KILN_SRC_RUNTIME_TIMING_INTERNAL_H_

#include <algorithm>
#include <chrono>
#include <vector>

namespace kiln {
namespace runtime {
namespace internal {

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The middle one of `values` (not empty); the upper middle one of an even count.
inline double Median(std::vector<double> values) {
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace internal
}  // namespace runtime
}  // namespace kiln

#endif  // KILN_SRC_RUNTIME_TIMING_INTERNAL_H_
