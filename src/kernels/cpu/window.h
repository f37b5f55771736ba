// 2-D sliding windows (convolution, transposed convolution, pooling): the window attributes
// and which output positions of a row read inside the input.
#ifndef KILN_SRC_KERNELS_CPU_WINDOW_H_
#define KILN_SRC_KERNELS_CPU_WINDOW_H_

#include <cstdint>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {

/// Window extents, strides, padding (top, left, bottom, right) and dilation, per axis
/// (0: height, 1: width).
struct Window2D {
  int64_t kernel[2];
  int64_t stride[2];
  int64_t pad_begin[2];
  int64_t pad_end[2];
  int64_t dilation[2];

  /// Input position read by output position `out` at kernel tap `tap` along `axis`.
  int64_t InputPos(int axis, int64_t out, int64_t tap) const {
    return out * stride[axis] - pad_begin[axis] + tap * dilation[axis];
  }
};

/// The window of the call's "strides", "padding" and "dilation" around a kernel of
/// kernel_h x kernel_w.
Window2D ReadWindow(const KernelCall& call, int64_t kernel_h, int64_t kernel_w);

/// [begin, end) of the output positions o in [0, out_extent) for which
/// o * stride + offset lies in [0, in_extent).
struct Range {
  int64_t begin;
  int64_t end;
};
Range ValidOutputs(int64_t out_extent, int64_t stride, int64_t offset, int64_t in_extent);

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_SRC_KERNELS_CPU_WINDOW_H_
