// topk (ONNX TopK): per [outer, extent, inner] line, a partial sort of the positions by value
// (ties to the lower position), then the first k values and positions in order.
#include <algorithm>
#include <numeric>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

void TopK(const KernelCall& call) {
  const Tensor in = call.input(0);
  const Tensor values = call.output(0);
  const Tensor indices = call.output(1);
  const AxisSplit split = SplitAtAxis(ShapeOf(in), call.NormalizeAxis(call.Int("axis"), in.ndim()));
  const int64_t k = call.Int("k");
  KILN_CHECK(k >= 0 && k <= split.extent, ValueError)
      << call.Prefix() << "k = " << k << " is outside [0, " << split.extent << "]";
  const bool largest = call.Bool("largest");
  DispatchDType<kNumericTypes>(call, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = Data<const T>(in);
    T* top = Data<T>(values);
    auto* where = Data<int64_t>(indices);
    runtime::ParallelFor(0, split.outer * split.inner, 16, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> order(split.extent);
      for (int64_t line = begin; line < end; ++line) {
        const int64_t o = line / split.inner;
        const int64_t i = line % split.inner;
        const T* base = x + o * split.extent * split.inner + i;
        auto value = [&](int64_t e) { return base[e * split.inner]; };
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          if (value(a) != value(b)) {
            return largest ? value(a) > value(b) : value(a) < value(b);
          }
          return a < b;
        });
        for (int64_t j = 0; j < k; ++j) {
          const int64_t out = (o * k + j) * split.inner + i;
          top[out] = value(order[j]);
          where[out] = order[j];
        }
      }
    });
  });
}
KILN_CPU_KERNEL("topk", TopK);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
