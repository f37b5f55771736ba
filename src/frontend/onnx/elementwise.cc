// Elementwise ONNX ops: unary math and activations, binary and variadic arithmetic, logic,
// comparisons, Where, Clip, Cast, and the ops that are the identity at inference.
#include <kiln/ffi/error.h>

#include <algorithm>
#include <limits>
#include <string>

#include "converter.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// (ONNX op, Kiln op, first opset defining the ONNX op's current behaviour).
struct OpPair {
  const char* onnx;
  const char* kiln;
  int64_t since;
};

constexpr OpPair kUnaryOps[] = {
    {"Relu", "nn.relu", 6},    {"Sigmoid", "sigmoid", 6},
    {"Tanh", "tanh", 6},       {"Exp", "exp", 6},
    {"Log", "log", 6},         {"Sqrt", "sqrt", 6},
    {"Abs", "abs", 6},         {"Neg", "negative", 6},
    {"Erf", "erf", 9},         {"Floor", "floor", 6},
    {"Ceil", "ceil", 6},       {"Reciprocal", "reciprocal", 6},
    {"Not", "logical_not", 1}, {"Softplus", "nn.softplus", 1},
    {"Round", "round", 11},    {"Sign", "sign", 9},
    {"Sin", "sin", 7},         {"Cos", "cos", 7},
    {"Tan", "tan", 7},         {"Asin", "asin", 7},
    {"Acos", "acos", 7},       {"Atan", "atan", 7},
    {"Sinh", "sinh", 9},       {"Cosh", "cosh", 9},
    {"Asinh", "asinh", 9},     {"Acosh", "acosh", 9},
    {"Atanh", "atanh", 9},     {"Det", "det", 11},
};

constexpr OpPair kBinaryOps[] = {
    {"Add", "add", 7},
    {"Sub", "subtract", 7},
    {"Mul", "multiply", 7},
    {"Div", "divide", 7},

    {"And", "logical_and", 7},
    {"Or", "logical_or", 7},
    {"Xor", "logical_xor", 7},
    {"Equal", "equal", 7},
    {"Less", "less", 7},
    {"Greater", "greater", 7},
    {"LessOrEqual", "less_equal", 12},
    {"GreaterOrEqual", "greater_equal", 12},
};

/// Variadic ONNX ops that fold their inputs left to right with a binary Kiln op.
constexpr OpPair kVariadicOps[] = {{"Max", "maximum", 6}, {"Min", "minimum", 6}, {"Sum", "add", 6}};

ir::Expr Chain(const std::string& op, const std::vector<ir::Expr>& inputs) {
  ir::Expr result = inputs.at(0);
  for (size_t i = 1; i < inputs.size(); ++i) result = MakeCall(op, {result, inputs[i]});
  return result;
}

ir::Expr ConvertMean(const NodeContext& node) {
  const std::vector<ir::Expr> inputs = node.Inputs();
  ir::Expr sum = Chain("add", inputs);
  return MakeCall("divide",
                  {sum, MakeScalar(static_cast<double>(inputs.size()), node.InputDType(0))});
}

// From opset 12 the exponent may have another type than the base; the result has the base's,
// so Kiln's power (one dtype) gets the exponent cast to it.
ir::Expr ConvertPow(const NodeContext& node) {
  ir::Expr exponent = node.Input(1);
  const DLDataType dtype = node.InputDType(0);
  if (!DataTypeEqual(dtype, node.InputDType(1))) {
    exponent = MakeCall("cast", {exponent}, {{"dtype", String(DataTypeToString(dtype))}});
  }
  return MakeCall("power", {node.Input(0), exponent});
}

// fmod=1 keeps the dividend's sign (C fmod); the default follows the divisor's (Python's %).
ir::Expr ConvertMod(const NodeContext& node) {
  return MakeCall("mod", {node.Input(0), node.Input(1)}, {{"fmod", node.Int("fmod", 0) != 0}});
}

ir::Expr ConvertBitShift(const NodeContext& node) {
  const std::string direction = node.Str("direction", "");
  KILN_CHECK(direction == "LEFT" || direction == "RIGHT", ValueError)
      << node.Describe() << ": direction must be LEFT or RIGHT, not '" << direction << "'";
  return MakeCall(direction == "LEFT" ? "left_shift" : "right_shift",
                  {node.Input(0), node.Input(1)});
}

ir::Expr ConvertLeakyRelu(const NodeContext& node) {
  return MakeCall("nn.leaky_relu", {node.Input(0)}, {{"alpha", node.Float("alpha", 0.01)}});
}

ir::Expr ConvertElu(const NodeContext& node) {
  return MakeCall("nn.elu", {node.Input(0)}, {{"alpha", node.Float("alpha", 1.0)}});
}

ir::Expr ConvertHardSigmoid(const NodeContext& node) {
  return MakeCall("nn.hard_sigmoid", {node.Input(0)},
                  {{"alpha", node.Float("alpha", 0.2)}, {"beta", node.Float("beta", 0.5)}});
}

ir::Expr ClipCall(const NodeContext& node, double min, double max) {
  return MakeCall("clip", {node.Input(0)}, {{"a_min", min}, {"a_max", max}});
}

// Before opset 11 the bounds are attributes, defaulting to the float range.
ir::Expr ConvertClipAttrs(const NodeContext& node) {
  constexpr double kMax = std::numeric_limits<float>::max();
  return ClipCall(node, node.Float("min", -kMax), node.Float("max", kMax));
}

