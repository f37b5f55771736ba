#include "shape_propagation.h"

#include <kiln/ffi/error.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "custom_domain.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

using arith::IntImm;
using arith::SizeExpr;
using MaybeValue = std::optional<ShapeValue>;
using MaybeExpr = std::optional<SizeExpr>;

constexpr DLDataType kInt64{kDLInt, 64, 1};
constexpr DLDataType kBool{kDLUInt, 1, 1};

// ---------------------------------------------------------------- reading the node

/// Every given input of the node as a shape value; nullopt when one is not.
std::optional<std::vector<ShapeValue>> Operands(const NodeContext& node) {
  std::vector<ShapeValue> operands;
  for (size_t i = 0; i < static_cast<size_t>(node.proto().input_size()); ++i) {
    if (!node.HasInput(i)) continue;
    MaybeValue operand = node.InputShapeValue(i);
    if (!operand.has_value()) return std::nullopt;
    operands.push_back(std::move(*operand));
  }
  return operands;
}

/// The integers of parameter `name`: its attribute before opset `input_since`, its constant
/// input `index` from then on; `absent` when the node gives neither, nullopt when the input is
/// not constant.
std::optional<std::vector<int64_t>> IntsParam(const NodeContext& node, const char* name,
                                              int64_t input_since, size_t index,
                                              std::optional<std::vector<int64_t>> absent) {
  if (node.opset() < input_since) {
    std::optional<std::vector<int64_t>> attr = node.Ints(name);
    return attr.has_value() ? attr : absent;
  }
  if (!node.HasInput(index)) return absent;
  std::optional<Tensor> value = node.TryConstantInput(index);
  if (!value.has_value()) return std::nullopt;
  return TensorAsInts(*value);
}

/// Whether `axes` names the one axis of a rank-1 tensor (0, or -1 from the end).
bool IsFirstAxis(const std::optional<std::vector<int64_t>>& axes) {
  return axes.has_value() && axes->size() == 1 && ((*axes)[0] == 0 || (*axes)[0] == -1);
}

/// Whether the node's `axes` (an attribute before opset `input_since`, input 1 from then on)
/// name the one axis of the rank-1 side; leaving them out means every axis when
/// `absent_is_all`.
bool AxesAreFirst(const NodeContext& node, int64_t input_since, bool absent_is_all) {
  const std::vector<int64_t> all{0};
  return IsFirstAxis(
      IntsParam(node, "axes", input_since, 1, absent_is_all ? std::optional(all) : std::nullopt));
}

// ---------------------------------------------------------------- elementwise

using ElementOp = std::function<MaybeExpr(const std::vector<SizeExpr>& args)>;
using PairOp = std::function<MaybeExpr(const SizeExpr& a, const SizeExpr& b)>;

/// `op` applied elementwise to `operands` broadcast as ONNX broadcasts ranks 0 and 1 (an operand
/// of one element repeats; the result is a scalar when every operand is), giving `dtype`;
/// nullopt when the lengths do not broadcast or `op` cannot decide an element.
MaybeValue Elementwise(const std::vector<ShapeValue>& operands, DLDataType dtype,
                       const ElementOp& op) {
  std::optional<size_t> length;
  bool scalar = true;
  for (const ShapeValue& operand : operands) {
    scalar = scalar && operand.scalar;
    const size_t size = operand.elements.size();
    if (size == 1) continue;
    if (length.has_value() && *length != size) return std::nullopt;
    length = size;
  }
  ShapeValue out{{}, scalar, dtype};
  for (size_t i = 0; i < length.value_or(1); ++i) {
    std::vector<SizeExpr> args;
    args.reserve(operands.size());
    for (const ShapeValue& operand : operands) {
      args.push_back(operand.elements.size() == 1 ? operand.elements[0] : operand.elements[i]);
    }
    MaybeExpr element = op(args);
    if (!element.has_value()) return std::nullopt;
    out.elements.push_back(*element);
  }
  return out;
}

