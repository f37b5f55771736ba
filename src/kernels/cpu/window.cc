#include "window.h"

#include <algorithm>

namespace kiln {
namespace kernels {
namespace cpu {

template <int kRank>
Window<kRank> ReadWindow(const KernelCall& call, const std::vector<int64_t>& kernel) {
  const std::vector<int64_t> strides = call.Ints("strides");
  const std::vector<int64_t> padding = call.Ints("padding");
  const std::vector<int64_t> dilation = call.Ints("dilation");
  const auto rank = static_cast<size_t>(kRank);
  KILN_CHECK(kernel.size() == rank && strides.size() == rank && padding.size() == 2 * rank &&
                 dilation.size() == rank,
             ValueError)
      << call.Prefix() << "the window, strides, padding and dilation need " << rank << ", " << rank
      << ", " << 2 * rank << " and " << rank << " values";
  Window<kRank> window{};
  for (size_t i = 0; i < rank; ++i) {
    window.kernel[i] = kernel[i];
    window.stride[i] = strides[i];
    window.pad_begin[i] = padding[i];
    window.pad_end[i] = padding[rank + i];
    window.dilation[i] = dilation[i];
  }
  return window;
}
template Window2D ReadWindow<2>(const KernelCall& call, const std::vector<int64_t>& kernel);
template Window3D ReadWindow<3>(const KernelCall& call, const std::vector<int64_t>& kernel);

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
