// Neural-network ONNX ops: convolutions, Gemm/MatMul, pooling, normalization, softmax.
#include <kiln/ffi/error.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "converter.h"
#include "tensor_proto.h"
#include "window.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// ConvTranspose has 2-D windows only (nn.conv2d_transpose); Conv and pooling also take 3-D.
constexpr size_t kSpatialRank = 2;
constexpr size_t kMaxSpatialRank = 3;

/// "nn.conv2d" or "nn.conv3d" for `spatial_rank` 2 or 3.
std::string RankedOp(const char* prefix, size_t spatial_rank) {
  return std::string(prefix) + std::to_string(spatial_rank) + "d";
}

Map<String, Any> WindowAttrs(const Window& window) {
  return {{"strides", ToArray(window.strides)},
          {"padding", ToArray(window.pads)},
          {"dilation", ToArray(window.dilations)}};
}

/// `out` plus the per-channel bias of input 2, if given, broadcast over (N, C, spatial...).
ir::Expr AddChannelBias(const NodeContext& node, ir::Expr out, size_t spatial_rank) {
  if (!node.HasInput(2)) return out;
  return MakeCall("add", {std::move(out), PerChannel(node.Input(2), spatial_rank + 2)});
}

/// The kernel extents of the weight (its dimensions after the output and input channels).
std::vector<int64_t> KernelOfWeight(const NodeContext& node, size_t spatial_rank) {
  const size_t rank = node.InputRank(1);
  KILN_CHECK(rank == spatial_rank + 2, ValueError)
      << node.Describe() << ": the weight must be " << spatial_rank + 2 << "-D, it has rank "
      << rank;
  return node.InputShape(1, 2, rank);
}

ir::Expr ConvertConv(const NodeContext& node) {
  // The input's rank first: it decides the weight's.
  const size_t spatial_rank = SpatialRank(node, kMaxSpatialRank);
  const Window window = ForwardWindow(node, spatial_rank, KernelOfWeight(node, spatial_rank));
  Map<String, Any> attrs = WindowAttrs(window);
  attrs.Set("groups", node.Int("group", 1));
  return AddChannelBias(
      node, MakeCall(RankedOp("nn.conv", spatial_rank), {node.Input(0), node.Input(1)}, attrs),
      spatial_rank);
}

/// ConvTranspose's output extents when the node asks for them (output_shape, or SAME auto_pad
/// which asks for input * stride); nullopt when its pads are explicit.
std::optional<std::vector<int64_t>> TransposeTarget(const NodeContext& node, const Window& window) {
  if (std::optional<std::vector<int64_t>> shape = node.Ints("output_shape")) {
    KILN_CHECK(shape->size() >= kSpatialRank, ValueError)
        << node.Describe() << ": output_shape needs " << kSpatialRank << " extents";
    return std::vector<int64_t>(shape->end() - kSpatialRank, shape->end());
  }
  if (node.Str("auto_pad", "NOTSET").rfind("SAME", 0) != 0) return std::nullopt;
  const std::vector<int64_t> spatial = SpatialShape(node);
  return std::vector<int64_t>{spatial[0] * window.strides[0], spatial[1] * window.strides[1]};
}

/// Sets the pads (and output_padding) that give ConvTranspose its output extents `target`:
/// the spec's total padding, split as auto_pad says; a negative total (the target is larger
/// than the unpadded result) becomes extra output_padding, as onnxruntime does.
void PadToTarget(const NodeContext& node, const std::vector<int64_t>& target, Window& window,
                 std::vector<int64_t>& output_padding) {
  const std::vector<int64_t> spatial = SpatialShape(node);
  const bool upper = node.Str("auto_pad", "NOTSET") == "SAME_UPPER";
  window.pads.assign(2 * kSpatialRank, 0);
  for (size_t i = 0; i < kSpatialRank; ++i) {
    const int64_t total = window.strides[i] * (spatial[i] - 1) + output_padding[i] +
                          (window.kernel[i] - 1) * window.dilations[i] + 1 - target[i];
    if (total < 0) {
      output_padding[i] -= total;
      continue;
    }
    window.pads[i] = upper ? total / 2 : total - total / 2;
    window.pads[i + kSpatialRank] = total - window.pads[i];
  }
}

