// unique_count and unique (ONNX Unique along an axis): both group the slices of the input along
// the axis by equality, the first to count the groups (the size of the second's outputs), the
// second to write them. Slices compare lexicographically in row-major order of their elements,
// as numpy.unique with an axis (which ONNX follows); NaNs are equal to each other and greater
// than every number, so that the order is total.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

template <typename T>
bool Less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

/// The distinct slices, in ascending order or in the order they first occur.
struct Grouping {
  std::vector<int64_t> first;    ///< per distinct slice: the position it first occurs at
  std::vector<int64_t> counts;   ///< per distinct slice: how many positions hold it
  std::vector<int64_t> inverse;  ///< per position: the index of its distinct slice
};

/// Groups the slices along the middle axis of `data`, laid out as `split`.
template <typename T>
Grouping GroupSlices(const T* data, const AxisSplit& split, bool sorted) {
  // -1, 0 or 1 as slice `a` is less than, equal to or greater than slice `b`.
  auto compare = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < split.outer; ++o) {
      const T* row = data + o * split.extent * split.inner;
      for (int64_t i = 0; i < split.inner; ++i) {
        const T x = row[a * split.inner + i];
        const T y = row[b * split.inner + i];
        if (Less(x, y)) return -1;
        if (Less(y, x)) return 1;
      }
    }
    return 0;
  };
  std::vector<int64_t> order(split.extent);
  std::iota(order.begin(), order.end(), int64_t{0});
  // Stable, so each run of equal slices starts at its first occurrence.
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  Grouping grouping;
  grouping.inverse.resize(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || compare(order[k - 1], order[k]) != 0) {
      grouping.first.push_back(order[k]);
      grouping.counts.push_back(0);
    }
    ++grouping.counts.back();
    grouping.inverse[order[k]] = static_cast<int64_t>(grouping.first.size()) - 1;
  }
  if (sorted) return grouping;
  std::vector<int64_t> by_occurrence(grouping.first.size());
  std::iota(by_occurrence.begin(), by_occurrence.end(), int64_t{0});
  std::sort(by_occurrence.begin(), by_occurrence.end(),
            [&](int64_t a, int64_t b) { return grouping.first[a] < grouping.first[b]; });
  std::vector<int64_t> renumbered(by_occurrence.size());
  Grouping reordered;
  for (size_t j = 0; j < by_occurrence.size(); ++j) {
    renumbered[by_occurrence[j]] = static_cast<int64_t>(j);
    reordered.first.push_back(grouping.first[by_occurrence[j]]);
    reordered.counts.push_back(grouping.counts[by_occurrence[j]]);
  }
  for (int64_t group : grouping.inverse) reordered.inverse.push_back(renumbered[group]);
  return reordered;
}

/// Calls f(grouping, data, split) with the slices of input 0 grouped along attribute 'axis'.
template <typename F>
void WithGrouping(const KernelCall& call, bool sorted, const F& f) {
  const Tensor in = call.input(0);
  const AxisSplit split = SplitAtAxis(ShapeOf(in), call.NormalizeAxis(call.Int("axis"), in.ndim()));
  DispatchDType<kAllTypes & ~kNarrowFloatTypes>(call, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* data = Data<const T>(in);
    f(GroupSlices(data, split, sorted), data, split);
  });
}

void UniqueCount(const KernelCall& call) {
  WithGrouping(call, /*sorted=*/true, [&](const Grouping& grouping, const auto*, const AxisSplit&) {
    *Data<int64_t>(call.output(0)) = static_cast<int64_t>(grouping.first.size());
  });
}
KILN_CPU_KERNEL("unique_count", UniqueCount);

/// Outputs: the distinct slices, the position of each one's first occurrence, each position's
/// distinct slice, and how many positions hold each.
void Unique(const KernelCall& call) {
  WithGrouping(
      call, call.Bool("sorted"),
      [&](const Grouping& grouping, const auto* data, const AxisSplit& split) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(data)>>;
        const Tensor values = call.output(0);
        const int64_t count = call.output(1).shape(0);
        KILN_CHECK(count == static_cast<int64_t>(grouping.first.size()), ValueError)
            << call.Prefix() << "the outputs hold " << count << " distinct slices, the input has "
            << grouping.first.size();
        T* out = Data<T>(values);
        for (int64_t o = 0; o < split.outer; ++o) {
          for (int64_t j = 0; j < count; ++j) {
            std::copy_n(data + (o * split.extent + grouping.first[j]) * split.inner, split.inner,
                        out + (o * count + j) * split.inner);
          }
        }
        std::copy(grouping.first.begin(), grouping.first.end(), Data<int64_t>(call.output(1)));
        std::copy(grouping.inverse.begin(), grouping.inverse.end(), Data<int64_t>(call.output(2)));
        std::copy(grouping.counts.begin(), grouping.counts.end(), Data<int64_t>(call.output(3)));
      });
}
KILN_CPU_KERNEL("unique", Unique);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
