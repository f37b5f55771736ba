// Loss ONNX ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (a log_softmax, then the
// same loss), composed from gather_elements, take and reductions.
#include <kiln/ffi/error.h>

#include <string>

#include "converter.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// -input[n, target[n, d...], d...], weighted by weight[target] when a weight is given; targets
/// equal to ignore_index contribute 0 and do not count towards the mean.
ir::Expr NllLoss(const NodeContext& node, const ir::Expr& input, DLDataType dtype,
                 const ir::Expr& target, DLDataType target_dtype, const ir::Expr& weight) {
  const std::string reduction = node.Str("reduction", "mean");
  KILN_CHECK(reduction == "none" || reduction == "sum" || reduction == "mean", ValueError)
      << node.Describe() << ": reduction must be none, sum or mean, not '" << reduction << "'";
  ir::Expr safe_target = target;
  ir::Expr kept;  // bool: the target is not ignore_index
  if (node.HasAttr("ignore_index")) {
    const auto ignored = static_cast<double>(node.Int("ignore_index", 0));
    kept = MakeCall("not_equal", {target, MakeScalar(ignored, target_dtype)});
    // Ignored targets may lie outside [0, C); any class in range gathers, then weighs 0.
    safe_target = MakeCall("where", {kept, target, MakeScalar(0, target_dtype)});
  }
  ir::Expr picked = MakeCall(
      "gather_elements",
      {input, MakeCall("unsqueeze", {safe_target}, {{"axes", Array<int64_t>{1}}})}, {{"axis", 1}});
  ir::Expr loss =
      MakeCall("negative", {MakeCall("squeeze", {picked}, {{"axes", Array<int64_t>{1}}})});
  ir::Expr weights;  // per element; undefined means all ones
  if (weight.defined()) weights = MakeCall("take", {weight, safe_target}, {{"axis", 0}});
  if (kept.defined()) {
    ir::Expr kept_weight = MakeCall("cast", {kept}, {{"dtype", String(DataTypeToString(dtype))}});
    weights = weights.defined() ? MakeCall("multiply", {weights, kept_weight}) : kept_weight;
  }
  if (weights.defined()) loss = MakeCall("multiply", {loss, weights});
  if (reduction == "none") return loss;
  auto total = [](const ir::Expr& value) {
    return MakeCall("sum", {value}, {{"axis", Any(nullptr)}, {"keepdims", false}});
  };
  if (reduction == "sum") return total(loss);
  if (!weights.defined())
    return MakeCall("mean", {loss}, {{"axis", Any(nullptr)}, {"keepdims", false}});
  return MakeCall("divide", {total(loss), total(weights)});
}

ir::Expr ConvertNegativeLogLikelihoodLoss(const NodeContext& node) {
  return NllLoss(node, node.Input(0), node.InputDType(0), node.Input(1), node.InputDType(1),
                 node.HasInput(2) ? node.Input(2) : ir::Expr());
}

// The second output, when the node names it, is the log-probabilities themselves.
ir::Expr ConvertSoftmaxCrossEntropyLoss(const NodeContext& node) {
  ir::Expr log_prob = MakeCall("nn.log_softmax", {node.Input(0)}, {{"axis", 1}});
  ir::Expr loss = NllLoss(node, log_prob, node.InputDType(0), node.Input(1), node.InputDType(1),
                          node.HasInput(2) ? node.Input(2) : ir::Expr());
  if (node.NumOutputs() < 2) return loss;
  return ir::Tuple({loss, log_prob});
}

}  // namespace

void AddLossConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "NegativeLogLikelihoodLoss", 12, kMaxOpset, ConvertNegativeLogLikelihoodLoss);
  AddConverter(table, "SoftmaxCrossEntropyLoss", 12, kMaxOpset, ConvertSoftmaxCrossEntropyLoss);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
