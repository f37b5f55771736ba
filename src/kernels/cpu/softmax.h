// The row softmax that nn.softmax runs over the last axis, shared with nn.attention.
#ifndef KILN_SRC_KERNELS_CPU_SOFTMAX_H_
#define KILN_SRC_KERNELS_CPU_SOFTMAX_H_

#include <cstdint>

namespace kiln {
namespace kernels {
namespace cpu {

/// y = softmax(x) over one contiguous float32 row of `n` elements (x and y must not overlap),
/// max-subtracted, with the fast exp of fast_math.h (within 1.5 ulp; ~1e-38 rather than 0 for
/// inputs more than 87 below the maximum). An AVX-512 clone is picked at load time.
void SoftmaxRow(const float* x, float* y, int64_t n);

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_SRC_KERNELS_CPU_SOFTMAX_H_