double OptionalScalarInput(const NodeContext& node, size_t index, double absent) {
  if (!node.HasInput(index)) return absent;
  const std::vector<double> values = node.ConstantFloats(index);
  KILN_CHECK(values.size() == 1, ValueError)
      << node.Describe() << ": input " << index << " must hold one value, not " << values.size();
  return values[0];
}

bool IsComputedInput(const NodeContext& node, size_t index) {
  return node.HasInput(index) && node.Input(index).as<ir::ConstantObj>() == nullptr;
}

// From opset 11 the bounds are optional scalar inputs. Constant bounds become clip's
// attributes; computed ones (a graph input, say) clip as ONNX defines it, min(max(x, lo), hi).
ir::Expr ConvertClipInputs(const NodeContext& node) {
  if (IsComputedInput(node, 1) || IsComputedInput(node, 2)) {
    ir::Expr out = node.Input(0);
    if (node.HasInput(1)) out = MakeCall("maximum", {out, node.Input(1)});
    if (node.HasInput(2)) out = MakeCall("minimum", {out, node.Input(2)});
    return out;
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  return ClipCall(node, OptionalScalarInput(node, 1, -kInf), OptionalScalarInput(node, 2, kInf));
}

ir::Expr ConvertCast(const NodeContext& node) {
  const DLDataType dtype =
      DTypeFromOnnx(static_cast<int32_t>(node.Int("to", 0)), node.Describe() + "'s 'to'");
  return MakeCall("cast", {node.Input(0)}, {{"dtype", String(DataTypeToString(dtype))}});
}

// CastLike (opset 15) casts to the type of its second input.
ir::Expr ConvertCastLike(const NodeContext& node) {
  return MakeCall("cast", {node.Input(0)},
                  {{"dtype", String(DataTypeToString(node.InputDType(1)))}});
}

ir::Expr ConvertWhere(const NodeContext& node) {
  return MakeCall("where", {node.Input(0), node.Input(1), node.Input(2)});
}

// Identity: the value passes through unchanged.
ir::Expr ConvertIdentity(const NodeContext& node) {
  KILN_CHECK(node.NumOutputs() == 1, NotImplementedError)
      << node.Describe() << ": only the first output is supported (inference)";
  return node.Input(0);
}

// Dropout at inference passes the value through and masks nothing (an all-true mask). From
// opset 12 a training_mode input may ask for training, whose random mask Kiln does not draw,
// unless the ratio is 0: then training drops nothing either.
ir::Expr ConvertDropout(const NodeContext& node) {
  if (node.opset() >= 12 && node.HasInput(2)) {
    const std::vector<int64_t> training = node.ConstantInts(2);
    const bool training_on = training.size() != 1 || training[0] != 0;
    const bool drops_nothing =
        !training_on || (node.HasInput(1) && node.ConstantFloats(1) == std::vector<double>{0.0});
    KILN_CHECK(drops_nothing, NotImplementedError)
        << node.Describe() << ": training_mode with a non-zero ratio is not supported "
        << "(inference only)";
  }
  if (node.NumOutputs() <= 1) return node.Input(0);
  const DLDataType mask_dtype = node.opset() >= 10 ? DLDataType{kDLUInt, 1, 1} : node.InputDType(0);
  return ir::Tuple(
      {node.Input(0), ir::Constant(FilledTensor(node.InputShape(0), mask_dtype, 1.0))});
}

}  // namespace

void AddElementwiseConverters(std::vector<ConverterEntry>& table) {
  for (const OpPair& op : kUnaryOps) {
    AddConverter(table, op.onnx, op.since, kMaxOpset, [kiln_op = op.kiln](const NodeContext& node) {
      return MakeCall(kiln_op, {node.Input(0)});
    });
  }
  for (const OpPair& op : kBinaryOps) {
    AddConverter(table, op.onnx, op.since, kMaxOpset, [kiln_op = op.kiln](const NodeContext& node) {
      return MakeCall(kiln_op, {node.Input(0), node.Input(1)});
    });
  }
  for (const OpPair& op : kVariadicOps) {
    AddConverter(table, op.onnx, op.since, kMaxOpset, [kiln_op = op.kiln](const NodeContext& node) {
      return Chain(kiln_op, node.Inputs());
    });
  }
  AddConverter(table, "Mean", 6, kMaxOpset, ConvertMean);
  AddConverter(table, "Pow", 7, kMaxOpset, ConvertPow);
  AddConverter(table, "Mod", 10, kMaxOpset, ConvertMod);
  AddConverter(table, "BitShift", 11, kMaxOpset, ConvertBitShift);
  AddConverter(table, "LeakyRelu", 6, kMaxOpset, ConvertLeakyRelu);
  AddConverter(table, "Elu", 6, kMaxOpset, ConvertElu);
  AddConverter(table, "HardSigmoid", 6, kMaxOpset, ConvertHardSigmoid);
  table.push_back({"Clip", kMinOpset, 10, ConvertClipAttrs});
  AddConverter(table, "Clip", 11, kMaxOpset, ConvertClipInputs);
  AddConverter(table, "Cast", 6, kMaxOpset, ConvertCast);
  AddConverter(table, "CastLike", 15, kMaxOpset, ConvertCastLike);
  AddConverter(table, "Where", 9, kMaxOpset, ConvertWhere);
  AddConverter(table, "Identity", 1, kMaxOpset, ConvertIdentity);
  AddConverter(table, "Dropout", 7, kMaxOpset, ConvertDropout);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
