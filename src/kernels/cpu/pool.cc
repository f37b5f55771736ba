// nn.max_pool2d, nn.avg_pool2d and their global forms, NCHW float32, one (n, c) plane per
// task. Windows clip to the input; the output extents (ceil_mode included) come from the
// allocated output, which the type relation sized.
#include <algorithm>
#include <limits>

#include "kernel_util.h"
#include "window.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// Runs `body(in_plane, out_plane)` for every (n, c) plane of the float32 input and output.
template <typename Body>
void ForEachPlane(const KernelCall& call, const Body& body) {
  RequireFloat32Inputs(call);
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const int64_t planes = in.shape(0) * in.shape(1);
  const int64_t in_size = in.shape(2) * in.shape(3);
  const int64_t out_size = out.shape(2) * out.shape(3);
  const float* x = Data<const float>(in);
  float* y = Data<float>(out);
  const int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, in_size));
  runtime::ParallelFor(0, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) body(x + p * in_size, y + p * out_size);
  });
}

template <bool kMax>
void Pool2D(const KernelCall& call) {
  const std::vector<int64_t> pool_size = call.Ints("pool_size");
  KILN_CHECK(pool_size.size() == 2, ValueError) << call.Prefix() << "pool_size needs 2 values";
  const Window2D win = ReadWindow(call, pool_size[0], pool_size[1]);
  const bool include_pad = !kMax && call.Bool("count_include_pad");
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const int64_t h = in.shape(2);
  const int64_t w = in.shape(3);
  const int64_t oh = out.shape(2);
  const int64_t ow = out.shape(3);
  ForEachPlane(call, [&](const float* x, float* y) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        float acc = kMax ? -std::numeric_limits<float>::infinity() : 0.F;
        int64_t count = 0;
        for (int64_t kh = 0; kh < win.kernel[0]; ++kh) {
          const int64_t iy = win.InputPos(0, oy, kh);
          for (int64_t kw = 0; kw < win.kernel[1]; ++kw) {
            const int64_t ix = win.InputPos(1, ox, kw);
            const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
            // count_include_pad counts padding, but not window parts past it (ceil_mode).
            const bool in_padded = iy < h + win.pad_end[0] && ix < w + win.pad_end[1];
            count += (include_pad ? in_padded : inside) ? 1 : 0;
            if (!inside) continue;
            acc = kMax ? std::max(acc, x[iy * w + ix]) : acc + x[iy * w + ix];
          }
        }
        y[oy * ow + ox] = kMax ? acc : acc / static_cast<float>(std::max<int64_t>(count, 1));
      }
    }
  });
}
KILN_CPU_KERNEL("nn.max_pool2d", Pool2D<true>);
KILN_CPU_KERNEL("nn.avg_pool2d", Pool2D<false>);

template <bool kMax>
void GlobalPool2D(const KernelCall& call) {
  const Tensor in = call.input(0);
  const int64_t size = in.shape(2) * in.shape(3);
  ForEachPlane(call, [&](const float* x, float* y) {
    if (kMax) {
      *y = size == 0 ? -std::numeric_limits<float>::infinity() : *std::max_element(x, x + size);
      return;
    }
    double sum = 0;
    for (int64_t i = 0; i < size; ++i) sum += x[i];
    *y = static_cast<float>(sum / static_cast<double>(std::max<int64_t>(size, 1)));
  });
}
KILN_CPU_KERNEL("nn.global_max_pool2d", GlobalPool2D<true>);
KILN_CPU_KERNEL("nn.global_avg_pool2d", GlobalPool2D<false>);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
