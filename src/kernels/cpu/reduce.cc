// Reductions: sum, mean, max, min, prod over any set of axes, and argmax/argmin over one.
// Adjacent reduced axes (and adjacent kept ones) are merged first; each remaining reduced
// axis is then one pass over an [outer, extent, inner] view whose inner loop is contiguous.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// Floats accumulate in double (sums of many float32 values lose digits otherwise); integers
/// in their own type, as ONNX keeps the input dtype.
template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, T>;

struct SumReducer {
  template <typename A>
  static A Identity() {
    return A(0);
  }
  template <typename A>
  static A Combine(A a, A b) {
    return a + b;
  }
};
struct ProdReducer {
  template <typename A>
  static A Identity() {
    return A(1);
  }
  template <typename A>
  static A Combine(A a, A b) {
    return a * b;
  }
};
struct MaxReducer {
  template <typename A>
  static A Identity() {
    return std::numeric_limits<A>::lowest();
  }
  template <typename A>
  static A Combine(A a, A b) {
    return std::max(a, b);
  }
};
struct MinReducer {
  template <typename A>
  static A Identity() {
    return std::numeric_limits<A>::max();
  }
  template <typename A>
  static A Combine(A a, A b) {
    return std::min(a, b);
  }
};

/// `shape` with adjacent reduced axes merged and adjacent kept axes merged, and whether each
/// merged axis is reduced.
struct MergedAxes {
  std::vector<int64_t> shape;
  std::vector<bool> reduced;
};

MergedAxes MergeAxes(const std::vector<int64_t>& shape, const std::vector<bool>& reduced) {
  MergedAxes merged;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!merged.shape.empty() && merged.reduced.back() == reduced[d]) {
      merged.shape.back() *= shape[d];
    } else {
      merged.shape.push_back(shape[d]);
      merged.reduced.push_back(reduced[d]);
    }
  }
  return merged;
}

/// Combine over x[0, n), contiguous, in 16 lanes that combine every 16th element each, and
/// then one another: one running accumulator would wait on every combine (a mean over a 7x7
/// plane, a sum over a row). Max and min skip NaN in either form.
template <typename Reducer, typename In, typename Acc>
Acc ReduceRun(const In* __restrict__ x, int64_t n) {
  constexpr int64_t kLanes = 16;
  Acc lanes[kLanes];
  std::fill_n(lanes, kLanes, Reducer::template Identity<Acc>());
  int64_t r = 0;
  for (; r + kLanes <= n; r += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) {
      lanes[l] = Reducer::Combine(lanes[l], static_cast<Acc>(x[r + l]));
    }
  }
  Acc acc = Reducer::template Identity<Acc>();
  for (; r < n; ++r) acc = Reducer::Combine(acc, static_cast<Acc>(x[r]));
  for (Acc lane : lanes) acc = Reducer::Combine(acc, lane);
  return acc;
}

/// acc[i] = combine over r < rows of x[r * inner + i], for i < inner: the rows of a reduced axis
/// that has contiguous kept ones after it (a channel-blocked plane's 16 lanes), an AVX-512
/// clone beside the baseline one. Rows of at most kShortRow elements go to kParts partial
/// results in turn, so that kParts chains of combines run at once rather than one.
template <typename Reducer, typename In, typename Acc>
KILN_CPU_CLONES void CombineRows(const In* __restrict__ x, int64_t rows, int64_t inner,
                                 Acc* __restrict__ acc) {
  constexpr int64_t kParts = 4;
  constexpr int64_t kShortRow = 64;
  const Acc identity = Reducer::template Identity<Acc>();
  for (int64_t i = 0; i < inner; ++i) acc[i] = identity;
  int64_t r = 0;
  if (inner <= kShortRow) {
    Acc parts[kParts][kShortRow];
    for (auto& part : parts) std::fill_n(part, inner, identity);
    for (; r + kParts <= rows; r += kParts) {
      for (int64_t k = 0; k < kParts; ++k) {
        const In* __restrict__ row = x + (r + k) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          parts[k][i] = Reducer::Combine(parts[k][i], static_cast<Acc>(row[i]));
        }
      }
    }
    for (const auto& part : parts) {
      for (int64_t i = 0; i < inner; ++i) acc[i] = Reducer::Combine(acc[i], part[i]);
    }
  }
  for (; r < rows; ++r) {
    const In* __restrict__ row = x + r * inner;
    for (int64_t i = 0; i < inner; ++i) acc[i] = Reducer::Combine(acc[i], static_cast<Acc>(row[i]));
  }
}

/// y[o, i] = combine over r of x[o, r, i].
template <typename Reducer, typename In, typename Acc>
void ReduceAxis(const In* x, const AxisSplit& split, Acc* y) {
  const int64_t grain =
      std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, split.extent * split.inner));
  runtime::ParallelFor(0, split.outer, grain, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      if (split.inner == 1) {
        y[o] = ReduceRun<Reducer, In, Acc>(x + o * split.extent, split.extent);
        continue;
      }
      CombineRows<Reducer>(x + o * split.extent * split.inner, split.extent, split.inner,
                           y + o * split.inner);
    }
  });
}

