#include "phase_planes.h"

#include <algorithm>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// Floats from one plane to the next: at least `floats`, and an odd number of cache lines, so
/// that the planes' rows, which are read in place, start on every cache set (planes a multiple
/// of 4 KB apart would all fall on one and evict each other).
int64_t SpreadPlaneStride(int64_t floats) {
  constexpr int64_t kLineFloats = 16;
  const int64_t lines = CeilDiv(floats, kLineFloats);
  return (lines % 2 == 0 ? lines + 1 : lines) * kLineFloats;
}

/// out[j] = in[j * stride] for j in [begin, end). Stride 2, the common one, is spelled out so
/// that it vectorizes (loads of twice the width and a shuffle of their even lanes); an AVX-512
/// clone beside the baseline one (design §36: a stride-2 stem took 0.87 of its time).
KILN_CPU_CLONES void GatherStrided(const float* __restrict__ in, int64_t stride,
                                   float* __restrict__ out, int64_t begin, int64_t end) {
  if (stride == 2) {
    for (int64_t j = begin; j < end; ++j) out[j] = in[2 * j];
    return;
  }
  for (int64_t j = begin; j < end; ++j) out[j] = in[j * stride];
}

}  // namespace

PhasePlanes::PhasePlanes(const Window2D& win, int64_t oh, int64_t ow, int64_t channels)
    : win_(win),
      channels_(channels),
      height_(CeilDiv(PaddedExtent(win, 0, oh), win.stride[0])),
      width_(CeilDiv(PaddedExtent(win, 1, ow), win.stride[1])),
      plane_stride_(SpreadPlaneStride(height_ * width_)),
      floats_(channels * win.stride[0] * win.stride[1] * plane_stride_ +
              (win.kernel[1] - 1) * win.dilation[1] / win.stride[1]) {}

int64_t PhasePlanes::Offset(int64_t c, int64_t ky, int64_t kx) const {
  const int64_t y = ky * win_.dilation[0];  // padded position of output (0, 0)'s tap
  const int64_t x = kx * win_.dilation[1];
  const int64_t sy = win_.stride[0];
  const int64_t sx = win_.stride[1];
  return ((c * sy + y % sy) * sx + x % sx) * plane_stride_ + y / sy * width_ + x / sx;
}

std::vector<int64_t> PhasePlanes::RowOffsets() const {
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(channels_ * win_.kernel[0] * win_.kernel[1]));
  for (int64_t c = 0; c < channels_; ++c) {
    for (int64_t ky = 0; ky < win_.kernel[0]; ++ky) {
      for (int64_t kx = 0; kx < win_.kernel[1]; ++kx) offsets.push_back(Offset(c, ky, kx));
    }
  }
  return offsets;
}

void PhasePlanes::Fill(const float* image, int64_t h, int64_t w, float* to) const {
  const int64_t sy = win_.stride[0];
  const int64_t sx = win_.stride[1];
  for (int64_t c = 0; c < channels_; ++c) {
    for (int64_t ry = 0; ry < sy; ++ry) {
      const Range rows = ValidOutputs(height_, sy, ry - win_.pad_begin[0], h);
      for (int64_t rx = 0; rx < sx; ++rx) {
        const Range cols = ValidOutputs(width_, sx, rx - win_.pad_begin[1], w);
        float* plane = to + ((c * sy + ry) * sx + rx) * plane_stride_;
        for (int64_t i = rows.begin; i < rows.end; ++i) {
          const float* in =
              image + (c * h + i * sy + ry - win_.pad_begin[0]) * w + rx - win_.pad_begin[1];
          float* out = plane + i * width_;
          if (sx == 1) {
            std::copy(in + cols.begin, in + cols.end, out + cols.begin);
          } else {
            GatherStrided(in, sx, out, cols.begin, cols.end);
          }
        }
      }
    }
  }
}

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
