// arange and range: element i is start + i * step, for the output's extent (the op's `size`,
// evaluated for the call when it is symbolic).
#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

void Arange(const KernelCall& call) {
  const Tensor out = call.output(0);
  const double start = call.Float("start");
  const double step = call.Float("step");
  DispatchDType<kNumericTypes>(call, out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* y = Data<T>(out);
    const int64_t count = out.NumElements();
    for (int64_t i = 0; i < count; ++i) {
      y[i] = static_cast<T>(start + static_cast<double>(i) * step);
    }
  });
}
KILN_CPU_KERNEL("arange", Arange);

/// range: as arange, with start and step read from scalar inputs in the output's dtype (exact
/// for integers, as ONNX Range computes).
void Range(const KernelCall& call) {
  const Tensor out = call.output(0);
  DispatchDType<kNumericTypes>(call, out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T start = *Data<const T>(call.input(0));
    const T step = *Data<const T>(call.input(1));
    T* y = Data<T>(out);
    const int64_t count = out.NumElements();
    for (int64_t i = 0; i < count; ++i) y[i] = static_cast<T>(start + static_cast<T>(i) * step);
  });
}
KILN_CPU_KERNEL("range", Range);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