/// The reduced axes of the call: "axis" (None: all of them), normalized.
std::vector<bool> ReducedAxes(const KernelCall& call, int64_t rank) {
  std::optional<std::vector<int64_t>> axes = call.OptionalInts("axis");
  std::vector<bool> reduced(rank, !axes.has_value());
  if (axes.has_value()) {
    for (int64_t axis : *axes) reduced[call.NormalizeAxis(axis, rank)] = true;
  }
  return reduced;
}

/// Reduces input 0 over the axes `reduced` marks into output 0.
template <typename Reducer, bool kMean>
void ReduceOver(const KernelCall& call, const std::vector<bool>& reduced) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const std::vector<int64_t> shape = ShapeOf(in);
  const MergedAxes merged = MergeAxes(shape, reduced);
  DispatchDType<kNumericTypes>(call, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = Accumulator<T>;
    // Reduce the last reduced axis first so the positions of those before it stay valid.
    std::vector<int64_t> current = merged.shape;
    std::vector<Acc> buffer;
    std::vector<Acc> next;
    bool from_input = true;
    int64_t count = 1;
    for (size_t d = merged.shape.size(); d-- > 0;) {
      if (!merged.reduced[d]) continue;
      const AxisSplit split = SplitAtAxis(current, static_cast<int64_t>(d));
      next.assign(split.outer * split.inner, Acc{});
      if (from_input) {
        ReduceAxis<Reducer>(Data<const T>(in), split, next.data());
      } else {
        ReduceAxis<Reducer>(buffer.data(), split, next.data());
      }
      buffer.swap(next);
      from_input = false;
      count *= current[d];
      current[d] = 1;
    }
    T* y = Data<T>(out);
    if (from_input) {  // nothing to reduce (an empty axis list)
      std::copy_n(Data<const T>(in), in.NumElements(), y);
      return;
    }
    for (size_t i = 0; i < buffer.size(); ++i) {
      y[i] = static_cast<T>(kMean ? buffer[i] / static_cast<Acc>(count) : buffer[i]);
    }
  });
}

template <typename Reducer, bool kMean>
void Reduce(const KernelCall& call) {
  ReduceOver<Reducer, kMean>(call, ReducedAxes(call, call.input(0).ndim()));
}

/// sum_to: sums the axes whose extent the output does not keep.
void SumTo(const KernelCall& call) {
  const std::vector<int64_t> in = ShapeOf(call.input(0));
  const std::vector<int64_t> out = ShapeOf(call.output(0));
  std::vector<bool> reduced(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    KILN_CHECK(out[d] == in[d] || out[d] == 1, ValueError)
        << call.Prefix() << "cannot sum extent " << in[d] << " of axis " << d << " to " << out[d];
    reduced[d] = out[d] != in[d];
  }
  ReduceOver<SumReducer, false>(call, reduced);
}
KILN_CPU_KERNEL("sum_to", SumTo);

KILN_CPU_KERNEL("sum", (Reduce<SumReducer, false>));
KILN_CPU_KERNEL("mean", (Reduce<SumReducer, true>));
KILN_CPU_KERNEL("prod", (Reduce<ProdReducer, false>));
KILN_CPU_KERNEL("max", (Reduce<MaxReducer, false>));
KILN_CPU_KERNEL("min", (Reduce<MinReducer, false>));

/// argmax/argmin along "axis": the first index of the extreme value (ONNX's default
/// select_last_index = 0), as int64.
template <typename Better>
void ArgReduce(const KernelCall& call) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const AxisSplit split = SplitAtAxis(ShapeOf(in), call.NormalizeAxis(call.Int("axis"), in.ndim()));
  KILN_CHECK(split.extent > 0, ValueError) << call.Prefix() << "the reduced axis is empty";
  const Better better{};
  DispatchDType<kNumericTypes>(call, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = Data<const T>(in);
    auto* y = Data<int64_t>(out);
    runtime::ParallelFor(0, split.outer, 1, [&](int64_t begin, int64_t end) {
      std::vector<T> best(split.inner);
      for (int64_t o = begin; o < end; ++o) {
        const T* block = x + o * split.extent * split.inner;
        int64_t* index = y + o * split.inner;
        std::copy_n(block, split.inner, best.begin());
        std::fill_n(index, split.inner, 0);
        for (int64_t r = 1; r < split.extent; ++r) {
          const T* row = block + r * split.inner;
          for (int64_t i = 0; i < split.inner; ++i) {
            if (better(row[i], best[i])) {
              best[i] = row[i];
              index[i] = r;
            }
          }
        }
      }
    });
  });
}

struct Greater {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct Less {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};

KILN_CPU_KERNEL("argmax", ArgReduce<Greater>);
KILN_CPU_KERNEL("argmin", ArgReduce<Less>);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
