// nn.conv2d and nn.conv2d_transpose in NCHW, float32. Both go through the shared GEMM: conv2d
// gathers each image group into an im2col matrix and multiplies the weights by it;
// conv2d_transpose multiplies the transposed weights by the input and scatters (col2im) the
// products into the output. Depthwise conv2d (one input channel per group) has no reduction
// worth a GEMM and runs directly.
#include <algorithm>

#include "gemm.h"
#include "kernel_util.h"
#include "window.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// The im2col matrix of one group: row (c, kh, kw), column (y, x) of a col_h x col_w grid
/// pairs with image position (y * stride - pad + kh * dilation, ...). Gathering fills `col`
/// from the image (zeros outside it); scattering adds `col` into the image, col2im, which is
/// the same walk in the other direction.
template <bool kScatter, typename Image>
void WalkColumns(float* col, Image* image, int64_t channels, int64_t image_h, int64_t image_w,
                 int64_t col_h, int64_t col_w, const Window2D& window) {
  const int64_t col_size = col_h * col_w;
  for (int64_t c = 0; c < channels; ++c) {
    Image* plane = image + c * image_h * image_w;
    for (int64_t kh = 0; kh < window.kernel[0]; ++kh) {
      for (int64_t kw = 0; kw < window.kernel[1]; ++kw) {
        float* col_row = col + ((c * window.kernel[0] + kh) * window.kernel[1] + kw) * col_size;
        const int64_t offset_h = window.InputPos(0, 0, kh);
        const int64_t offset_w = window.InputPos(1, 0, kw);
        const Range rows = ValidOutputs(col_h, window.stride[0], offset_h, image_h);
        const Range cols = ValidOutputs(col_w, window.stride[1], offset_w, image_w);
        if constexpr (!kScatter) std::fill_n(col_row, col_size, 0.F);
        for (int64_t y = rows.begin; y < rows.end; ++y) {
          float* col_line = col_row + y * col_w;
          Image* line = plane + (y * window.stride[0] + offset_h) * image_w + offset_w;
          for (int64_t x = cols.begin; x < cols.end; ++x) {
            if constexpr (kScatter) {
              line[x * window.stride[1]] += col_line[x];
            } else {
              col_line[x] = line[x * window.stride[1]];
            }
          }
        }
      }
    }
  }
}

/// Shapes of a convolution call: data (N, C, H, W), weight (W0, W1, KH, KW), output
/// (N, O, OH, OW).
struct ConvShapes {
  int64_t n, c, h, w, o, oh, ow, groups;
  Window2D window;

  ConvShapes(const KernelCall& call, const Tensor& data, const Tensor& weight, const Tensor& out)
      : n(data.shape(0)),
        c(data.shape(1)),
        h(data.shape(2)),
        w(data.shape(3)),
        o(out.shape(1)),
        oh(out.shape(2)),
        ow(out.shape(3)),
        groups(call.Int("groups")),
        window(ReadWindow(call, weight.shape(2), weight.shape(3))) {}
};

/// One input channel per group: each output plane is a weighted sum of shifted input rows.
void DepthwiseConv2D(const ConvShapes& s, const float* x, const float* weight, float* y) {
  const Window2D& win = s.window;
  const int64_t multiplier = s.o / s.c;
  runtime::ParallelFor(0, s.n * s.o, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const float* plane = x + (p / s.o * s.c + p % s.o / multiplier) * s.h * s.w;
      const float* taps = weight + p % s.o * win.kernel[0] * win.kernel[1];
      float* out = y + p * s.oh * s.ow;
      std::fill_n(out, s.oh * s.ow, 0.F);
      for (int64_t kh = 0; kh < win.kernel[0]; ++kh) {
        for (int64_t kw = 0; kw < win.kernel[1]; ++kw) {
          const float tap = taps[kh * win.kernel[1] + kw];
          const int64_t offset_h = win.InputPos(0, 0, kh);
          const int64_t offset_w = win.InputPos(1, 0, kw);
          const Range rows = ValidOutputs(s.oh, win.stride[0], offset_h, s.h);
          const Range cols = ValidOutputs(s.ow, win.stride[1], offset_w, s.w);
          for (int64_t oy = rows.begin; oy < rows.end; ++oy) {
            const float* __restrict__ in_line =
                plane + (oy * win.stride[0] + offset_h) * s.w + offset_w;
            float* __restrict__ out_line = out + oy * s.ow;
            for (int64_t ox = cols.begin; ox < cols.end; ++ox) {
              out_line[ox] += tap * in_line[ox * win.stride[1]];
            }
          }
        }
      }
    }
  });
}

