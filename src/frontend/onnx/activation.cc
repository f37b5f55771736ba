// ONNX activations and predicates that Kiln composes from core ops: Selu, Celu, ThresholdedRelu,
// HardSwish, Shrink, Softsign, PRelu, IsNaN, IsInf, and Hardmax.
#include <kiln/ffi/error.h>

#include <limits>

#include "converter.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

ir::Expr Scalar(const NodeContext& node, double value) {
  return MakeScalar(value, node.InputDType(0));
}

// gamma * (x > 0 ? x : alpha * (e^x - 1)) = gamma * elu(x, alpha).
ir::Expr ConvertSelu(const NodeContext& node) {
  const double alpha = node.Float("alpha", 1.67326319217681884765625);
  const double gamma = node.Float("gamma", 1.05070102214813232421875);
  return MakeCall("multiply",
                  {MakeCall("nn.elu", {node.Input(0)}, {{"alpha", alpha}}), Scalar(node, gamma)});
}

// max(0, x) + min(0, alpha * (e^(x/alpha) - 1)) = alpha * elu(x / alpha, 1).
ir::Expr ConvertCelu(const NodeContext& node) {
  const double alpha = node.Float("alpha", 1.0);
  KILN_CHECK(alpha != 0.0, ValueError) << node.Describe() << ": alpha must not be 0";
  ir::Expr scaled = MakeCall("divide", {node.Input(0), Scalar(node, alpha)});
  return MakeCall("multiply",
                  {MakeCall("nn.elu", {scaled}, {{"alpha", 1.0}}), Scalar(node, alpha)});
}

ir::Expr ConvertThresholdedRelu(const NodeContext& node) {
  const ir::Expr& x = node.Input(0);
  return MakeCall("where", {MakeCall("greater", {x, Scalar(node, node.Float("alpha", 1.0))}), x,
                            Scalar(node, 0.0)});
}

// x * hard_sigmoid(x) with ONNX's fixed alpha = 1/6, beta = 0.5: one op, which fuses into a
// convolution's epilogue.
ir::Expr ConvertHardSwish(const NodeContext& node) {
  return MakeCall("nn.hardswish", {node.Input(0)});
}

// x < -lambd: x + bias; x > lambd: x - bias; 0 between.
ir::Expr ConvertShrink(const NodeContext& node) {
  const ir::Expr& x = node.Input(0);
  const double lambd = node.Float("lambd", 0.5);
  const double bias = node.Float("bias", 0.0);
  ir::Expr above =
      MakeCall("where", {MakeCall("greater", {x, Scalar(node, lambd)}),
                         MakeCall("subtract", {x, Scalar(node, bias)}), Scalar(node, 0.0)});
  return MakeCall("where", {MakeCall("less", {x, Scalar(node, -lambd)}),
                            MakeCall("add", {x, Scalar(node, bias)}), above});
}

ir::Expr ConvertSoftsign(const NodeContext& node) {
  const ir::Expr& x = node.Input(0);
  return MakeCall("divide", {x, MakeCall("add", {MakeCall("abs", {x}), Scalar(node, 1.0)})});
}

// The slope broadcasts to x (unidirectionally, which numpy broadcasting includes).
ir::Expr ConvertPRelu(const NodeContext& node) {
  const ir::Expr& x = node.Input(0);
  return MakeCall("where", {MakeCall("less", {x, Scalar(node, 0.0)}),
                            MakeCall("multiply", {x, node.Input(1)}), x});
}

// NaN is the one value that differs from itself.
ir::Expr ConvertIsNaN(const NodeContext& node) {
  return MakeCall("not_equal", {node.Input(0), node.Input(0)});
}

ir::Expr ConvertIsInf(const NodeContext& node) {
  const ir::Expr& x = node.Input(0);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const bool positive = node.Int("detect_positive", 1) != 0;
  const bool negative = node.Int("detect_negative", 1) != 0;
  ir::Expr is_positive = MakeCall("equal", {x, Scalar(node, kInf)});
  ir::Expr is_negative = MakeCall("equal", {x, Scalar(node, -kInf)});
  if (positive && negative) return MakeCall("logical_or", {is_positive, is_negative});
  if (positive) return is_positive;
  if (negative) return is_negative;
  return MakeCall("logical_and", {is_positive, is_negative});  // never true
}

/// 1 at the first maximum along `axis`, 0 elsewhere: argmax compared with the positions.
ir::Expr HardmaxAlong(const ir::Expr& x, int64_t axis, int64_t extent, int64_t rank,
                      DLDataType dtype) {
  ir::Expr first_max = MakeCall("argmax", {x}, {{"axis", axis}, {"keepdims", true}});
  ir::Expr mask = MakeCall("equal", {first_max, AxisPositions(extent, axis, rank)});
  return MakeCall("cast", {mask}, {{"dtype", String(DataTypeToString(dtype))}});
}

// Before opset 13 the input is viewed as 2-D, (shape[:axis], shape[axis:]), as Softmax was.
// The positions compared with are a constant, so the extent along the axis must be static.
ir::Expr ConvertHardmax(const NodeContext& node) {
  const auto rank = static_cast<int64_t>(node.InputRank(0));
  const DLDataType dtype = node.InputDType(0);
  if (node.opset() >= 13) {
    const int64_t axis = NormalizeAxis(node.Int("axis", -1), rank);
    return HardmaxAlong(node.Input(0), axis, node.InputExtent(0, static_cast<size_t>(axis)), rank,
                        dtype);
  }
  const auto axis = static_cast<size_t>(NormalizeAxis(node.Int("axis", 1), rank));
  const std::vector<int64_t> trailing = node.InputShape(0, axis, static_cast<size_t>(rank));
  ir::Expr x = MakeCall("reshape", {node.Input(0)}, {{"newshape", MatrixNewShape(node, axis)}});
  return MakeCall("reshape", {HardmaxAlong(x, 1, Product(trailing, 0, trailing.size()), 2, dtype)},
                  {{"newshape", InputNewShape(node)}});
}

}  // namespace

void AddActivationConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "Selu", 6, kMaxOpset, ConvertSelu);
  AddConverter(table, "Celu", 12, kMaxOpset, ConvertCelu);
  AddConverter(table, "ThresholdedRelu", 10, kMaxOpset, ConvertThresholdedRelu);
  AddConverter(table, "HardSwish", 14, kMaxOpset, ConvertHardSwish);
  AddConverter(table, "Shrink", 9, kMaxOpset, ConvertShrink);
  AddConverter(table, "Softsign", 1, kMaxOpset, ConvertSoftsign);
  AddConverter(table, "PRelu", 7, kMaxOpset, ConvertPRelu);
  AddConverter(table, "IsNaN", 9, kMaxOpset, ConvertIsNaN);
  AddConverter(table, "IsInf", 10, kMaxOpset, ConvertIsInf);
  AddConverter(table, "Hardmax", 1, kMaxOpset, ConvertHardmax);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
