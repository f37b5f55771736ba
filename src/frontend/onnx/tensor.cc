// Tensor-manipulation ONNX ops: reshapes, transposes, joins and splits, slicing, gathering.
// Inputs that decide the result's shape (Reshape's shape, Slice's starts, ...) must be
// constants; they become attributes of the Kiln op.
#include <kiln/ffi/error.h>

#include <algorithm>
#include <numeric>

#include "converter.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// Integer attribute `name` before opset `input_since`, constant input `index` from then on;
/// nullopt when the node gives neither.
std::optional<std::vector<int64_t>> AttrOrInput(const NodeContext& node, const std::string& name,
                                                int64_t input_since, size_t index) {
  if (node.opset() < input_since) return node.Ints(name);
  if (!node.HasInput(index)) return std::nullopt;
  return node.ConstantInts(index);
}

Any AxesOrNone(const std::optional<std::vector<int64_t>>& axes) {
  return axes.has_value() ? Any(ToArray(*axes)) : Any(nullptr);
}

ir::Expr ConvertReshape(const NodeContext& node) {
  const std::vector<int64_t> shape = node.ConstantInts(1);
  // Kiln's reshape copies the input's extent where the shape says 0, as ONNX does without
  // allowzero. With allowzero a 0 is a literal empty extent, so input and result hold no
  // elements: the result is an empty Constant of that shape.
  if (node.Int("allowzero", 0) != 0 && std::count(shape.begin(), shape.end(), 0) != 0) {
    const std::vector<int64_t> input = node.InputShape(0);
    KILN_CHECK(
        Product(input, 0, input.size()) == 0 && std::count(shape.begin(), shape.end(), -1) == 0,
        ValueError)
        << node.Describe() << ": allowzero=1 with a 0 in the shape needs an empty input and no -1";
    return ir::Constant(FilledTensor(shape, node.InputDType(0), 0.0));
  }
  return MakeCall("reshape", {node.Input(0)}, {{"newshape", ToArray(shape)}});
}

ir::Expr ConvertFlatten(const NodeContext& node) {
  const auto rank = static_cast<int64_t>(node.InputRank(0));
  // axis may equal the rank here (everything in the first dimension).
  const int64_t raw_axis = node.Int("axis", 1);
  const auto axis = static_cast<size_t>(raw_axis == rank ? rank : NormalizeAxis(raw_axis, rank));
  return MakeCall("reshape", {node.Input(0)}, {{"newshape", MatrixNewShape(node, axis)}});
}

ir::Expr ConvertTranspose(const NodeContext& node) {
  return MakeCall("transpose", {node.Input(0)}, {{"axes", AxesOrNone(node.Ints("perm"))}});
}

ir::Expr ConvertConcat(const NodeContext& node) {
  Array<ir::Expr> fields;
  for (const ir::Expr& input : node.Inputs()) fields.push_back(input);
  return MakeCall("concatenate", {ir::Tuple(fields)}, {{"axis", node.Int("axis", 0)}});
}

ir::Expr ConvertSplit(const NodeContext& node) {
  const int64_t axis = NormalizeAxis(node.Int("axis", 0), static_cast<int64_t>(node.InputRank(0)));
  std::optional<std::vector<int64_t>> sections = AttrOrInput(node, "split", 13, 1);
  if (!sections.has_value()) {
    // Equal parts: only the split axis needs a static extent.
    const int64_t extent = node.InputExtent(0, static_cast<size_t>(axis));
    const auto parts = static_cast<int64_t>(node.proto().output_size());
    KILN_CHECK(extent % parts == 0, ValueError)
        << node.Describe() << ": extent " << extent << " does not split into " << parts
        << " equal parts";
    sections = std::vector<int64_t>(parts, extent / parts);
  }
  return MakeCall("split", {node.Input(0)}, {{"axis", axis}, {"sections", ToArray(*sections)}});
}

ir::Expr ConvertSlice(const NodeContext& node) {
  const bool attrs = node.opset() < 10;
  std::optional<std::vector<int64_t>> begin = attrs ? node.Ints("starts") : node.ConstantInts(1);
  std::optional<std::vector<int64_t>> end = attrs ? node.Ints("ends") : node.ConstantInts(2);
  KILN_CHECK(begin.has_value() && end.has_value(), ValueError)
      << node.Describe() << " needs starts and ends";
  std::optional<std::vector<int64_t>> steps;
  if (!attrs && node.HasInput(4)) steps = node.ConstantInts(4);
  return MakeCall("strided_slice", {node.Input(0)},
                  {{"begin", ToArray(*begin)},
                   {"end", ToArray(*end)},
                   {"axes", AxesOrNone(AttrOrInput(node, "axes", 10, 3))},
                   {"strides", AxesOrNone(steps)}});
}

ir::Expr ConvertGather(const NodeContext& node) {
  return MakeCall("take", {node.Input(0), node.Input(1)}, {{"axis", node.Int("axis", 0)}});
}

ir::Expr ConvertSqueeze(const NodeContext& node) {
  return MakeCall("squeeze", {node.Input(0)},
                  {{"axes", AxesOrNone(AttrOrInput(node, "axes", 13, 1))}});
}

ir::Expr ConvertUnsqueeze(const NodeContext& node) {
  std::optional<std::vector<int64_t>> axes = AttrOrInput(node, "axes", 13, 1);
  KILN_CHECK(axes.has_value(), ValueError) << node.Describe() << " needs axes";
  return MakeCall("unsqueeze", {node.Input(0)}, {{"axes", ToArray(*axes)}});
}

ir::Expr ConvertExpand(const NodeContext& node) {
  return MakeCall("expand", {node.Input(0)}, {{"shape", ToArray(node.ConstantInts(1))}});
}

}  // namespace

void AddTensorConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "Reshape", 5, kMaxOpset, ConvertReshape);
  AddConverter(table, "Flatten", 1, kMaxOpset, ConvertFlatten);
  AddConverter(table, "Transpose", 1, kMaxOpset, ConvertTranspose);
  AddConverter(table, "Concat", 4, kMaxOpset, ConvertConcat);
  AddConverter(table, "Split", 2, kMaxOpset, ConvertSplit);
  AddConverter(table, "Slice", 1, kMaxOpset, ConvertSlice);
  AddConverter(table, "Gather", 1, kMaxOpset, ConvertGather);
  AddConverter(table, "Squeeze", 1, kMaxOpset, ConvertSqueeze);
  AddConverter(table, "Unsqueeze", 1, kMaxOpset, ConvertUnsqueeze);
  AddConverter(table, "Expand", 8, kMaxOpset, ConvertExpand);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