void Conv2D(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const Tensor data = call.input(0);
  const Tensor weight = call.input(1);
  const Tensor out = call.output(0);
  const ConvShapes s(call, data, weight, out);
  const float* x = Data<const float>(data);
  const float* w = Data<const float>(weight);
  float* y = Data<float>(out);
  const int64_t group_in = s.c / s.groups;
  if (s.groups > 1 && group_in == 1) {
    DepthwiseConv2D(s, x, w, y);
    return;
  }
  const Window2D& win = s.window;
  // A 1x1 window with unit strides and no padding reads the image as its own im2col matrix.
  const bool pointwise = win.kernel[0] == 1 && win.kernel[1] == 1 && win.stride[0] == 1 &&
                         win.stride[1] == 1 && win.pad_begin[0] == 0 && win.pad_begin[1] == 0 &&
                         win.pad_end[0] == 0 && win.pad_end[1] == 0;
  const int64_t group_out = s.o / s.groups;
  const int64_t depth = group_in * win.kernel[0] * win.kernel[1];
  const int64_t spatial = s.oh * s.ow;
  ForEachMatrix(s.n * s.groups, [&](int64_t i) {
    const int64_t image = i / s.groups;
    const int64_t group = i % s.groups;
    const float* group_data = x + (image * s.c + group * group_in) * s.h * s.w;
    std::vector<float> col;
    if (!pointwise) {
      col.resize(depth * spatial);
      WalkColumns<false>(col.data(), group_data, group_in, s.h, s.w, s.oh, s.ow, win);
    }
    Gemm(group_out, spatial, depth, {w + group * group_out * depth, depth, 1},
         {pointwise ? group_data : col.data(), spatial, 1},
         y + (image * s.o + group * group_out) * spatial, spatial);
  });
}
KILN_CPU_KERNEL("nn.conv2d", Conv2D);

/// weight (C, O/groups, KH, KW): per image and group, col = weight_g^T x data_g, then col2im.
void Conv2DTranspose(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const Tensor data = call.input(0);
  const Tensor weight = call.input(1);
  const Tensor out = call.output(0);
  const ConvShapes s(call, data, weight, out);
  const float* x = Data<const float>(data);
  const float* w = Data<const float>(weight);
  float* y = Data<float>(out);
  const Window2D& win = s.window;
  const int64_t group_in = s.c / s.groups;
  const int64_t group_out = s.o / s.groups;
  const int64_t rows = group_out * win.kernel[0] * win.kernel[1];
  const int64_t spatial = s.h * s.w;
  ForEachMatrix(s.n * s.groups, [&](int64_t i) {
    const int64_t image = i / s.groups;
    const int64_t group = i % s.groups;
    std::vector<float> col(rows * spatial);
    Gemm(rows, spatial, group_in, {w + group * group_in * rows, 1, rows},
         {x + (image * s.c + group * group_in) * spatial, spatial, 1}, col.data(), spatial);
    float* group_out_data = y + (image * s.o + group * group_out) * s.oh * s.ow;
    std::fill_n(group_out_data, group_out * s.oh * s.ow, 0.F);
    WalkColumns<true>(col.data(), group_out_data, group_out, s.oh, s.ow, s.h, s.w, win);
  });
}
KILN_CPU_KERNEL("nn.conv2d_transpose", Conv2DTranspose);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
