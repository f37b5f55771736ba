// Indexing ONNX ops: GatherElements, ScatterElements (and Scatter before it), GatherND,
// ScatterND, Compress, OneHot, CumSum, TopK, Unique, ReverseSequence and MaxUnpool.
#include <kiln/ffi/error.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "converter.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

constexpr DLDataType kInt64{kDLInt, 64, 1};

ir::Expr ConvertGatherElements(const NodeContext& node) {
  return MakeCall("gather_elements", {node.Input(0), node.Input(1)},
                  {{"axis", node.Int("axis", 0)}});
}

ir::Expr ConvertScatterElements(const NodeContext& node) {
  return MakeCall(
      "scatter_elements", {node.Input(0), node.Input(1), node.Input(2)},
      {{"axis", node.Int("axis", 0)}, {"reduction", String(node.Str("reduction", "none"))}});
}

ir::Expr ConvertGatherND(const NodeContext& node) {
  return MakeCall("gather_nd", {node.Input(0), node.Input(1)},
                  {{"batch_dims", node.Int("batch_dims", 0)}});
}

ir::Expr ConvertScatterND(const NodeContext& node) {
  return MakeCall("scatter_nd", {node.Input(0), node.Input(1), node.Input(2)},
                  {{"reduction", String(node.Str("reduction", "none"))}});
}

// The selected positions, and so the result's shape, depend on the condition's values, so it
// must be constant; the selection is then a take of those positions.
/// The positions of the non-zero elements of `data`, (rank, count) with the count read at run
/// time.
ir::Expr Nonzero(const NodeContext& node, const ir::Expr& data) {
  const std::vector<arith::SizeExpr> count = node.NewSizes(1);
  return MakeCall("nonzero", {DefineSizes(data, MakeCall("nonzero_count", {data}), count)},
                  {{"count", SizeAttr(count[0])}});
}

ir::Expr ConvertNonZero(const NodeContext& node) { return Nonzero(node, node.Input(0)); }

/// The data along `axis` (of the flattened data without one) where the condition holds: a take
/// of the condition's non-zero positions, computed at run time unless the condition is constant.
ir::Expr ConvertCompress(const NodeContext& node) {
  if (node.IsRunTimeValue(1)) {
    ir::Expr positions = Nonzero(node, node.Input(1));
    positions = MakeCall("squeeze", {positions}, {{"axes", Array<int64_t>{0}}});
    const ir::Expr& data = node.Input(0);
    if (!node.HasAttr("axis")) {
      return MakeCall("take",
                      {MakeCall("reshape", {data}, {{"newshape", Array<int64_t>{-1}}}), positions},
                      {{"axis", 0}});
    }
    return MakeCall("take", {data, positions}, {{"axis", node.Int("axis", 0)}});
  }
  const std::vector<int64_t> condition = node.ConstantInts(1);
  std::vector<int64_t> selected;
  for (size_t i = 0; i < condition.size(); ++i) {
    if (condition[i] != 0) selected.push_back(static_cast<int64_t>(i));
  }
  ir::Expr data = node.Input(0);
  int64_t axis = 0;
  if (node.HasAttr("axis")) {
    axis = NormalizeAxis(node.Int("axis", 0), static_cast<int64_t>(node.InputRank(0)));
    const int64_t extent = node.InputExtent(0, static_cast<size_t>(axis));
    KILN_CHECK(static_cast<int64_t>(condition.size()) <= extent, ValueError)
        << node.Describe() << ": the condition has " << condition.size()
        << " entries, more than extent " << extent << " of axis " << axis;
  } else {
    data = MakeCall("reshape", {data}, {{"newshape", Array<int64_t>{-1}}});
  }
  return MakeCall("take", {data, ir::Constant(Int64Tensor(selected))}, {{"axis", axis}});
}

// out = values[1] where the index (negative ones counted from the end) equals the position
// along the new axis, values[0] elsewhere.
/// values[1] where `mask` holds, values[0] elsewhere (OneHot's values, input 2).
ir::Expr OneHotValues(const NodeContext& node, const ir::Expr& mask) {
  const ir::Expr& values = node.Input(2);
  ir::Expr off = MakeCall("take", {values, MakeScalar(0, kInt64)});
  ir::Expr on = MakeCall("take", {values, MakeScalar(1, kInt64)});
  return MakeCall("where", {mask, on, off});
}