/// The node's inputs combined elementwise by `op`, left to right (one input or several: Min and
/// Max are variadic), giving `dtype` (the first input's when not given).
MaybeValue Fold(const NodeContext& node, const PairOp& op,
                std::optional<DLDataType> dtype = std::nullopt) {
  std::optional<std::vector<ShapeValue>> operands = Operands(node);
  if (!operands.has_value() || operands->empty()) return std::nullopt;
  return Elementwise(*operands, dtype.value_or(operands->front().dtype),
                     [&op](const std::vector<SizeExpr>& args) {
                       MaybeExpr result = args[0];
                       for (size_t i = 1; i < args.size() && result.has_value(); ++i) {
                         result = op(*result, args[i]);
                       }
                       return result;
                     });
}

/// The node's one input mapped elementwise by `op` (Fold of a single operand).
MaybeValue Map(const NodeContext& node, const std::function<MaybeExpr(const SizeExpr&)>& op,
               std::optional<DLDataType> dtype = std::nullopt) {
  if (node.proto().input_size() != 1) return std::nullopt;
  std::optional<std::vector<ShapeValue>> operands = Operands(node);
  if (!operands.has_value() || operands->size() != 1) return std::nullopt;
  return Elementwise(*operands, dtype.value_or(operands->front().dtype),
                     [&op](const std::vector<SizeExpr>& args) { return op(args[0]); });
}

/// Whether input 0 holds integers, not floats (which hold integers here, but divide exactly).
bool HasIntegerType(const NodeContext& node) { return node.InputDType(0).code != kDLFloat; }

/// a / b as ONNX's Div computes it: truncating for integers, exact for floats (where the
/// quotient must be an integer to stay a shape value). Truncation is floor division where the
/// quotient is >= 0, which sizes make the common case; nullopt where it cannot be written.
MaybeExpr Divide(const SizeExpr& a, const SizeExpr& b, bool integer,
                 const arith::Analyzer& analyzer) {
  const std::optional<int64_t> ca = a.as_int();
  const std::optional<int64_t> cb = b.as_int();
  if (cb == 0 || (ca == std::numeric_limits<int64_t>::min() && cb == -1)) return std::nullopt;
  if (ca.has_value() && cb.has_value()) {
    if (!integer && *ca % *cb != 0) return std::nullopt;
    return IntImm(*ca / *cb);  // C++ truncates, as ONNX's integer Div
  }
  const bool floors = analyzer.CanProveGE(a, IntImm(0)) && analyzer.CanProveGT(b, IntImm(0));
  if (integer ? floors : cb.has_value() && analyzer.CanProveDivisible(a, *cb)) {
    return arith::FloorDiv(a, b);
  }
  return std::nullopt;
}

/// a mod b as ONNX's Mod computes it: the divisor's sign (floormod) by default, the dividend's
/// (C's fmod) with fmod=1, which floormod equals for a >= 0 < b.
MaybeExpr Modulo(const SizeExpr& a, const SizeExpr& b, bool fmod, const arith::Analyzer& analyzer) {
  const std::optional<int64_t> ca = a.as_int();
  const std::optional<int64_t> cb = b.as_int();
  if (cb == 0 || (ca == std::numeric_limits<int64_t>::min() && cb == -1)) return std::nullopt;
  if (fmod && ca.has_value() && cb.has_value()) return IntImm(*ca % *cb);
  const bool nonzero = analyzer.CanProveGT(b, IntImm(0)) || analyzer.CanProveLT(b, IntImm(0));
  const bool same = analyzer.CanProveGE(a, IntImm(0)) && analyzer.CanProveGT(b, IntImm(0));
  if (fmod ? same : nonzero) return arith::FloorMod(a, b);
  return std::nullopt;
}

/// 1 where the analyzer proves a == b, 0 where it proves a != b, nullopt where it cannot tell.
MaybeExpr Equals(const SizeExpr& a, const SizeExpr& b, const arith::Analyzer& analyzer) {
  if (analyzer.CanProveEqual(a, b)) return IntImm(1);
  if (analyzer.CanProveGT(a, b) || analyzer.CanProveLT(a, b)) return IntImm(0);
  return std::nullopt;
}

// ---------------------------------------------------------------- the ops

MaybeValue EvaluateShape(const NodeContext& node) {
  const std::vector<SizeExpr> dims = node.InputShapeExprs(0);
  // Opset 15 added start and end, which slice the shape like Python's shape[start:end].
  const auto rank = static_cast<int64_t>(dims.size());
  auto clamp = [rank](int64_t index) {
    return std::clamp(index < 0 ? index + rank : index, int64_t{0}, rank);
  };
  const int64_t start = clamp(node.Int("start", 0));
  const int64_t end = std::max(start, clamp(node.Int("end", rank)));
  return ShapeValue{{dims.begin() + start, dims.begin() + end}, false, kInt64};
}