ir::Expr ConvertConvTranspose(const NodeContext& node) {
  SpatialRank(node, kSpatialRank);  // checks the input's rank; the extents are read when needed
  Window window;
  window.kernel = KernelOfWeight(node, kSpatialRank);
  window.strides = WindowInts(node, "strides", 1, kSpatialRank);
  window.dilations = WindowInts(node, "dilations", 1, kSpatialRank);
  std::vector<int64_t> output_padding = WindowInts(node, "output_padding", 0, kSpatialRank);
  if (std::optional<std::vector<int64_t>> target = TransposeTarget(node, window)) {
    PadToTarget(node, *target, window, output_padding);
  } else if (node.Str("auto_pad", "NOTSET") == "VALID") {
    window.pads.assign(2 * kSpatialRank, 0);
  } else {
    window.pads = WindowInts(node, "pads", 0, 2 * kSpatialRank);
  }
  Map<String, Any> attrs = WindowAttrs(window);
  attrs.Set("groups", node.Int("group", 1));
  attrs.Set("output_padding", ToArray(output_padding));
  return AddChannelBias(
      node, MakeCall("nn.conv2d_transpose", {node.Input(0), node.Input(1)}, attrs), kSpatialRank);
}

ir::Expr Scaled(ir::Expr value, double factor, DLDataType dtype) {
  if (factor == 1.0) return value;
  return MakeCall("multiply", {std::move(value), MakeScalar(factor, dtype)});
}

// Y = alpha * A' B' + beta * C with nn.dense, which takes its weight as (N, K) = B'^T.
ir::Expr ConvertGemm(const NodeContext& node) {
  const DLDataType dtype = node.InputDType(0);
  ir::Expr a = node.Input(0);
  if (node.Int("transA", 0) != 0) a = MakeCall("transpose", {a});
  ir::Expr b = node.Input(1);
  if (node.Int("transB", 0) == 0) b = MakeCall("transpose", {b});
  ir::Expr out = Scaled(MakeCall("nn.dense", {a, b}), node.Float("alpha", 1.0), dtype);
  if (!node.HasInput(2)) return out;
  return MakeCall("add", {out, Scaled(node.Input(2), node.Float("beta", 1.0), dtype)});
}

ir::Expr ConvertMatMul(const NodeContext& node) {
  return MakeCall("matmul", {node.Input(0), node.Input(1)});
}

void CheckSingleOutput(const NodeContext& node) {
  KILN_CHECK(node.NumOutputs() == 1, NotImplementedError)
      << node.Describe() << ": only the first output is supported (inference)";
}

/// The node's pooling window, its pads resolved.
Window PoolWindow(const NodeContext& node) {
  std::optional<std::vector<int64_t>> kernel = node.Ints("kernel_shape");
  KILN_CHECK(kernel.has_value(), ValueError) << node.Describe() << " needs kernel_shape";
  return ForwardWindow(node, SpatialRank(node, kMaxSpatialRank), *kernel);
}

Map<String, Any> PoolAttrs(const NodeContext& node, bool indices_output = false) {
  if (!indices_output) CheckSingleOutput(node);
  const Window window = PoolWindow(node);
  Map<String, Any> attrs = WindowAttrs(window);
  attrs.Set("pool_size", ToArray(window.kernel));
  attrs.Set("ceil_mode", node.Int("ceil_mode", 0) != 0);
  return attrs;
}

