// image.resize2d (ONNX Resize on the H and W axes of NCHW float32). Interpolation is
// separable: each output row and column gets up to four (input index, weight) taps, computed
// once per axis, and every output value is the weighted sum over the taps of both axes.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

struct ResizeMode {
  std::string method;
  std::string transform;
  std::string rounding;
  double cubic_alpha;
  bool cubic_exclude;
};

/// The input coordinate output position `x` maps to (ONNX coordinate_transformation_mode):
/// output coordinates are divided by the model's `scale` when it gave one (0 when not: the ratio
/// of the sizes). The size is computed from the scale, so half_pixel_symmetric coincides with
/// half_pixel.
double SourceCoordinate(const ResizeMode& mode, int64_t x, int64_t in, int64_t out,
                        double given_scale) {
  const double scale =
      given_scale > 0 ? given_scale : static_cast<double>(out) / static_cast<double>(in);
  const auto xd = static_cast<double>(x);
  if (mode.transform == "align_corners") {
    // ONNX's resized length here is in * scale, unfloored, when the model gave the scale.
    const double resized =
        given_scale > 0 ? static_cast<double>(in) * given_scale : static_cast<double>(out);
    return resized == 1.0 ? 0.0 : xd * static_cast<double>(in - 1) / (resized - 1.0);
  }
  if (mode.transform == "asymmetric") return xd / scale;
  if (mode.transform == "tf_half_pixel_for_nn") return (xd + 0.5) / scale;
  if (mode.transform == "pytorch_half_pixel" && out == 1) return 0.0;
  return (xd + 0.5) / scale - 0.5;
}