MaybeValue EvaluateSize(const NodeContext& node) {
  SizeExpr count = IntImm(1);
  for (const SizeExpr& dim : node.InputShapeExprs(0)) count = count * dim;
  return ShapeValue{{count}, true, kInt64};
}

MaybeValue EvaluateGather(const NodeContext& node) {
  MaybeValue data = node.InputShapeValue(0);
  MaybeValue indices = node.InputShapeValue(1);
  const int64_t axis = node.Int("axis", 0);
  if (!data.has_value() || data->scalar || !indices.has_value() || (axis != 0 && axis != -1)) {
    return std::nullopt;
  }
  const std::optional<std::vector<int64_t>> positions = indices->AsInts();
  if (!positions.has_value()) return std::nullopt;
  const auto count = static_cast<int64_t>(data->elements.size());
  ShapeValue out{{}, indices->scalar, data->dtype};
  for (int64_t position : *positions) {
    KILN_CHECK(position >= -count && position < count, ValueError)
        << node.Describe() << ": index " << position << " is out of range for the " << count
        << " elements of " << data->ToString();
    out.elements.push_back(data->elements[position < 0 ? position + count : position]);
  }
  return out;
}

MaybeValue EvaluateUnsqueeze(const NodeContext& node) {
  MaybeValue input = node.InputShapeValue(0);
  if (!input.has_value() || !input->scalar || !AxesAreFirst(node, 13, false)) return std::nullopt;
  input->scalar = false;
  return input;
}

MaybeValue EvaluateSqueeze(const NodeContext& node) {
  MaybeValue input = node.InputShapeValue(0);
  if (!input.has_value() || input->scalar || input->elements.size() != 1 ||
      !AxesAreFirst(node, 13, true)) {
    return std::nullopt;
  }
  input->scalar = true;
  return input;
}

MaybeValue EvaluateConcat(const NodeContext& node) {
  const int64_t axis = node.Int("axis", 0);
  std::optional<std::vector<ShapeValue>> operands = Operands(node);
  if (!operands.has_value() || operands->empty() || (axis != 0 && axis != -1)) {
    return std::nullopt;
  }
  ShapeValue out{{}, false, operands->front().dtype};
  for (const ShapeValue& operand : *operands) {
    if (operand.scalar) return std::nullopt;
    out.elements.insert(out.elements.end(), operand.elements.begin(), operand.elements.end());
  }
  return out;
}

// A 1-D view of a shape value (torch.onnx writes x.expand(*sizes) with Reshape(sizes, [-1])), or
// its one element as a scalar, or back.
MaybeValue EvaluateReshape(const NodeContext& node) {
  MaybeValue data = node.InputShapeValue(0);
  const auto target = IntsParam(node, "shape", 5, 1, std::nullopt);
  if (!data.has_value() || !target.has_value() || target->size() > 1) return std::nullopt;
  const auto count = static_cast<int64_t>(data->elements.size());
  if (target->empty()) {
    data->scalar = true;
    return count == 1 ? data : std::nullopt;
  }
  const int64_t extent = (*target)[0];
  const bool copies = extent == 0 && !data->scalar && node.Int("allowzero", 0) == 0;
  if (extent != -1 && extent != count && !copies) return std::nullopt;
  data->scalar = false;
  return data;
}

/// The positions ONNX's Slice selects from `count` elements: negative bounds count from the end;
/// going forward (step > 0) bounds are clamped to [0, count], going back to [-1, count - 1].
std::vector<int64_t> SlicePositions(int64_t count, int64_t start, int64_t end, int64_t step) {
  if (count == 0) return {};
  const bool forward = step > 0;
  step = std::clamp(step, -(count + 1), count + 1);  // a longer step selects the same
  start = std::clamp(start < 0 ? start + count : start, int64_t{0}, forward ? count : count - 1);
  end = std::clamp(end < 0 ? end + count : end, forward ? int64_t{0} : int64_t{-1},
                   forward ? count : count - 1);
  std::vector<int64_t> positions;
  for (int64_t i = start; forward ? i < end : i > end; i += step) positions.push_back(i);
  return positions;
}