// MaxPool's second output: for each window, the flat NCHW position of its first maximum. Each
// window's elements are gathered from the flattened planes at constant positions (padding reads
// -inf), argmax picks the first maximum, and constant tables map (window, element) back to the
// input position.
ir::Expr MaxPoolIndices(const NodeContext& node) {
  const std::vector<int64_t> shape = node.InputShape(0);
  KILN_CHECK(shape.size() == 4 && node.Int("ceil_mode", 0) == 0, NotImplementedError)
      << node.Describe() << ": the indices output is supported for 2-D windows and ceil_mode=0";
  // storage_order=1 numbers each plane's positions column by column.
  const bool column_major = node.Int("storage_order", 0) != 0;
  const Window window = PoolWindow(node);
  const int64_t h = shape[2];
  const int64_t w = shape[3];
  auto out_extent = [&](size_t axis, int64_t extent) {
    const int64_t span = window.dilations[axis] * (window.kernel[axis] - 1) + 1;
    return (extent + window.pads[axis] + window.pads[axis + 2] - span) / window.strides[axis] + 1;
  };
  const int64_t oh = out_extent(0, h);
  const int64_t ow = out_extent(1, w);
  const int64_t taps = window.kernel[0] * window.kernel[1];
  std::vector<int64_t> gather;  // per (window, tap): the plane position read, 0 in the padding
  std::vector<int64_t> number;  // its number in the storage order
  std::vector<double> inside;   // 1 where that position lies in the input
  for (int64_t y = 0; y < oh; ++y) {
    for (int64_t x = 0; x < ow; ++x) {
      for (int64_t i = 0; i < window.kernel[0]; ++i) {
        for (int64_t j = 0; j < window.kernel[1]; ++j) {
          const int64_t r = y * window.strides[0] - window.pads[0] + i * window.dilations[0];
          const int64_t c = x * window.strides[1] - window.pads[1] + j * window.dilations[1];
          const bool valid = r >= 0 && r < h && c >= 0 && c < w;
          gather.push_back(valid ? r * w + c : 0);
          number.push_back(!valid ? 0 : column_major ? c * h + r : r * w + c);
          inside.push_back(valid ? 1.0 : 0.0);
        }
      }
    }
  }
  // MaxPool's integer inputs are 8-bit, which float32 (argmax's type) holds exactly.
  DLDataType dtype = node.InputDType(0);
  ir::Expr data = node.Input(0);
  if (dtype.code != kDLFloat) {
    dtype = DLDataType{kDLFloat, 32, 1};
    data = MakeCall("cast", {data}, {{"dtype", String("float32")}});
  }
  ir::Expr positions = ir::Constant(Int64Tensor(gather));
  ir::Expr planes =
      MakeCall("reshape", {data}, {{"newshape", Array<int64_t>{shape[0], shape[1], h * w}}});
  ir::Expr windows = MakeCall("reshape", {MakeCall("take", {planes, positions}, {{"axis", 2}})},
                              {{"newshape", Array<int64_t>{shape[0], shape[1], oh, ow, taps}}});
  ir::Expr valid =
      ir::Constant(TensorFromDoubles(inside, {oh, ow, taps}, DLDataType{kDLUInt, 1, 1}));
  windows = MakeCall("where",
                     {valid, windows, MakeScalar(-std::numeric_limits<double>::infinity(), dtype)});
  ir::Expr tap = MakeCall("argmax", {windows}, {{"axis", 4}, {"keepdims", false}});
  std::vector<int64_t> first_tap(static_cast<size_t>(oh * ow));
  for (int64_t k = 0; k < oh * ow; ++k) first_tap[k] = k * taps;
  ir::Expr entry = MakeCall("add", {tap, ir::Constant(Int64Tensor(first_tap, {{oh, ow}}))});
  ir::Expr in_plane = MakeCall("take", {ir::Constant(Int64Tensor(number)), entry}, {{"axis", 0}});
  std::vector<int64_t> plane_start(static_cast<size_t>(shape[0] * shape[1]));
  for (size_t k = 0; k < plane_start.size(); ++k) plane_start[k] = static_cast<int64_t>(k) * h * w;
  return MakeCall("add",
                  {in_plane, ir::Constant(Int64Tensor(plane_start, {{shape[0], shape[1], 1, 1}}))});
}

