// nn.batch_norm (inference: running statistics) and nn.layer_norm, float32.
#include <cmath>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// y = (x - mean[c]) / sqrt(var[c] + epsilon) * gamma[c] + beta[c], c the index along "axis";
/// folded into one scale and shift per channel.
void BatchNorm(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const Tensor in = call.input(0);
  const AxisSplit split = SplitAtAxis(ShapeOf(in), call.NormalizeAxis(call.Int("axis"), in.ndim()));
  const double epsilon = call.Float("epsilon");
  const float* gamma = Data<const float>(call.input(1));
  const float* beta = Data<const float>(call.input(2));
  const float* mean = Data<const float>(call.input(3));
  const float* var = Data<const float>(call.input(4));
  std::vector<float> scale(split.extent);
  std::vector<float> shift(split.extent);
  for (int64_t c = 0; c < split.extent; ++c) {
    const double s = gamma[c] / std::sqrt(static_cast<double>(var[c]) + epsilon);
    scale[c] = static_cast<float>(s);
    shift[c] = static_cast<float>(beta[c] - mean[c] * s);
  }
  const float* x = Data<const float>(in);
  float* y = Data<float>(call.output(0));
  const int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, split.inner));
  runtime::ParallelFor(0, split.outer * split.extent, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float a = scale[row % split.extent];
      const float b = shift[row % split.extent];
      const float* __restrict__ in_row = x + row * split.inner;
      float* __restrict__ out_row = y + row * split.inner;
      for (int64_t i = 0; i < split.inner; ++i) out_row[i] = in_row[i] * a + b;
    }
  });
}
KILN_CPU_KERNEL("nn.batch_norm", BatchNorm);

/// One row of nn.layer_norm: mean and (biased) variance in double, then scale and shift.
KILN_CPU_CLONES void LayerNormRow(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                  const float* __restrict__ gamma, const float* __restrict__ beta,
                                  double epsilon) {
  const double mean = LaneSum(x, n, [](double v) { return v; }) / static_cast<double>(n);
  const double squares = LaneSum(x, n, [mean](double v) { return (v - mean) * (v - mean); });
  const auto inv_std =
      static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(n) + epsilon));
  const auto mean_f = static_cast<float>(mean);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean_f) * inv_std * gamma[i] + beta[i];
}

/// ONNX LayerNormalization: each row of the dims from "axis" on is normalized by its own mean
/// and (biased) variance, then scaled by gamma and shifted by beta (both of the row's shape).
void LayerNorm(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const Tensor in = call.input(0);
  const std::vector<int64_t> shape = ShapeOf(in);
  const int64_t axis = call.NormalizeAxis(call.Int("axis"), in.ndim());
  int64_t rows = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= shape[d];
  const int64_t size = rows == 0 ? 0 : in.NumElements() / rows;
  const double epsilon = call.Float("epsilon");
  const float* gamma = Data<const float>(call.input(1));
  const float* beta = Data<const float>(call.input(2));
  const float* x = Data<const float>(in);
  float* y = Data<float>(call.output(0));
  const int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, size));
  runtime::ParallelFor(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      LayerNormRow(x + row * size, y + row * size, size, gamma, beta, epsilon);
    }
  });
}
KILN_CPU_KERNEL("nn.layer_norm", LayerNorm);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