MaybeValue EvaluateSlice(const NodeContext& node) {
  MaybeValue data = node.InputShapeValue(0);
  const auto starts = IntsParam(node, "starts", 10, 1, std::nullopt);
  const auto ends = IntsParam(node, "ends", 10, 2, std::nullopt);
  const auto steps = IntsParam(node, "steps", 10, 4, std::vector<int64_t>{1});
  if (!data.has_value() || data->scalar || !starts.has_value() || starts->size() != 1 ||
      !ends.has_value() || ends->size() != 1 || !steps.has_value() || steps->size() != 1 ||
      (*steps)[0] == 0 || !IsFirstAxis(IntsParam(node, "axes", 10, 3, std::vector<int64_t>{0}))) {
    return std::nullopt;
  }
  ShapeValue out{{}, false, data->dtype};
  const auto count = static_cast<int64_t>(data->elements.size());
  for (int64_t i : SlicePositions(count, (*starts)[0], (*ends)[0], (*steps)[0])) {
    out.elements.push_back(data->elements[i]);
  }
  return out;
}

/// The integers a value of `dtype` holds exactly: 8-bit ranges, int32's, float32's 2^24 and
/// float64's 2^53 (int64's whole range).
std::pair<int64_t, int64_t> ExactRange(DLDataType dtype) {
  int bits = dtype.bits;
  if (dtype.code == kDLFloat) bits = dtype.bits == 32 ? 25 : 54;  // a sign and the significand
  if (bits >= 64) return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  if (dtype.code == kDLUInt) return {0, (int64_t{1} << bits) - 1};
  return {-(int64_t{1} << (bits - 1)), (int64_t{1} << (bits - 1)) - 1};
}

/// Whether a value of `dtype` holds `element` exactly. A symbolic size is taken to fit 32-bit
/// and wider types: a shape computation past 2^24 elements in one extent is no model Kiln runs,
/// and refusing it would refuse every Cast of a shape to float and back (PyTorch's scaling).
bool Holds(DLDataType dtype, const SizeExpr& element, const arith::Analyzer& analyzer) {
  if (dtype.code == kDLUInt && dtype.bits == 1) return false;  // Cast to bool is no shape value
  if (!element.as_int().has_value() && dtype.bits >= 32) return true;
  const auto [min, max] = ExactRange(dtype);
  const arith::ConstIntBound bound = analyzer.Bound(element);
  return bound.min >= min && bound.max <= max;
}

MaybeValue EvaluateCast(const NodeContext& node) {
  const DLDataType to =
      DTypeFromOnnx(static_cast<int32_t>(node.Int("to", 0)), node.Describe() + "'s 'to'");
  MaybeValue input = node.InputShapeValue(0);
  if (!input.has_value()) return std::nullopt;
  for (const SizeExpr& element : input->elements) {
    if (!Holds(to, element, node.analyzer())) return std::nullopt;
  }
  input->dtype = to;
  return input;
}

MaybeValue EvaluateDiv(const NodeContext& node) {
  const bool integer = HasIntegerType(node);
  return Fold(node, [&node, integer](const SizeExpr& a, const SizeExpr& b) {
    return Divide(a, b, integer, node.analyzer());
  });
}

MaybeValue EvaluateMod(const NodeContext& node) {
  const bool fmod = node.Int("fmod", 0) != 0;
  return Fold(node, [&node, fmod](const SizeExpr& a, const SizeExpr& b) {
    return Modulo(a, b, fmod, node.analyzer());
  });
}

MaybeValue EvaluateEqual(const NodeContext& node) {
  return Fold(
      node, [&node](const SizeExpr& a, const SizeExpr& b) { return Equals(a, b, node.analyzer()); },
      kBool);
}

MaybeValue EvaluateWhere(const NodeContext& node) {
  std::optional<std::vector<ShapeValue>> operands = Operands(node);
  if (!operands.has_value() || operands->size() != 3) return std::nullopt;
  return Elementwise(*operands, (*operands)[1].dtype,
                     [](const std::vector<SizeExpr>& args) -> MaybeExpr {
                       const std::optional<int64_t> condition = args[0].as_int();
                       if (!condition.has_value()) return std::nullopt;
                       return *condition != 0 ? args[1] : args[2];
                     });
}

