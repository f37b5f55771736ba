// cumsum (ONNX CumSum): running sums along one axis, in the data's own type (as ONNX), per
// [outer, extent, inner] block; inner positions are contiguous, so each step adds a row.
#include <algorithm>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

void Cumsum(const KernelCall& call) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const AxisSplit split = SplitAtAxis(ShapeOf(in), call.NormalizeAxis(call.Int("axis"), in.ndim()));
  const bool exclusive = call.Bool("exclusive");
  const bool reverse = call.Bool("reverse");
  DispatchDType<kNumericTypes>(call, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = Data<const T>(in);
    T* y = Data<T>(out);
    runtime::ParallelFor(0, split.outer, 1, [&](int64_t begin, int64_t end) {
      std::vector<T> running(split.inner);
      for (int64_t o = begin; o < end; ++o) {
        std::fill(running.begin(), running.end(), T(0));
        for (int64_t step = 0; step < split.extent; ++step) {
          const int64_t e = reverse ? split.extent - 1 - step : step;
          const T* row = x + (o * split.extent + e) * split.inner;
          T* result = y + (o * split.extent + e) * split.inner;
          for (int64_t i = 0; i < split.inner; ++i) {
            if (exclusive) {
              result[i] = running[i];
              running[i] = static_cast<T>(running[i] + row[i]);
            } else {
              running[i] = static_cast<T>(running[i] + row[i]);
              result[i] = running[i];
            }
          }
        }
      }
    });
  });
}
KILN_CPU_KERNEL("cumsum", Cumsum);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