/// OneHot with a depth known only at run time: the positions along the new axis are a range of
/// that many elements, and negative indices add the depth read as a tensor.
ir::Expr RunTimeOneHot(const NodeContext& node) {
  const auto rank = static_cast<int64_t>(node.InputRank(0)) + 1;
  const int64_t axis = NormalizeAxis(node.Int("axis", -1), rank);
  const std::vector<arith::SizeExpr> depth = node.NewSizes(1);
  const ir::Expr depth_values = MakeCall("as_sizes", {node.Input(1)});
  const ir::Expr zero = MakeScalar(0, kInt64);
  ir::Expr positions =
      MakeCall("range", {DefineSizes(zero, depth_values, depth), MakeScalar(1, kInt64)},
               {{"size", SizeAttr(depth[0])}});
  std::vector<arith::SizeExpr> along(static_cast<size_t>(rank), arith::IntImm(1));
  along[axis] = depth[0];
  positions = MakeCall("reshape", {positions}, {{"newshape", SizesAttr(along)}});
  ir::Expr index = AsInt64(node.Input(0), node.InputDType(0));
  index = MakeCall(
      "where", {MakeCall("less", {index, zero}), MakeCall("add", {index, depth_values}), index});
  index = MakeCall("unsqueeze", {index}, {{"axes", Array<int64_t>{axis}}});
  return OneHotValues(node, MakeCall("equal", {index, positions}));
}

ir::Expr ConvertOneHot(const NodeContext& node) {
  if (node.IsRunTimeValue(1)) return RunTimeOneHot(node);
  const std::vector<double> depth_values = node.ConstantFloats(1);
  // Bounded before the conversion (a corrupt depth would make it undefined) and because the
  // positions it is compared with are spelled out as a constant.
  constexpr double kMaxDepth = 1 << 24;
  KILN_CHECK(depth_values.size() == 1 && depth_values[0] >= 1 && depth_values[0] <= kMaxDepth,
             ValueError)
      << node.Describe() << ": depth must be one value in [1, 2^24]";
  const auto depth = static_cast<int64_t>(depth_values[0]);
  const auto rank = static_cast<int64_t>(node.InputRank(0)) + 1;
  const int64_t axis = NormalizeAxis(node.Int("axis", -1), rank);
  ir::Expr index = node.Input(0);
  if (!DataTypeEqual(node.InputDType(0), kInt64)) {
    index = MakeCall("cast", {index}, {{"dtype", String("int64")}});
  }
  ir::Expr zero = MakeScalar(0, kInt64);
  index = MakeCall(
      "where", {MakeCall("less", {index, zero}),
                MakeCall("add", {index, MakeScalar(static_cast<double>(depth), kInt64)}), index});
  index = MakeCall("unsqueeze", {index}, {{"axes", Array<int64_t>{axis}}});
  return OneHotValues(node, MakeCall("equal", {index, AxisPositions(depth, axis, rank)}));
}

/// CumSum along an axis fed at run time: the sum along each axis, the one the axis names selected
/// (a model that feeds its axis is rare; this keeps it correct without a kernel of its own).
ir::Expr RunTimeCumSum(const NodeContext& node, const Map<String, Any>& attrs) {
  const auto rank = static_cast<int64_t>(node.InputRank(0));
  ir::Expr axis = AsInt64(node.Input(1), node.InputDType(1));
  axis = MakeCall("where",
                  {MakeCall("less", {axis, MakeScalar(0, kInt64)}),
                   MakeCall("add", {axis, MakeScalar(static_cast<double>(rank), kInt64)}), axis});
  ir::Expr result;
  for (int64_t d = rank - 1; d >= 0; --d) {
    Map<String, Any> along = attrs;
    along.Set("axis", d);
    ir::Expr sum = MakeCall("cumsum", {node.Input(0)}, along);
    if (!result.defined()) {
      result = sum;
      continue;
    }
    const ir::Expr chosen = MakeCall("equal", {axis, MakeScalar(static_cast<double>(d), kInt64)});
    result = MakeCall("where", {chosen, sum, result});
  }
  return result;
}

ir::Expr ConvertCumSum(const NodeContext& node) {
  const Map<String, Any> attrs{{"exclusive", node.Int("exclusive", 0) != 0},
                               {"reverse", node.Int("reverse", 0) != 0}};
  if (node.IsRunTimeValue(1)) return RunTimeCumSum(node, attrs);
  const std::vector<int64_t> axis = node.ConstantInts(1);
  KILN_CHECK(axis.size() == 1, ValueError) << node.Describe() << ": axis must be one value";
  Map<String, Any> along = attrs;
  along.Set("axis", axis[0]);
  return MakeCall("cumsum", {node.Input(0)}, along);
}

