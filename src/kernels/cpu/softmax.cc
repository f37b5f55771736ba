// nn.softmax and nn.log_softmax along one axis (ONNX opset 13): over an [outer, extent, inner]
// view, each outer block keeps `inner` running maxima and sums, so the inner loops stay
// contiguous whatever the axis.
#include "softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <kiln/runtime/fast_math.h>
#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {

// The maximum, the exponentials and the sum run 16 lanes wide, which vectorizes without
// reassociating.
KILN_CPU_CLONES void SoftmaxRow(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  constexpr int64_t kLanes = 16;
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  float lane_max[kLanes];
  std::fill_n(lane_max, kLanes, kLowest);
  const int64_t whole = n / kLanes * kLanes;
  for (int64_t i = 0; i < whole; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lane_max[l] = std::max(lane_max[l], x[i + l]);
  }
  float max = kLowest;
  for (int64_t i = whole; i < n; ++i) max = std::max(max, x[i]);
  for (float lane : lane_max) max = std::max(max, lane);
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) {
      y[i + l] = kiln_fast_exp_nonpositive(x[i + l] - max);
      lanes[l] += y[i + l];
    }
  }
  double sum = 0.0;
  for (; i < n; ++i) {
    y[i] = kiln_fast_exp_nonpositive(x[i] - max);
    sum += y[i];
  }
  for (float lane : lanes) sum += lane;
  const auto scale = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < n; ++j) y[j] *= scale;
}

namespace {

/// Rows this short take SoftmaxShortRows: SoftmaxRow would run each of them in its scalar tails.
constexpr int64_t kShortRow = 16;

/// y = softmax(x) over `rows` contiguous rows of `n` < kShortRow elements: the exponentials of
/// all the rows run as one contiguous loop, which vectorizes, between a per-row maximum and a
/// per-row scale (SSDlite's class scores, 3,234 rows of 5: 0.24 ms row by row).
KILN_CPU_CLONES void SoftmaxShortRows(const float* __restrict__ x, float* __restrict__ y,
                                      int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    const float max = *std::max_element(row, row + n);
    for (int64_t j = 0; j < n; ++j) y[r * n + j] = row[j] - max;
  }
  for (int64_t i = 0; i < rows * n; ++i) y[i] = kiln_fast_exp_nonpositive(y[i]);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * n;
    float sum = 0.F;
    for (int64_t j = 0; j < n; ++j) sum += row[j];
    const float scale = 1.F / sum;
    for (int64_t j = 0; j < n; ++j) row[j] *= scale;
  }
}

template <bool kLog>
void Softmax(const KernelCall& call) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const AxisSplit split = SplitAtAxis(ShapeOf(in), call.NormalizeAxis(call.Int("axis"), in.ndim()));
  if (!kLog && split.inner == 1 && in.dtype().code == kDLFloat && in.dtype().bits == 32) {
    const float* x = Data<const float>(in);
    float* y = Data<float>(out);
    const int64_t n = split.extent;
    // A row costs about 8 copies of it (three passes, one with an exponential).
    const int64_t grain = std::max<int64_t>(1, kElementGrain / 8 / std::max<int64_t>(1, n));
    runtime::ParallelFor(0, split.outer, grain, [&](int64_t begin, int64_t end) {
      if (n < kShortRow) {
        SoftmaxShortRows(x + begin * n, y + begin * n, end - begin, n);
        return;
      }
      for (int64_t row = begin; row < end; ++row) SoftmaxRow(x + row * n, y + row * n, n);
    });
    return;
  }
  DispatchDType<kFloatTypes>(call, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = Data<const T>(in);
    T* y = Data<T>(out);
    const int64_t block = split.extent * split.inner;
    const int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, block));
    runtime::ParallelFor(0, split.outer, grain, [&](int64_t begin, int64_t end) {
      std::vector<T> max(split.inner);
      std::vector<double> sum(split.inner);
      for (int64_t o = begin; o < end; ++o) {
        const T* __restrict__ xb = x + o * block;
        T* __restrict__ yb = y + o * block;
        std::fill(max.begin(), max.end(), -std::numeric_limits<T>::infinity());
        std::fill(sum.begin(), sum.end(), 0.0);
        for (int64_t r = 0; r < split.extent; ++r) {
          for (int64_t i = 0; i < split.inner; ++i) {
            max[i] = std::max(max[i], xb[r * split.inner + i]);
          }
        }
        for (int64_t r = 0; r < split.extent; ++r) {
          for (int64_t i = 0; i < split.inner; ++i) {
            const T shifted = xb[r * split.inner + i] - max[i];
            const T e = std::exp(shifted);
            yb[r * split.inner + i] = kLog ? shifted : e;
            sum[i] += e;
          }
        }
        for (int64_t r = 0; r < split.extent; ++r) {
          for (int64_t i = 0; i < split.inner; ++i) {
            T& value = yb[r * split.inner + i];
            value =
                kLog ? static_cast<T>(value - std::log(sum[i])) : static_cast<T>(value / sum[i]);
          }
        }
      }
    });
  });
}

KILN_CPU_KERNEL("nn.softmax", Softmax<false>);
KILN_CPU_KERNEL("nn.log_softmax", Softmax<true>);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