int64_t RoundNearest(const std::string& rounding, double x) {
  if (rounding == "floor") return static_cast<int64_t>(std::floor(x));
  if (rounding == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (rounding == "round_prefer_ceil") return static_cast<int64_t>(std::floor(x + 0.5));
  return static_cast<int64_t>(std::ceil(x - 0.5));  // round_prefer_floor
}

/// Keys' cubic convolution weights of the four taps around a point `r` past its floor.
void CubicWeights(double r, double a, double* w) {
  const double s = 1.0 + r;
  const double t = 1.0 - r;
  const double u = 2.0 - r;
  w[0] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
  w[2] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[3] = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
}

/// Interpolation taps of one output position along one axis.
struct Taps {
  int64_t count = 0;
  int64_t index[4] = {};
  float weight[4] = {};
};

Taps AxisTaps(const ResizeMode& mode, int64_t x, int64_t in, int64_t out, double scale) {
  const double src = SourceCoordinate(mode, x, in, out, scale);
  const auto clamp = [in](int64_t i) { return std::min(std::max<int64_t>(i, 0), in - 1); };
  Taps taps;
  if (mode.method == "nearest") {
    taps.count = 1;
    taps.index[0] = clamp(RoundNearest(mode.rounding, src));
    taps.weight[0] = 1.F;
    return taps;
  }
  const double base = std::floor(src);
  const double r = src - base;
  const auto first = static_cast<int64_t>(base);
  double weights[4] = {1.0 - r, r, 0.0, 0.0};
  int64_t start = first;
  taps.count = 2;
  if (mode.method == "cubic") {
    CubicWeights(r, mode.cubic_alpha, weights);
    start = first - 1;
    taps.count = 4;
  }
  double total = 0.0;
  for (int64_t t = 0; t < taps.count; ++t) {
    const int64_t i = start + t;
    if (mode.cubic_exclude && (i < 0 || i >= in)) weights[t] = 0.0;
    total += weights[t];
  }
  for (int64_t t = 0; t < taps.count; ++t) {
    taps.index[t] = clamp(start + t);
    // exclude_outside renormalizes the remaining weights to sum to 1.
    taps.weight[t] = static_cast<float>(mode.cubic_exclude ? weights[t] / total : weights[t]);
  }
  return taps;
}

std::vector<Taps> AxisTapsAll(const ResizeMode& mode, int64_t in, int64_t out, double scale) {
  std::vector<Taps> all;
  for (int64_t x = 0; x < out; ++x) all.push_back(AxisTaps(mode, x, in, out, scale));
  return all;
}

/// out[ox] = the taps cols[ox] of input row `line`, ox < cols.size().
void ResizeRow(const float* __restrict__ line, const std::vector<Taps>& cols,
               float* __restrict__ out) {
  for (size_t ox = 0; ox < cols.size(); ++ox) {
    const Taps& tx = cols[ox];
    float sum = tx.weight[0] * line[tx.index[0]];
    for (int64_t j = 1; j < tx.count; ++j) sum += tx.weight[j] * line[tx.index[j]];
    out[ox] = sum;
  }
}

/// out (width floats) = the taps `ty` of the rows of `resized` (width floats apart).
KILN_CPU_CLONES void BlendRows(const float* __restrict__ resized, const Taps& ty, int64_t width,
                               float* __restrict__ out) {
  const float* first = resized + ty.index[0] * width;
  if (ty.count == 1 && ty.weight[0] == 1.F) {
    std::copy_n(first, width, out);
    return;
  }
  for (int64_t ox = 0; ox < width; ++ox) out[ox] = ty.weight[0] * first[ox];
  for (int64_t i = 1; i < ty.count; ++i) {
    const float* row = resized + ty.index[i] * width;
    const float weight = ty.weight[i];
    for (int64_t ox = 0; ox < width; ++ox) out[ox] += weight * row[ox];
  }
}

/// Resizes input 0 into output 0 dividing output coordinates by `scales` ([H, W]; 0 where the
/// ratio of the extents is meant).
void ResizeWithScales(const KernelCall& call, const std::vector<double>& scales) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const ResizeMode mode{call.Str("method"), call.Str("coordinate_transformation_mode"),
                        call.Str("rounding_method"), call.Float("cubic_alpha"),
                        call.Bool("cubic_exclude")};
  const int64_t h = in.shape(2);
  const int64_t w = in.shape(3);
  const int64_t oh = out.shape(2);
  const int64_t ow = out.shape(3);
  const std::vector<Taps> rows = AxisTapsAll(mode, h, oh, scales.at(0));
  const std::vector<Taps> cols = AxisTapsAll(mode, w, ow, scales.at(1));
  const float* x = Data<const float>(in);
  float* y = Data<float>(out);
  // Separably: each input row some output row reads, resized along the width once; then each
  // output row a weighted sum of whole resized rows, a pass that vectorizes (and a copy for
  // nearest).
  std::vector<bool> read(static_cast<size_t>(h), false);
  for (const Taps& ty : rows) {
    for (int64_t i = 0; i < ty.count; ++i) read[ty.index[i]] = true;
  }
  runtime::ParallelFor(0, in.shape(0) * in.shape(1), 1, [&](int64_t begin, int64_t end) {
    std::vector<float> resized_rows(static_cast<size_t>(h * ow));
    for (int64_t p = begin; p < end; ++p) {
      const float* plane = x + p * h * w;
      for (int64_t iy = 0; iy < h; ++iy) {
        if (read[iy]) ResizeRow(plane + iy * w, cols, resized_rows.data() + iy * ow);
      }
      float* out_plane = y + p * oh * ow;
      for (int64_t oy = 0; oy < oh; ++oy) {
        BlendRows(resized_rows.data(), rows[oy], ow, out_plane + oy * ow);
      }
    }
  });
}

void Resize2D(const KernelCall& call) {
  RequireFloat32Inputs(call);
  ResizeWithScales(call, call.OptionalFloats("scales").value_or(std::vector<double>{0.0, 0.0}));
}
KILN_CPU_KERNEL("image.resize2d", Resize2D);

void ScaledResize2D(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const float* scales = Data<const float>(call.input(1));
  ResizeWithScales(call, {scales[2], scales[3]});
}
KILN_CPU_KERNEL("image.resize2d_scaled", ScaledResize2D);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
