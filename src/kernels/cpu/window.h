// Sliding windows over 2 or 3 spatial axes (convolution, transposed convolution, pooling): the
// window attributes and which output positions of a row read inside the input.
#ifndef KILN_SRC_KERNELS_CPU_WINDOW_H_
#define KILN_SRC_KERNELS_CPU_WINDOW_H_

#include <cstdint>
#include <vector>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {

/// Window extents, strides, padding (all begins, then all ends, as ONNX's pads) and dilation, per
/// spatial axis (2-D: height, width; 3-D: depth, height, width).
template <int kRank>
struct Window {
  int64_t kernel[kRank];
  int64_t stride[kRank];
  int64_t pad_begin[kRank];
  int64_t pad_end[kRank];
  int64_t dilation[kRank];

  /// Input position read by output position `out` at kernel tap `tap` along `axis`.
  int64_t InputPos(int axis, int64_t out, int64_t tap) const {
    return out * stride[axis] - pad_begin[axis] + tap * dilation[axis];
  }
};
using Window2D = Window<2>;
using Window3D = Window<3>;

/// The window of the call's "strides", "padding" and "dilation" around `kernel` (kRank
/// extents); ValueError naming the kernel when an attribute has the wrong length.
template <int kRank>
Window<kRank> ReadWindow(const KernelCall& call, const std::vector<int64_t>& kernel);

/// The 2-D window around a kernel of kernel_h x kernel_w.
inline Window2D ReadWindow(const KernelCall& call, int64_t kernel_h, int64_t kernel_w) {
  return ReadWindow<2>(call, {kernel_h, kernel_w});
}

/// [begin, end) of the output positions o in [0, out_extent) for which
/// o * stride + offset lies in [0, in_extent).
struct Range {
  int64_t begin;
  int64_t end;
};
Range ValidOutputs(int64_t out_extent, int64_t stride, int64_t offset, int64_t in_extent);

/// The padded extent of an input axis that a window reads for `out_extent` outputs: every
/// position it reaches, from -pad_begin on.
inline int64_t PaddedExtent(const Window2D& win, int axis, int64_t out_extent) {
  return (out_extent - 1) * win.stride[axis] + (win.kernel[axis] - 1) * win.dilation[axis] + 1;
}

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_SRC_KERNELS_CPU_WINDOW_H_