ir::Expr ConvertMaxPool(const NodeContext& node) {
  const size_t rank = node.InputRank(0) - 2;
  const bool indices = node.NumOutputs() == 2;
  ir::Expr pooled =
      MakeCall(RankedOp("nn.max_pool", rank), {node.Input(0)}, PoolAttrs(node, indices));
  if (!indices) return pooled;
  return ir::Tuple({pooled, MaxPoolIndices(node)});
}

ir::Expr ConvertAveragePool(const NodeContext& node) {
  Map<String, Any> attrs = PoolAttrs(node);
  attrs.Set("count_include_pad", node.Int("count_include_pad", 0) != 0);
  const size_t rank = node.InputRank(0) - 2;
  return MakeCall(RankedOp("nn.avg_pool", rank), {node.Input(0)}, attrs);
}

/// The 2-D global pool op for 4-D inputs; for other ranks the reduction `reduce` ("mean",
/// "max") over every spatial axis, which is what a global pool is.
ir::Expr ConvertGlobalPool(const NodeContext& node, const char* op_2d, const char* reduce) {
  const size_t rank = node.InputRank(0);
  KILN_CHECK(rank >= 3, ValueError)
      << node.Describe() << ": the input needs a spatial axis, it has rank " << rank;
  if (rank == kSpatialRank + 2) return MakeCall(op_2d, {node.Input(0)});
  std::vector<int64_t> axes;
  for (size_t axis = 2; axis < rank; ++axis) axes.push_back(static_cast<int64_t>(axis));
  return MakeCall(reduce, {node.Input(0)}, {{"axis", ToArray(axes)}, {"keepdims", true}});
}

