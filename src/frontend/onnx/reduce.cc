// Reductions: ReduceSum/Mean/Max/Min/Prod and ArgMax/ArgMin.
#include <kiln/ffi/error.h>

#include <string>

#include "converter.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// Reduces over the attribute axes (or every axis when there are none).
ir::Expr ReduceWithAttrAxes(const NodeContext& node, const std::string& op) {
  std::optional<std::vector<int64_t>> axes = node.Ints("axes");
  return MakeCall(op, {node.Input(0)},
                  {{"axis", axes.has_value() ? Any(ToArray(*axes)) : Any(nullptr)},
                   {"keepdims", node.Int("keepdims", 1) != 0}});
}

// ReduceSum-13 takes axes as an optional constant input; without axes it reduces everything,
// or nothing when noop_with_empty_axes is set (Kiln's empty axis list).
ir::Expr ReduceWithInputAxes(const NodeContext& node, const std::string& op) {
  std::vector<int64_t> axes;
  if (node.HasInput(1)) axes = node.ConstantInts(1);
  const bool reduce_all = axes.empty() && node.Int("noop_with_empty_axes", 0) == 0;
  return MakeCall(op, {node.Input(0)},
                  {{"axis", reduce_all ? Any(nullptr) : Any(ToArray(axes))},
                   {"keepdims", node.Int("keepdims", 1) != 0}});
}

ir::Expr ArgReduce(const NodeContext& node, const std::string& op) {
  KILN_CHECK(node.Int("select_last_index", 0) == 0, NotImplementedError)
      << node.Describe() << ": select_last_index=1 is not supported";
  return MakeCall(op, {node.Input(0)},
                  {{"axis", node.Int("axis", 0)}, {"keepdims", node.Int("keepdims", 1) != 0}});
}

struct ReduceOp {
  const char* onnx;
  const char* kiln;
};

constexpr ReduceOp kReduceOps[] = {{"ReduceSum", "sum"},
                                   {"ReduceMean", "mean"},
                                   {"ReduceMax", "max"},
                                   {"ReduceMin", "min"},
                                   {"ReduceProd", "prod"}};

}  // namespace

void AddReduceConverters(std::vector<ConverterEntry>& table) {
  for (const ReduceOp& op : kReduceOps) {
    // Only ReduceSum moved axes to an input at 13; the others follow at opset 18.
    const bool sum = std::string(op.onnx) == "ReduceSum";
    table.push_back(
        {op.onnx, kMinOpset, sum ? 12 : kMaxOpset, [kiln_op = op.kiln](const NodeContext& node) {
           return ReduceWithAttrAxes(node, kiln_op);
         }});
    if (sum) {
      table.push_back({op.onnx, 13, kMaxOpset, [kiln_op = op.kiln](const NodeContext& node) {
                         return ReduceWithInputAxes(node, kiln_op);
                       }});
    }
  }
  table.push_back({"ArgMax", kMinOpset, kMaxOpset,
                   [](const NodeContext& node) { return ArgReduce(node, "argmax"); }});
  table.push_back({"ArgMin", kMinOpset, kMaxOpset,
                   [](const NodeContext& node) { return ArgReduce(node, "argmin"); }});
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
