// Normalizations ONNX defines that Kiln composes from reductions and elementwise ops:
// InstanceNormalization, MeanVarianceNormalization and LRN.
#include <kiln/ffi/error.h>

#include <string>

#include "converter.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

ir::Expr MeanOver(const ir::Expr& x, const std::vector<int64_t>& axes) {
  return MakeCall("mean", {x}, {{"axis", ToArray(axes)}, {"keepdims", true}});
}

ir::Expr Square(const ir::Expr& x) { return MakeCall("multiply", {x, x}); }

// Per sample and channel, over the spatial dims: (x - mean) / sqrt(var + epsilon) * scale + B.
ir::Expr ConvertInstanceNorm(const NodeContext& node) {
  const size_t rank = node.InputRank(0);
  KILN_CHECK(rank >= 3, ValueError) << node.Describe() << ": the input must be >= 3-D";
  std::vector<int64_t> spatial;
  for (size_t d = 2; d < rank; ++d) spatial.push_back(static_cast<int64_t>(d));
  const ir::Expr& x = node.Input(0);
  const DLDataType dtype = node.InputDType(0);
  ir::Expr centered = MakeCall("subtract", {x, MeanOver(x, spatial)});
  ir::Expr variance = MeanOver(Square(centered), spatial);
  ir::Expr std = MakeCall(
      "sqrt", {MakeCall("add", {variance, MakeScalar(node.Float("epsilon", 1e-5), dtype)})});
  ir::Expr normalized = MakeCall("divide", {centered, std});
  ir::Expr scaled = MakeCall("multiply", {normalized, PerChannel(node.Input(1), rank)});
  return MakeCall("add", {scaled, PerChannel(node.Input(2), rank)});
}

// ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes`.
ir::Expr ConvertMeanVarianceNorm(const NodeContext& node) {
  const std::vector<int64_t> axes = node.Ints("axes").value_or(std::vector<int64_t>{0, 2, 3});
  const ir::Expr& x = node.Input(0);
  ir::Expr mean = MeanOver(x, axes);
  ir::Expr variance = MakeCall("subtract", {MeanOver(Square(x), axes), Square(mean)});
  ir::Expr std =
      MakeCall("add", {MakeCall("sqrt", {variance}), MakeScalar(1e-9, node.InputDType(0))});
  return MakeCall("divide", {MakeCall("subtract", {x, mean}), std});
}

// x / (bias + alpha / size * sum of x^2 over a window of `size` channels)^beta. The channel
// window sum is an average pool over (channels, 1) of a (N, 1, C, H*W) view, padding counted,
// times size. The view copies N (0) and infers H*W (-1), so only the channels must be static.
ir::Expr ConvertLRN(const NodeContext& node) {
  KILN_CHECK(node.InputRank(0) == 4, NotImplementedError)
      << node.Describe() << ": only 4-D inputs are supported";
  const int64_t size = node.Int("size", 0);
  KILN_CHECK(size > 0, ValueError) << node.Describe() << ": size must be positive";
  const DLDataType dtype = node.InputDType(0);
  const ir::Expr& x = node.Input(0);
  ir::Expr view = MakeCall("reshape", {Square(x)},
                           {{"newshape", Array<int64_t>{0, 1, node.InputExtent(0, 1), -1}}});
  const int64_t before = (size - 1) / 2;
  const int64_t after = size - 1 - before;
  ir::Expr average = MakeCall("nn.avg_pool2d", {view},
                              {{"pool_size", Array<int64_t>{size, 1}},
                               {"padding", Array<int64_t>{before, 0, after, 0}},
                               {"count_include_pad", true}});
  ir::Expr window_sum = MakeCall("reshape", {average}, {{"newshape", InputNewShape(node)}});
  const double alpha = node.Float("alpha", 1e-4);
  ir::Expr base = MakeCall("add", {MakeScalar(node.Float("bias", 1.0), dtype),
                                   MakeCall("multiply", {window_sum, MakeScalar(alpha, dtype)})});
  return MakeCall("divide",
                  {x, MakeCall("power", {base, MakeScalar(node.Float("beta", 0.75), dtype)})});
}

}  // namespace

void AddNormalizationConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "InstanceNormalization", 6, kMaxOpset, ConvertInstanceNorm);
  AddConverter(table, "MeanVarianceNormalization", 9, kMaxOpset, ConvertMeanVarianceNorm);
  AddConverter(table, "LRN", 1, kMaxOpset, ConvertLRN);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
