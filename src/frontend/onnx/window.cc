#include "window.h"

#include <kiln/ffi/error.h>
#include <kiln/transform/infer_type.h>

#include <algorithm>
#include <utility>

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// Windows of 1-D inputs are lifted to this rank (LiftWindow1D).
constexpr size_t kLiftedRank = 2;

/// ONNX's SAME padding: the output has ceil(in / stride) elements, and the odd pixel of the
/// total padding goes at the end (SAME_UPPER) or the beginning (SAME_LOWER).
std::vector<int64_t> SamePads(const std::vector<int64_t>& spatial, const Window& window,
                              bool upper) {
  const size_t rank = spatial.size();
  std::vector<int64_t> pads(2 * rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t stride = window.strides[i];
    const int64_t out = (spatial[i] + stride - 1) / stride;
    const int64_t extent = (window.kernel[i] - 1) * window.dilations[i] + 1;
    const int64_t total = std::max<int64_t>((out - 1) * stride + extent - spatial[i], 0);
    pads[i] = upper ? total / 2 : total - total / 2;
    pads[i + rank] = total - pads[i];
  }
  return pads;
}

/// `value` with an extent-1 axis inserted at 2, typed (NodeContext needs checked types).
ir::Expr InsertUnitAxis(const ir::Expr& value) {
  ir::Expr lifted = MakeCall("unsqueeze", {value}, {{"axes", Array<int64_t>{2}}});
  transform::InferExprType(lifted);
  return lifted;
}

/// The node's window attributes for the (1, W) window equal to its 1-D one.
onnx::NodeProto LiftAttributes(const onnx::NodeProto& node) {
  onnx::NodeProto lifted = node;
  for (onnx::AttributeProto& attr : *lifted.mutable_attribute()) {
    const std::string& name = attr.name();
    std::vector<int64_t> values(attr.ints().begin(), attr.ints().end());
    if (name == "kernel_shape" || name == "strides" || name == "dilations") {
      values.insert(values.begin(), 1);
    } else if (name == "output_padding") {
      values.insert(values.begin(), 0);
    } else if (name == "output_shape") {
      values.insert(values.end() - std::min<size_t>(values.size(), 1), 1);
    } else if (name == "pads" && values.size() == 2) {
      values = {0, values[0], 0, values[1]};
    } else {
      continue;
    }
    attr.clear_ints();
    for (int64_t value : values) attr.add_ints(value);
  }
  return lifted;
}

}  // namespace

Converter LiftWindow1D(Converter convert_2d, bool lift_weight) {
  return [convert_2d = std::move(convert_2d), lift_weight](const NodeContext& node) {
    if (node.InputRank(0) != kLiftedRank + 1) return convert_2d(node);
    std::vector<NodeInput> inputs;
    for (int i = 0; i < node.proto().input_size(); ++i) {
      const bool lift = i == 0 || (i == 1 && lift_weight);
      inputs.push_back({!node.HasInput(i) ? ir::Expr()
                        : lift            ? InsertUnitAxis(node.Input(i))
                                          : node.Input(i),
                        std::nullopt, std::nullopt, nullptr});
    }
    const onnx::NodeProto proto = LiftAttributes(node.proto());  // the context refers to it
    const NodeContext lifted(proto, node.opset(), std::move(inputs), node.sizes());
    return MakeCall("squeeze", {convert_2d(lifted)}, {{"axes", Array<int64_t>{2}}});
  };
}

std::vector<int64_t> WindowInts(const NodeContext& node, const std::string& name, int64_t fill,
                                size_t size) {
  std::vector<int64_t> values = node.Ints(name).value_or(std::vector<int64_t>(size, fill));
  KILN_CHECK(values.size() == size, ValueError)
      << node.Describe() << ": attribute '" << name << "' needs " << size << " values, not "
      << values.size();
  return values;
}

size_t SpatialRank(const NodeContext& node, size_t max_rank) {
  const size_t rank = node.InputRank(0);
  KILN_CHECK(rank >= 4 && rank <= max_rank + 2, NotImplementedError)
      << node.Describe() << ": only 1-D to " << max_rank << "-D windows (3-D to " << max_rank + 2
      << "-D inputs) are supported, the input has rank " << rank;
  return rank - 2;
}

std::vector<int64_t> SpatialShape(const NodeContext& node) {
  return node.InputShape(0, 2, node.InputRank(0));
}

Window ForwardWindow(const NodeContext& node, size_t rank, std::vector<int64_t> kernel) {
  Window window;
  window.kernel = std::move(kernel);
  KILN_CHECK(window.kernel.size() == rank, ValueError)
      << node.Describe() << ": the kernel needs " << rank << " extents";
  window.strides = WindowInts(node, "strides", 1, rank);
  window.dilations = WindowInts(node, "dilations", 1, rank);
  const std::string auto_pad = node.Str("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    window.pads = WindowInts(node, "pads", 0, 2 * rank);
  } else if (auto_pad == "VALID") {
    window.pads.assign(2 * rank, 0);
  } else {
    KILN_CHECK(auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER", ValueError)
        << node.Describe() << ": unknown auto_pad '" << auto_pad
        << "' (NOTSET, VALID, SAME_UPPER, SAME_LOWER)";
    window.pads = SamePads(SpatialShape(node), window, auto_pad == "SAME_UPPER");
  }
  return window;
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
