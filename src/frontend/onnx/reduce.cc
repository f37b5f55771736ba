// Reductions: ReduceSum/Mean/Max/Min/Prod and ArgMax/ArgMin.
#include <kiln/ffi/error.h>

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "converter.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// `op` over `data` along the attribute axes (every axis when there are none), keeping the
/// reduced dimensions as the node says unless `keepdims` overrides it.
ir::Expr ReduceAttrAxes(const NodeContext& node, const std::string& op, ir::Expr data,
                        std::optional<bool> keepdims = std::nullopt) {
  std::optional<std::vector<int64_t>> axes = node.Ints("axes");
  return MakeCall(op, {std::move(data)},
                  {{"axis", axes.has_value() ? Any(ToArray(*axes)) : Any(nullptr)},
                   {"keepdims", keepdims.value_or(node.Int("keepdims", 1) != 0)}});
}

ir::Expr ReduceWithAttrAxes(const NodeContext& node, const std::string& op) {
  return ReduceAttrAxes(node, op, node.Input(0));
}

ir::Expr Square(const ir::Expr& x) { return MakeCall("multiply", {x, x}); }

// log(sum(exp(x))) with the maximum taken out first, so that exp cannot overflow.
ir::Expr ReduceLogSumExp(const NodeContext& node) {
  const ir::Expr& x = node.Input(0);
  ir::Expr shifted = MakeCall("subtract", {x, ReduceAttrAxes(node, "max", x, true)});
  ir::Expr log_sum = MakeCall("log", {ReduceAttrAxes(node, "sum", MakeCall("exp", {shifted}))});
  return MakeCall("add", {log_sum, ReduceAttrAxes(node, "max", x)});
}

/// ReduceSum with axes fed at run time: reduce_sizes gives the kept-dims shape, sum_to reduces
/// to it, and a reshape drops the reduced axes unless keepdims.
ir::Expr ReduceWithRunTimeAxes(const NodeContext& node) {
  const bool keepdims = node.Int("keepdims", 1) != 0;
  const bool noop = node.Int("noop_with_empty_axes", 0) != 0;
  const size_t rank = node.InputRank(0);
  const ir::Expr& x = node.Input(0);
  const ir::Expr& axes = node.Input(1);
  auto sizes_of = [&](bool keep) {
    return MakeCall("reduce_sizes", {x, axes},
                    {{"keepdims", keep}, {"noop_with_empty_axes", noop}});
  };
  const std::vector<arith::SizeExpr> kept = node.NewSizes(rank);
  ir::Expr reduced =
      MakeCall("sum_to", {DefineSizes(x, sizes_of(true), kept)}, {{"shape", SizesAttr(kept)}});
  if (keepdims) return reduced;
  const auto count = static_cast<size_t>(node.InputExtent(1, 0));
  const std::vector<arith::SizeExpr> out =
      node.NewSizes(count == 0 ? (noop ? rank : 0) : rank - count);
  return MakeCall("reshape", {DefineSizes(reduced, sizes_of(false), out)},
                  {{"newshape", SizesAttr(out)}});
}

// ReduceSum-13 takes axes as an optional constant input; without axes it reduces everything,
// or nothing when noop_with_empty_axes is set (Kiln's empty axis list).
ir::Expr ReduceWithInputAxes(const NodeContext& node, const std::string& op) {
  if (node.IsRunTimeValue(1)) return ReduceWithRunTimeAxes(node);
  std::vector<int64_t> axes;
  if (node.HasInput(1)) axes = node.ConstantInts(1);
  const bool reduce_all = axes.empty() && node.Int("noop_with_empty_axes", 0) == 0;
  return MakeCall(op, {node.Input(0)},
                  {{"axis", reduce_all ? Any(nullptr) : Any(ToArray(axes))},
                   {"keepdims", node.Int("keepdims", 1) != 0}});
}

// Kiln's argmax/argmin pick the first extreme; select_last_index=1 picks the last, which is the
// first of the input reversed along the axis, counted back from the end.
ir::Expr ArgReduce(const NodeContext& node, const std::string& op) {
  const Map<String, Any> attrs{{"axis", node.Int("axis", 0)},
                               {"keepdims", node.Int("keepdims", 1) != 0}};
  if (node.Int("select_last_index", 0) == 0) return MakeCall(op, {node.Input(0)}, attrs);
  const int64_t axis = NormalizeAxis(node.Int("axis", 0), static_cast<int64_t>(node.InputRank(0)));
  ir::Expr reversed = MakeCall("strided_slice", {node.Input(0)},
                               {{"begin", Array<int64_t>{-1}},
                                {"end", Array<int64_t>{std::numeric_limits<int64_t>::min()}},
                                {"axes", Array<int64_t>{axis}},
                                {"strides", Array<int64_t>{-1}}});
  const int64_t last = node.InputExtent(0, static_cast<size_t>(axis)) - 1;
  return MakeCall("subtract", {MakeScalar(static_cast<double>(last), DLDataType{kDLInt, 64, 1}),
                               MakeCall(op, {reversed}, attrs)});
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
  // Reductions ONNX defines over a transformed input, composed from Kiln's.
  const std::pair<const char*, Converter> composites[] = {
      {"ReduceSumSquare",
       [](const NodeContext& node) { return ReduceAttrAxes(node, "sum", Square(node.Input(0))); }},
      {"ReduceL1",
       [](const NodeContext& node) {
         return ReduceAttrAxes(node, "sum", MakeCall("abs", {node.Input(0)}));
       }},
      {"ReduceL2",
       [](const NodeContext& node) {
         return MakeCall("sqrt", {ReduceAttrAxes(node, "sum", Square(node.Input(0)))});
       }},
      {"ReduceLogSum",
       [](const NodeContext& node) {
         return MakeCall("log", {ReduceAttrAxes(node, "sum", node.Input(0))});
       }},
      {"ReduceLogSumExp", ReduceLogSumExp}};
  for (const auto& [op_type, convert] : composites) {
    table.push_back({op_type, kMinOpset, kMaxOpset, convert});
  }
  table.push_back({"ArgMax", kMinOpset, kMaxOpset,
                   [](const NodeContext& node) { return ArgReduce(node, "argmax"); }});
  table.push_back({"ArgMin", kMinOpset, kMaxOpset,
                   [](const NodeContext& node) { return ArgReduce(node, "argmin"); }});
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
