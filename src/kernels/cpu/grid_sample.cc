// image.grid_sample (ONNX GridSample, float32 NCHW): per output pixel, the grid position is
// mapped to input coordinates, padded (border clamps, reflection mirrors at the edges the
// align_corners setting defines), and interpolated; taps outside the input read 0. Bicubic
// pads each of its 16 taps rather than the position, as PyTorch's grid_sample (which ONNX's
// test data follow) does.
#include <cmath>
#include <string>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

struct Sampler {
  std::string method;
  std::string padding;
  bool align_corners;

  /// The input coordinate of normalized position `n` along an axis of `extent` pixels.
  double Unnormalize(double n, int64_t extent) const {
    const auto size = static_cast<double>(extent);
    return align_corners ? (n + 1) / 2 * (size - 1) : ((n + 1) * size - 1) / 2;
  }

  /// `x` mirrored into [low, high] (given doubled, to stay integral) until it lies inside.
  static double Reflect(double x, double twice_low, double twice_high) {
    if (twice_low == twice_high) return 0;
    const double low = twice_low / 2;
    const double span = (twice_high - twice_low) / 2;
    const double distance = std::fabs(x - low);
    const double extra = std::fmod(distance, span);
    const bool even = std::fmod(std::floor(distance / span), 2.0) == 0.0;
    return even ? extra + low : span - extra + low;
  }

  /// `x` with the padding mode applied: border and reflection bring it inside [0, extent - 1].
  double Pad(double x, int64_t extent) const {
    const auto last = static_cast<double>(extent - 1);
    if (padding == "border") return std::min(last, std::max(x, 0.0));
    if (padding == "reflection") {
      const auto size = static_cast<double>(extent);
      x = align_corners ? Reflect(x, 0, 2 * last) : Reflect(x, -1, 2 * size - 1);
      return std::min(last, std::max(x, 0.0));
    }
    return x;
  }
};

/// The value at integer (x, y) of one (H, W) plane, 0 outside.
float At(const float* plane, int64_t h, int64_t w, int64_t x, int64_t y) {
  return x >= 0 && x < w && y >= 0 && y < h ? plane[y * w + x] : 0.F;
}

/// `v` (already rounded) as an index; -1, which reads 0, for a NaN or a value far outside any
/// tensor (grids are data: converting those to an integer would be undefined behaviour).
int64_t ToIndex(double v) {
  constexpr double kFar = 1e15;
  return std::isfinite(v) && std::fabs(v) < kFar ? static_cast<int64_t>(v) : -1;
}

/// Keys' cubic convolution weights (A = -0.75) of the four taps around a point `t` past the
/// second one.
void CubicWeights(double t, double* weights) {
  constexpr double kA = -0.75;
  auto near = [](double x) { return ((kA + 2) * x - (kA + 3)) * x * x + 1; };
  auto far = [](double x) { return ((kA * x - 5 * kA) * x + 8 * kA) * x - 4 * kA; };
  weights[0] = far(t + 1);
  weights[1] = near(t);
  weights[2] = near(1 - t);
  weights[3] = far(2 - t);
}

float Sample(const Sampler& s, const float* plane, int64_t h, int64_t w, double gx, double gy) {
  if (s.method == "bicubic") {
    const double x = s.Unnormalize(gx, w);
    const double y = s.Unnormalize(gy, h);
    const double x0 = std::floor(x);
    const double y0 = std::floor(y);
    double wx[4];
    double wy[4];
    CubicWeights(x - x0, wx);
    CubicWeights(y - y0, wy);
    double sum = 0;
    for (int i = 0; i < 4; ++i) {
      const int64_t ty = ToIndex(s.Pad(y0 - 1 + i, h));
      for (int j = 0; j < 4; ++j) {
        const int64_t tx = ToIndex(s.Pad(x0 - 1 + j, w));
        sum += wy[i] * wx[j] * At(plane, h, w, tx, ty);
      }
    }
    return static_cast<float>(sum);
  }
  const double x = s.Pad(s.Unnormalize(gx, w), w);
  const double y = s.Pad(s.Unnormalize(gy, h), h);
  if (s.method == "nearest") {
    return At(plane, h, w, ToIndex(std::nearbyint(x)), ToIndex(std::nearbyint(y)));
  }
  const double x0 = std::floor(x);
  const double y0 = std::floor(y);
  const double rx = x - x0;
  const double ry = y - y0;
  const int64_t ix = ToIndex(x0);
  const int64_t iy = ToIndex(y0);
  return static_cast<float>(
      (1 - ry) * ((1 - rx) * At(plane, h, w, ix, iy) + rx * At(plane, h, w, ix + 1, iy)) +
      ry * ((1 - rx) * At(plane, h, w, ix, iy + 1) + rx * At(plane, h, w, ix + 1, iy + 1)));
}

void GridSample(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const Tensor in = call.input(0);
  const Tensor grid = call.input(1);
  const Tensor out = call.output(0);
  const Sampler sampler{call.Str("method"), call.Str("padding_mode"), call.Bool("align_corners")};
  const int64_t channels = in.shape(1);
  const int64_t h = in.shape(2);
  const int64_t w = in.shape(3);
  const int64_t pixels = out.shape(2) * out.shape(3);
  const float* x = Data<const float>(in);
  const float* g = Data<const float>(grid);
  float* y = Data<float>(out);
  runtime::ParallelFor(0, in.shape(0) * channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t n = plane / channels;
      const float* position = g + n * pixels * 2;
      for (int64_t p = 0; p < pixels; ++p) {
        y[plane * pixels + p] =
            Sample(sampler, x + plane * h * w, h, w, position[2 * p], position[2 * p + 1]);
      }
    }
  });
}
KILN_CPU_KERNEL("image.grid_sample", GridSample);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
