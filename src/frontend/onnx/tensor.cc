// Tensor-manipulation ONNX ops: reshapes, transposes, joins and splits, slicing, gathering.
// Inputs that decide the result's shape (Reshape's shape, Slice's starts, ...) must be
// constants, or shape values computed from symbolic sizes where the Kiln op takes sizes
// (Reshape's and Expand's shapes, Slice's ends that reach the end of an axis); they become
// attributes of the Kiln op.
#include <kiln/ffi/error.h>

#include <algorithm>
#include <functional>
#include <limits>
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

// A shape computed from symbolic sizes passes its expressions to newshape; 0 and -1 keep their
// meaning where they are constants, as ONNX reads the values.
ir::Expr ConvertReshape(const NodeContext& node) {
  if (node.IsRunTimeValue(1)) {
    // A shape known only at run time: its extents are computed then (0 and -1 resolved).
    return ReshapeToRunTimeSizes(node, node.Input(0), node.InputExtent(1, 0), "reshape_sizes",
                                 node.Input(1), {{"allowzero", node.Int("allowzero", 0) != 0}});
  }
  const std::vector<arith::SizeExpr> shape = node.SizesInput(1);
  // Kiln's reshape copies the input's extent where the shape says 0, as ONNX does without
  // allowzero. With allowzero a 0 is a literal empty extent, so input and result hold no
  // elements: the result is an empty Constant of that shape.
  const auto is_zero = [](const arith::SizeExpr& size) { return size.as_int() == 0; };
  if (node.Int("allowzero", 0) != 0 && std::any_of(shape.begin(), shape.end(), is_zero)) {
    const std::vector<int64_t> extents = node.ConstantInts(1);
    const std::vector<int64_t> input = node.InputShape(0);
    KILN_CHECK(
        Product(input, 0, input.size()) == 0 && std::count(extents.begin(), extents.end(), -1) == 0,
        ValueError)
        << node.Describe() << ": allowzero=1 with a 0 in the shape needs an empty input and no -1";
    return ir::Constant(FilledTensor(extents, node.InputDType(0), 0.0));
  }
  return MakeCall("reshape", {node.Input(0)}, {{"newshape", SizesAttr(shape)}});
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
  if (node.opset() >= 13 && node.IsRunTimeValue(1)) {
    // The sections are the split input's values (a negative one is refused when read).
    const std::vector<arith::SizeExpr> sizes =
        node.NewSizes(static_cast<size_t>(node.InputExtent(1, 0)));
    return MakeCall("split", {DefineSizes(node.Input(0), node.Input(1), sizes)},
                    {{"axis", axis}, {"sections", SizesAttr(sizes)}});
  }
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

/// Slice's ends (input 2, from opset 10). strided_slice's bounds are static, so an end computed
/// from symbolic sizes is taken only where the analyzer proves it reaches the end of its axis
/// (x[:, :x.shape[1]] exports so): it then slices to the end, as INT64_MAX does. nullopt for
/// another: the slice is then read at run time (DynamicSlice).
std::optional<std::vector<int64_t>> SliceEnds(const NodeContext& node,
                                              const std::optional<std::vector<int64_t>>& axes,
                                              const std::optional<std::vector<int64_t>>& steps) {
  if (node.SymbolicInput(2) == nullptr) return node.ConstantInts(2);
  const std::vector<arith::SizeExpr> ends = node.SizesInput(2);
  const std::vector<arith::SizeExpr> dims = node.InputShapeExprs(0);
  KILN_CHECK((!axes.has_value() || axes->size() == ends.size()) &&
                 (!steps.has_value() || steps->size() == ends.size()),
             ValueError)
      << node.Describe() << ": axes and steps must have as many entries as ends";
  std::vector<int64_t> out;
  for (size_t i = 0; i < ends.size(); ++i) {
    if (std::optional<int64_t> end = ends[i].as_int()) {
      out.push_back(*end);
      continue;
    }
    const int64_t axis = NormalizeAxis(axes.has_value() ? (*axes)[i] : static_cast<int64_t>(i),
                                       static_cast<int64_t>(dims.size()));
    const bool forward = !steps.has_value() || (*steps)[i] > 0;
    if (!forward || !node.analyzer().CanProveGE(ends[i], dims[axis])) return std::nullopt;
    out.push_back(std::numeric_limits<int64_t>::max());
  }
  return out;
}

/// Slice with a bound known only at run time: slice_sizes computes the result's shape then, and
/// dynamic_slice reads the same bounds. Omitted axes and steps are the defaults, as constants.
ir::Expr DynamicSlice(const NodeContext& node) {
  const size_t rank = node.InputRank(0);
  const int64_t count = node.InputExtent(1, 0);
  auto bound = [&](size_t index, const std::function<int64_t(int64_t)>& fallback) -> ir::Expr {
    if (node.HasInput(index)) return AsInt64(node.Input(index), node.InputDType(index));
    std::vector<int64_t> values;
    for (int64_t i = 0; i < count; ++i) values.push_back(fallback(i));
    return ir::Constant(Int64Tensor(values));
  };
  const ir::Expr starts = bound(1, nullptr);
  const ir::Expr ends = bound(2, nullptr);
  const ir::Expr axes = bound(3, [](int64_t i) { return i; });
  const ir::Expr steps = bound(4, [](int64_t) { return int64_t{1}; });
  const std::vector<arith::SizeExpr> sizes = node.NewSizes(rank);
  const ir::Expr values = MakeCall("slice_sizes", {node.Input(0), starts, ends, axes, steps});
  return MakeCall("dynamic_slice", {DefineSizes(node.Input(0), values, sizes), starts, axes, steps},
                  {{"sizes", SizesAttr(sizes)}});
}

ir::Expr ConvertSlice(const NodeContext& node) {
  const bool attrs = node.opset() < 10;
  // Bounds fed or computed at run time are read then; only ends reaching the end of their axis
  // stay static when computed from symbolic sizes (SliceEnds).
  const auto run_time = [&](size_t index) {
    return node.IsRunTimeValue(index) || (index != 2 && node.SymbolicInput(index) != nullptr);
  };
  if (!attrs && (run_time(1) || run_time(2) || run_time(3) || run_time(4))) {
    return DynamicSlice(node);
  }
  const std::optional<std::vector<int64_t>> axes = AttrOrInput(node, "axes", 10, 3);
  std::optional<std::vector<int64_t>> steps;
  if (!attrs && node.HasInput(4)) steps = node.ConstantInts(4);
  std::optional<std::vector<int64_t>> begin = attrs ? node.Ints("starts") : node.ConstantInts(1);
  std::optional<std::vector<int64_t>> end =
      attrs ? node.Ints("ends") : SliceEnds(node, axes, steps);
  if (!attrs && !end.has_value()) return DynamicSlice(node);
  KILN_CHECK(begin.has_value() && end.has_value(), ValueError)
      << node.Describe() << " needs starts and ends";
  return MakeCall("strided_slice", {node.Input(0)},
                  {{"begin", ToArray(*begin)},
                   {"end", ToArray(*end)},
                   {"axes", AxesOrNone(axes)},
                   {"strides", AxesOrNone(steps)}});
}

ir::Expr ConvertGather(const NodeContext& node) {
  return MakeCall("take", {node.Input(0), node.Input(1)}, {{"axis", node.Int("axis", 0)}});
}

ir::Expr ConvertSqueeze(const NodeContext& node) {
  if (node.opset() >= 13 && node.IsRunTimeValue(1)) {
    return ReshapeToRunTimeSizes(node, node.Input(0), node.InputRank(0) - node.InputExtent(1, 0),
                                 "squeeze_sizes", node.Input(1));
  }
  return MakeCall("squeeze", {node.Input(0)},
                  {{"axes", AxesOrNone(AttrOrInput(node, "axes", 13, 1))}});
}

ir::Expr ConvertUnsqueeze(const NodeContext& node) {
  if (node.opset() >= 13 && node.IsRunTimeValue(1)) {
    return ReshapeToRunTimeSizes(node, node.Input(0), node.InputRank(0) + node.InputExtent(1, 0),
                                 "unsqueeze_sizes", node.Input(1));
  }
  std::optional<std::vector<int64_t>> axes = AttrOrInput(node, "axes", 13, 1);
  KILN_CHECK(axes.has_value(), ValueError) << node.Describe() << " needs axes";
  return MakeCall("unsqueeze", {node.Input(0)}, {{"axes", ToArray(*axes)}});
}

ir::Expr ConvertExpand(const NodeContext& node) {
  if (node.IsRunTimeValue(1)) {
    const std::vector<arith::SizeExpr> sizes = node.NewSizes(
        std::max<size_t>(node.InputRank(0), static_cast<size_t>(node.InputExtent(1, 0))));
    const ir::Expr values = MakeCall("expand_sizes", {node.Input(0), node.Input(1)});
    // Where the input's extent is static and not 1, the result's is that extent (expand_sizes
    // refuses anything else), so the shape says so rather than leave a size nothing reads.
    std::vector<arith::SizeExpr> shape = sizes;
    const std::vector<std::optional<int64_t>> extents = node.InputExtents(0);
    for (size_t i = 0; i < extents.size(); ++i) {
      const size_t at = shape.size() - extents.size() + i;
      if (extents[i].has_value() && *extents[i] != 1) shape[at] = arith::IntImm(*extents[i]);
    }
    return MakeCall("expand", {DefineSizes(node.Input(0), values, sizes)},
                    {{"shape", SizesAttr(shape)}});
  }
  return MakeCall("expand", {node.Input(0)}, {{"shape", SizesAttr(node.SizesInput(1))}});
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