// K is an input (a constant); `sorted` = 0 lets any order through, so sorted order is correct.
ir::Expr ConvertTopK(const NodeContext& node) {
  KILN_CHECK(node.InputRank(1) == 1 && node.InputExtent(1, 0) == 1, ValueError)
      << node.Describe() << ": K must be one value";
  ir::Expr data = node.Input(0);
  arith::SizeExpr k;
  if (node.IsRunTimeValue(1)) {
    k = node.NewSizes(1)[0];
    data = DefineSizes(data, node.Input(1), {k});
  } else {
    k = arith::IntImm(node.ConstantInts(1)[0]);
  }
  return MakeCall("topk", {data},
                  {{"k", SizeAttr(k)},
                   {"axis", node.Int("axis", -1)},
                   {"largest", node.Int("largest", 1) != 0}});
}

/// The distinct slices along `axis` (of the flattened data without one) and ONNX's three other
/// outputs, as many as unique_count finds at run time.
ir::Expr ConvertUnique(const NodeContext& node) {
  ir::Expr data = node.Input(0);
  if (!node.HasAttr("axis")) {
    data = MakeCall("reshape", {data}, {{"newshape", Array<int64_t>{-1}}});
  }
  const int64_t axis = node.Int("axis", 0);
  const std::vector<arith::SizeExpr> count = node.NewSizes(1);
  const ir::Expr values = MakeCall("unique_count", {data}, {{"axis", axis}});
  return MakeCall(
      "unique", {DefineSizes(data, values, count)},
      {{"count", SizeAttr(count[0])}, {"axis", axis}, {"sorted", node.Int("sorted", 1) != 0}});
}

/// ReverseSequence with lengths fed at run time: the positions are computed then, t reading
/// length - 1 - t where t < min(length, T), from a constant table of t and the lengths.
ir::Expr RunTimeReverseSequence(const NodeContext& node, const std::vector<int64_t>& shape,
                                int64_t batch_axis, int64_t time_axis) {
  const auto rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> along_time(shape.size(), 1);
  along_time[time_axis] = shape[time_axis];
  std::vector<int64_t> steps(static_cast<size_t>(shape[time_axis]));
  for (size_t t = 0; t < steps.size(); ++t) steps[t] = static_cast<int64_t>(t);
  const ir::Expr t = ir::Constant(Int64Tensor(steps, along_time));
  Array<int64_t> along_batch;
  for (int64_t d = 0; d < rank; ++d) along_batch.push_back(d == batch_axis ? -1 : 1);
  ir::Expr length = MakeCall("reshape", {AsInt64(node.Input(1), node.InputDType(1))},
                             {{"newshape", along_batch}});
  length = MakeCall("minimum", {length, MakeScalar(static_cast<double>(shape[time_axis]), kInt64)});
  const ir::Expr reversed =
      MakeCall("subtract", {MakeCall("subtract", {length, MakeScalar(1, kInt64)}), t});
  const ir::Expr positions = MakeCall("where", {MakeCall("less", {t, length}), reversed, t});
  return MakeCall("gather_elements",
                  {node.Input(0), MakeCall("expand", {positions}, {{"shape", ToArray(shape)}})},
                  {{"axis", time_axis}});
}

// Each batch entry's first sequence_lens[b] steps along the time axis reversed, the rest kept:
// a gather_elements along the time axis with constant positions, computed at run time when the
// lengths are fed then.
ir::Expr ConvertReverseSequence(const NodeContext& node) {
  const std::vector<int64_t> shape = node.InputShape(0);
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t batch_axis = NormalizeAxis(node.Int("batch_axis", 1), rank);
  const int64_t time_axis = NormalizeAxis(node.Int("time_axis", 0), rank);
  KILN_CHECK(rank >= 2 && batch_axis != time_axis, ValueError)
      << node.Describe() << ": batch_axis and time_axis must be two different axes";
  if (node.IsRunTimeValue(1)) return RunTimeReverseSequence(node, shape, batch_axis, time_axis);
  const std::vector<int64_t> lengths = node.ConstantInts(1);
  KILN_CHECK(static_cast<int64_t>(lengths.size()) == shape[batch_axis], ValueError)
      << node.Describe() << ": " << lengths.size() << " sequence lengths for a batch of "
      << shape[batch_axis];
  const int64_t count = Product(shape, 0, shape.size());
  std::vector<int64_t> positions(static_cast<size_t>(count));
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t t = index[time_axis];
    const int64_t length = std::min(lengths[index[batch_axis]], shape[time_axis]);
    positions[i] = t < length ? length - 1 - t : t;
    for (int64_t d = rank - 1; d >= 0 && ++index[d] == shape[d]; --d) index[d] = 0;
  }
  return MakeCall("gather_elements", {node.Input(0), ir::Constant(Int64Tensor(positions, shape))},
                  {{"axis", time_axis}});
}

