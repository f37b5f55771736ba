// nn.softmax and nn.log_softmax along one axis (ONNX opset 13): over an [outer, extent, inner]
// view, each outer block keeps `inner` running maxima and sums, so the inner loops stay
// contiguous whatever the axis.
#include <cmath>
#include <limits>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

template <bool kLog>
void Softmax(const KernelCall& call) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const AxisSplit split = SplitAtAxis(ShapeOf(in), call.NormalizeAxis(call.Int("axis"), in.ndim()));
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