MaybeValue EvaluateNot(const NodeContext& node) {
  return Map(node, [](const SizeExpr& a) -> MaybeExpr {
    const std::optional<int64_t> value = a.as_int();
    if (!value.has_value()) return std::nullopt;
    return IntImm(*value == 0 ? 1 : 0);
  });
}

MaybeValue EvaluateReduceProd(const NodeContext& node) {
  MaybeValue input = node.InputShapeValue(0);
  // ReduceProd takes its axes as an attribute up to opset 17.
  if (!input.has_value() || input->scalar || !AxesAreFirst(node, 18, true)) return std::nullopt;
  SizeExpr product = IntImm(1);
  for (const SizeExpr& element : input->elements) product = product * element;
  return ShapeValue{{product}, node.Int("keepdims", 1) == 0, input->dtype};
}

struct ShapeOp {
  const char* op_type;
  MaybeValue (*evaluate)(const NodeContext& node);
};

const ShapeOp kShapeOps[] = {
    {"Shape", EvaluateShape},
    {"Size", EvaluateSize},
    {"Gather", EvaluateGather},
    {"Unsqueeze", EvaluateUnsqueeze},
    {"Squeeze", EvaluateSqueeze},
    {"Concat", EvaluateConcat},
    {"Reshape", EvaluateReshape},
    {"Slice", EvaluateSlice},
    {"Cast", EvaluateCast},
    {"Identity", [](const NodeContext& node) { return node.InputShapeValue(0); }},
    {"Add",
     [](const NodeContext& node) {
       return Fold(node, [](const SizeExpr& a, const SizeExpr& b) -> MaybeExpr { return a + b; });
     }},
    {"Sub",
     [](const NodeContext& node) {
       return Fold(node, [](const SizeExpr& a, const SizeExpr& b) -> MaybeExpr { return a - b; });
     }},
    {"Mul",
     [](const NodeContext& node) {
       return Fold(node, [](const SizeExpr& a, const SizeExpr& b) -> MaybeExpr { return a * b; });
     }},
    {"Div", EvaluateDiv},
    {"Mod", EvaluateMod},
    {"Min",
     [](const NodeContext& node) {
       return Fold(node, [](const SizeExpr& a, const SizeExpr& b) -> MaybeExpr {
         return arith::Min(a, b);
       });
     }},
    {"Max",
     [](const NodeContext& node) {
       return Fold(node, [](const SizeExpr& a, const SizeExpr& b) -> MaybeExpr {
         return arith::Max(a, b);
       });
     }},
    {"Neg",
     [](const NodeContext& node) {
       return Map(node, [](const SizeExpr& a) -> MaybeExpr { return IntImm(0) - a; });
     }},
    {"Equal", EvaluateEqual},
    {"Where", EvaluateWhere},
    {"Not", EvaluateNot},
    {"ReduceProd", EvaluateReduceProd},
};

/// Whether some input of the node is a symbolic shape value.
bool ReadsSymbolicValue(const NodeContext& node) {
  for (size_t i = 0; i < static_cast<size_t>(node.proto().input_size()); ++i) {
    if (node.SymbolicInput(i) != nullptr) return true;
  }
  return false;
}

}  // namespace

std::optional<ShapeValue> PropagateShapeValue(const NodeContext& node) {
  const onnx::NodeProto& proto = node.proto();
  if (!NodeDomain(proto).empty() || node.NumOutputs() != 1) return std::nullopt;
  const auto* op =
      std::find_if(std::begin(kShapeOps), std::end(kShapeOps),
                   [&](const ShapeOp& entry) { return proto.op_type() == entry.op_type; });
  if (op == std::end(kShapeOps)) return std::nullopt;
  // Shape and Size read only their input's type. The other ops are evaluated where they read a
  // symbolic value: chains of constants stay what the converters make of them.
  const bool source = proto.op_type() == "Shape" || proto.op_type() == "Size";
  if (!source && !ReadsSymbolicValue(node)) return std::nullopt;
  MaybeValue value = op->evaluate(node);
  if (value.has_value()) {
    for (SizeExpr& element : value->elements) element = node.analyzer().Simplify(element);
  }
  return value;
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
