#include "window.h"

#include <algorithm>

namespace kiln {
namespace kernels {
namespace cpu {

Window2D ReadWindow(const KernelCall& call, int64_t kernel_h, int64_t kernel_w) {
  const std::vector<int64_t> strides = call.Ints("strides");
  const std::vector<int64_t> padding = call.Ints("padding");
  const std::vector<int64_t> dilation = call.Ints("dilation");
  KILN_CHECK(strides.size() == 2 && padding.size() == 4 && dilation.size() == 2, ValueError)
      << call.Prefix() << "strides, padding and dilation need 2, 4 and 2 values";
  return Window2D{{kernel_h, kernel_w},
                  {strides[0], strides[1]},
                  {padding[0], padding[1]},
                  {padding[2], padding[3]},
                  {dilation[0], dilation[1]}};
}

Range ValidOutputs(int64_t out_extent, int64_t stride, int64_t offset, int64_t in_extent) {
  // o >= ceil(-offset / stride) and o <= floor((in_extent - 1 - offset) / stride).
  const int64_t begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t last = in_extent - 1 - offset;
  const int64_t end = last < 0 ? 0 : last / stride + 1;
  const int64_t clamped_begin = std::min(begin, out_extent);
  return Range{clamped_begin, std::max(clamped_begin, std::min(end, out_extent))};
}

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