// BatchNormalization-14/15 with training_mode=1 normalizes with the batch's own (biased)
// statistics over every axis but the channels, and also returns the running statistics updated
// with them: running * momentum + batch * (1 - momentum).
ir::Expr BatchNormTraining(const NodeContext& node) {
  const size_t rank = node.InputRank(0);
  KILN_CHECK(rank >= 2, ValueError) << node.Describe() << ": the input must be >= 2-D";
  const DLDataType dtype = node.InputDType(0);
  std::vector<int64_t> axes{0};
  for (size_t d = 2; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  auto mean_over = [&](const ir::Expr& value) {
    return MakeCall("mean", {value}, {{"axis", ToArray(axes)}, {"keepdims", false}});
  };
  const ir::Expr& x = node.Input(0);
  ir::Expr mean = mean_over(x);
  ir::Expr centered = MakeCall("subtract", {x, PerChannel(mean, rank)});
  ir::Expr variance = mean_over(MakeCall("multiply", {centered, centered}));
  ir::Expr y = MakeCall("nn.batch_norm", {x, node.Input(1), node.Input(2), mean, variance},
                        {{"epsilon", node.Float("epsilon", 1e-5)}});
  if (node.NumOutputs() <= 1) return y;
  const double momentum = node.Float("momentum", 0.9);
  auto update = [&](const ir::Expr& running, const ir::Expr& batch) {
    return MakeCall("add", {MakeCall("multiply", {running, MakeScalar(momentum, dtype)}),
                            MakeCall("multiply", {batch, MakeScalar(1 - momentum, dtype)})});
  };
  return ir::Tuple({y, update(node.Input(3), mean), update(node.Input(4), variance)});
}

ir::Expr ConvertBatchNorm(const NodeContext& node) {
  if (node.opset() >= 14 && node.Int("training_mode", 0) != 0) return BatchNormTraining(node);
  CheckSingleOutput(node);
  KILN_CHECK(node.Int("training_mode", 0) == 0, NotImplementedError)
      << node.Describe() << ": training_mode is not supported (inference only)";
  // Opsets 7-8 could normalize per element (spatial=0), which nn.batch_norm does not.
  KILN_CHECK(node.Int("spatial", 1) == 1, NotImplementedError)
      << node.Describe() << ": spatial=0 is not supported";
  return MakeCall("nn.batch_norm",
                  {node.Input(0), node.Input(1), node.Input(2), node.Input(3), node.Input(4)},
                  {{"epsilon", node.Float("epsilon", 1e-5)}});
}

/// LayerNormalization's optional outputs: the mean and 1 / sqrt(variance + epsilon) over the
/// normalized dims (kept as 1s), in stash_type (float32 unless the node says otherwise).
std::pair<ir::Expr, ir::Expr> LayerNormStatistics(const NodeContext& node, int64_t axis,
                                                  size_t rank) {
  std::vector<int64_t> axes;
  for (auto d = static_cast<size_t>(axis); d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  auto mean_over = [&](const ir::Expr& value) {
    return MakeCall("mean", {value}, {{"axis", ToArray(axes)}, {"keepdims", true}});
  };
  const ir::Expr& x = node.Input(0);
  ir::Expr mean = mean_over(x);
  ir::Expr centered = MakeCall("subtract", {x, mean});
  ir::Expr variance = mean_over(MakeCall("multiply", {centered, centered}));
  ir::Expr inv_std =
      MakeCall("reciprocal",
               {MakeCall("sqrt", {MakeCall("add", {variance, MakeScalar(node.Float("epsilon", 1e-5),
                                                                        node.InputDType(0))})})});
  const DLDataType stash = DTypeFromOnnx(static_cast<int32_t>(node.Int("stash_type", 1)),
                                         node.Describe() + "'s stash_type");
  if (!DataTypeEqual(stash, node.InputDType(0))) {
    const String dtype(DataTypeToString(stash));
    mean = MakeCall("cast", {mean}, {{"dtype", dtype}});
    inv_std = MakeCall("cast", {inv_std}, {{"dtype", dtype}});
  }
  return {mean, inv_std};
}

ir::Expr ConvertLayerNorm(const NodeContext& node) {
  const size_t rank = node.InputRank(0);
  const int64_t axis = NormalizeAxis(node.Int("axis", -1), static_cast<int64_t>(rank));
  // Kiln's layer_norm always takes a bias; ONNX's B defaults to zeros of the scale's shape
  // (the normalized dimensions, static where the batch and sequence are not).
  ir::Expr bias;
  if (node.HasInput(2)) {
    bias = node.Input(2);
  } else {
    bias = ir::Constant(FilledTensor(node.InputShape(1), node.InputDType(0), 0.0));
  }
  ir::Expr normalized = MakeCall("nn.layer_norm", {node.Input(0), node.Input(1), bias},
                                 {{"axis", axis}, {"epsilon", node.Float("epsilon", 1e-5)}});
  if (node.NumOutputs() <= 1) return normalized;
  const std::pair<ir::Expr, ir::Expr> statistics = LayerNormStatistics(node, axis, rank);
  return ir::Tuple({normalized, statistics.first, statistics.second});
}

// Before opset 13 Softmax treats its input as the 2-D matrix [prod(shape[:axis]),
// prod(shape[axis:])] and normalizes each row, so the result differs from a softmax over `axis`
// alone whenever axis is not the last dimension.
ir::Expr ConvertSoftmaxFlattened(const NodeContext& node, const char* op) {
  const size_t rank = node.InputRank(0);
  const auto axis =
      static_cast<size_t>(NormalizeAxis(node.Int("axis", 1), static_cast<int64_t>(rank)));
  if (axis + 1 == rank) return MakeCall(op, {node.Input(0)}, {{"axis", int64_t{-1}}});
  ir::Expr flat = MakeCall("reshape", {node.Input(0)}, {{"newshape", MatrixNewShape(node, axis)}});
  ir::Expr normalized = MakeCall(op, {flat}, {{"axis", int64_t{-1}}});
  return MakeCall("reshape", {normalized}, {{"newshape", InputNewShape(node)}});
}

ir::Expr ConvertSoftmax(const NodeContext& node, const char* op) {
  return MakeCall(op, {node.Input(0)}, {{"axis", node.Int("axis", -1)}});
}

ir::Expr ConvertPadAttrs(const NodeContext& node) {
  std::optional<std::vector<int64_t>> pads = node.Ints("pads");
  KILN_CHECK(pads.has_value(), ValueError) << node.Describe() << " needs pads";
  return MakeCall("nn.pad", {node.Input(0)},
                  {{"pads", ToArray(*pads)},
                   {"mode", String(node.Str("mode", "constant"))},
                   {"pad_value", node.Float("value", 0.0)}});
}

/// Pad with pads or a value fed at run time.
ir::Expr RunTimePad(const NodeContext& node) {
  ir::Expr value = MakeScalar(0, node.InputDType(0));
  if (node.HasInput(2)) {
    value = MakeCall("reshape", {node.Input(2)}, {{"newshape", Array<int64_t>{}}});
  }
  return PadAtRunTime(node, node.Input(0), AsInt64(node.Input(1), node.InputDType(1)), value,
                      node.Str("mode", "constant"));
}

ir::Expr ConvertPadInputs(const NodeContext& node) {
  if (node.IsRunTimeValue(1) || node.IsRunTimeValue(2)) return RunTimePad(node);
  double value = 0.0;
  if (node.HasInput(2)) {
    const std::vector<double> values = node.ConstantFloats(2);
    KILN_CHECK(values.size() == 1, ValueError)
        << node.Describe() << ": constant_value must hold one value";
    value = values[0];
  }
  return MakeCall("nn.pad", {node.Input(0)},
                  {{"pads", ToArray(node.ConstantInts(1))},
                   {"mode", String(node.Str("mode", "constant"))},
                   {"pad_value", value}});
}

}  // namespace

void AddNNConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "Conv", 1, kMaxOpset, LiftWindow1D(ConvertConv, /*lift_weight=*/true));
  AddConverter(table, "ConvTranspose", 1, kMaxOpset,
               LiftWindow1D(ConvertConvTranspose, /*lift_weight=*/true));
  AddConverter(table, "Gemm", 7, kMaxOpset, ConvertGemm);
  AddConverter(table, "MatMul", 1, kMaxOpset, ConvertMatMul);
  AddConverter(table, "MaxPool", 1, kMaxOpset, LiftWindow1D(ConvertMaxPool, false));
  AddConverter(table, "AveragePool", 7, kMaxOpset, LiftWindow1D(ConvertAveragePool, false));
  AddConverter(table, "GlobalAveragePool", 1, kMaxOpset, [](const NodeContext& node) {
    return ConvertGlobalPool(node, "nn.global_avg_pool2d", "mean");
  });
  AddConverter(table, "GlobalMaxPool", 1, kMaxOpset, [](const NodeContext& node) {
    return ConvertGlobalPool(node, "nn.global_max_pool2d", "max");
  });
  AddConverter(table, "BatchNormalization", 7, kMaxOpset, ConvertBatchNorm);
  AddConverter(table, "LayerNormalization", 17, kMaxOpset, ConvertLayerNorm);
  for (const auto& [onnx_op, kiln_op] :
       {std::pair{"Softmax", "nn.softmax"}, std::pair{"LogSoftmax", "nn.log_softmax"}}) {
    AddConverter(table, onnx_op, 1, 12, [op = kiln_op](const NodeContext& node) {
      return ConvertSoftmaxFlattened(node, op);
    });
    AddConverter(table, onnx_op, 13, kMaxOpset,
                 [op = kiln_op](const NodeContext& node) { return ConvertSoftmax(node, op); });
  }
  AddConverter(table, "Pad", 2, 10, ConvertPadAttrs);
  AddConverter(table, "Pad", 11, kMaxOpset, ConvertPadInputs);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