// MaxUnpool puts each value at the flat NCHW position its index gives (MaxPool's indices
// output) in a zero tensor of the shape the window inverts to: a scatter_elements over the
// flattened tensor. A given output_shape pads that with zeros at the ends, as ONNX's reference
// (and its test data) do; the indices still count in the inverted shape.
ir::Expr ConvertMaxUnpool(const NodeContext& node) {
  const std::vector<int64_t> shape = node.InputShape(0);
  const size_t spatial = shape.size() - 2;
  const std::vector<int64_t> kernel = node.Ints("kernel_shape").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> strides =
      node.Ints("strides").value_or(std::vector<int64_t>(spatial, 1));
  const std::vector<int64_t> pads =
      node.Ints("pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  KILN_CHECK(kernel.size() == spatial && strides.size() == spatial && pads.size() == 2 * spatial,
             ValueError)
      << node.Describe() << ": kernel_shape, strides and pads must match the input's " << spatial
      << " spatial dims";
  std::vector<int64_t> inverted{shape[0], shape[1]};
  for (size_t d = 0; d < spatial; ++d) {
    inverted.push_back((shape[d + 2] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + spatial]);
  }
  const DLDataType dtype = node.InputDType(0);
  ir::Expr zeros = ir::Constant(FilledTensor({Product(inverted, 0, inverted.size())}, dtype, 0.0));
  const Array<int64_t> flat{-1};
  ir::Expr scattered = MakeCall("scatter_elements",
                                {zeros, MakeCall("reshape", {node.Input(1)}, {{"newshape", flat}}),
                                 MakeCall("reshape", {node.Input(0)}, {{"newshape", flat}})},
                                {{"axis", 0}});
  ir::Expr result = MakeCall("reshape", {scattered}, {{"newshape", ToArray(inverted)}});
  if (!node.HasInput(2)) return result;
  if (node.IsRunTimeValue(2)) {
    // Zeros at the ends up to an output_shape read at run time.
    const ir::Expr ends = MakeCall("subtract", {AsInt64(node.Input(2), node.InputDType(2)),
                                                ir::Constant(Int64Tensor(inverted))});
    const ir::Expr begins = ir::Constant(Int64Tensor(std::vector<int64_t>(inverted.size(), 0)));
    const ir::Expr pads =
        MakeCall("concatenate", {ir::Tuple({begins, ends})}, {{"axis", int64_t{0}}});
    return PadAtRunTime(node, result, pads, MakeScalar(0, dtype), "constant");
  }
  const std::vector<int64_t> out = node.ConstantInts(2);
  KILN_CHECK(out.size() == inverted.size(), ValueError)
      << node.Describe() << ": output_shape has " << out.size() << " dims, the input "
      << inverted.size();
  std::vector<int64_t> padding(2 * out.size(), 0);
  for (size_t d = 0; d < out.size(); ++d) {
    KILN_CHECK(out[d] >= inverted[d], ValueError)
        << node.Describe() << ": output_shape is smaller than the unpooled shape along dim " << d;
    padding[out.size() + d] = out[d] - inverted[d];
  }
  if (out == inverted) return result;
  return MakeCall("nn.pad", {result}, {{"pads", ToArray(padding)}});
}

}  // namespace

void AddIndexingConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "GatherElements", 11, kMaxOpset, ConvertGatherElements);
  // Scatter (9-10) is ScatterElements under its old name.
  AddConverter(table, "Scatter", 9, 10, ConvertScatterElements);
  AddConverter(table, "ScatterElements", 11, kMaxOpset, ConvertScatterElements);
  AddConverter(table, "GatherND", 11, kMaxOpset, ConvertGatherND);
  AddConverter(table, "ScatterND", 11, kMaxOpset, ConvertScatterND);
  AddConverter(table, "Compress", 9, kMaxOpset, ConvertCompress);
  AddConverter(table, "NonZero", 9, kMaxOpset, ConvertNonZero);
  AddConverter(table, "OneHot", 9, kMaxOpset, ConvertOneHot);
  AddConverter(table, "CumSum", 11, kMaxOpset, ConvertCumSum);
  AddConverter(table, "TopK", 10, kMaxOpset, ConvertTopK);
  AddConverter(table, "Unique", 11, kMaxOpset, ConvertUnique);
  AddConverter(table, "ReverseSequence", 10, kMaxOpset, ConvertReverseSequence);
  AddConverter(table, "MaxUnpool", 11, kMaxOpset, ConvertMaxUnpool);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
