// Linear quantization: QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear as the float
// arithmetic ONNX defines them by (scale, round half to even, add the zero point, saturate), and
// MatMulInteger and QLinearMatMul over an exact integer matmul. Every scale and zero point may
// be fed at run time: they are tensors here, never attributes.
#include <kiln/ffi/error.h>

#include <string>

#include "converter.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

constexpr DLDataType kFloat32{kDLFloat, 32, 1};
constexpr DLDataType kInt32{kDLInt, 32, 1};
constexpr DLDataType kUInt8{kDLUInt, 8, 1};

ir::Expr Cast(const ir::Expr& value, DLDataType dtype) {
  return MakeCall("cast", {value}, {{"dtype", String(DataTypeToString(dtype))}});
}

/// A per-axis scale or zero point (a vector along `axis` of a rank-`rank` tensor) reshaped to
/// broadcast; a scalar one as it is.
ir::Expr AlongAxis(const NodeContext& node, size_t index, size_t rank) {
  const ir::Expr& value = node.Input(index);
  if (node.InputRank(index) == 0) return value;
  const int64_t axis = NormalizeAxis(node.Int("axis", 1), static_cast<int64_t>(rank));
  Array<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) shape.push_back(static_cast<int64_t>(d) == axis ? -1 : 1);
  return MakeCall("reshape", {value}, {{"newshape", shape}});
}

/// round(x / scale) + zero_point, saturated to `dtype` (uint8 or int8) and cast to it.
ir::Expr Quantize(const ir::Expr& x, const ir::Expr& scale, const ir::Expr& zero_point,
                  DLDataType dtype) {
  ir::Expr scaled = MakeCall("round", {MakeCall("divide", {x, scale})});
  scaled = MakeCall("add", {scaled, Cast(zero_point, kFloat32)});
  const bool is_unsigned = dtype.code == kDLUInt;
  return Cast(
      MakeCall("clip", {scaled},
               {{"a_min", is_unsigned ? 0.0 : -128.0}, {"a_max", is_unsigned ? 255.0 : 127.0}}),
      dtype);
}

ir::Expr ConvertQuantizeLinear(const NodeContext& node) {
  KILN_CHECK(DataTypeEqual(node.InputDType(0), kFloat32), NotImplementedError)
      << node.Describe() << ": only float32 inputs are quantized";
  const size_t rank = node.InputRank(0);
  const ir::Expr zero_point = node.HasInput(2) ? AlongAxis(node, 2, rank) : MakeScalar(0, kUInt8);
  const DLDataType dtype = node.HasInput(2) ? node.InputDType(2) : kUInt8;
  KILN_CHECK(dtype.bits == 8 && dtype.code != kDLFloat, NotImplementedError)
      << node.Describe() << ": only uint8 and int8 results are supported, not "
      << DataTypeToString(dtype);
  return Quantize(node.Input(0), AlongAxis(node, 1, rank), zero_point, dtype);
}

ir::Expr ConvertDequantizeLinear(const NodeContext& node) {
  const size_t rank = node.InputRank(0);
  ir::Expr x = Cast(node.Input(0), kFloat32);
  if (node.HasInput(2)) x = MakeCall("subtract", {x, Cast(AlongAxis(node, 2, rank), kFloat32)});
  return MakeCall("multiply", {x, AlongAxis(node, 1, rank)});
}

// The scale spans [min(x, 0), max(x, 0)] over uint8's 255 steps; the zero point is where 0 lands.
ir::Expr ConvertDynamicQuantizeLinear(const NodeContext& node) {
  const ir::Expr& x = node.Input(0);
  const ir::Expr zero = MakeScalar(0, kFloat32);
  const Map<String, Any> all{{"axis", Any(nullptr)}, {"keepdims", false}};
  const ir::Expr low = MakeCall("minimum", {MakeCall("min", {x}, all), zero});
  const ir::Expr high = MakeCall("maximum", {MakeCall("max", {x}, all), zero});
  const ir::Expr scale =
      MakeCall("divide", {MakeCall("subtract", {high, low}), MakeScalar(255, kFloat32)});
  const ir::Expr zero_point =
      Cast(MakeCall("clip",
                    {MakeCall("round", {MakeCall("divide", {MakeCall("negative", {low}), scale})})},
                    {{"a_min", 0.0}, {"a_max", 255.0}}),
           kUInt8);
  return ir::Tuple({Quantize(x, scale, zero_point, kUInt8), scale, zero_point});
}

/// (a - a_zero_point) x (b - b_zero_point) in int32, exactly; the zero points are inputs
/// `a_zp` and `b_zp` when given. A's may be per row (M), B's per column (N).
ir::Expr IntegerMatmul(const NodeContext& node, size_t a, size_t b, size_t a_zp, size_t b_zp) {
  auto centered = [&](size_t index, size_t zp, bool per_row) {
    ir::Expr value = Cast(node.Input(index), kInt32);
    if (!node.HasInput(zp)) return value;
    ir::Expr offset = Cast(node.Input(zp), kInt32);
    if (per_row && node.InputRank(zp) == 1) {
      offset = MakeCall("reshape", {offset}, {{"newshape", Array<int64_t>{-1, 1}}});
    }
    return MakeCall("subtract", {value, offset});
  };
  return MakeCall("matmul", {centered(a, a_zp, true), centered(b, b_zp, false)});
}

ir::Expr ConvertMatMulInteger(const NodeContext& node) { return IntegerMatmul(node, 0, 1, 2, 3); }

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): the int32 product
// requantized by a_scale * b_scale / y_scale.
ir::Expr ConvertQLinearMatMul(const NodeContext& node) {
  const ir::Expr product = Cast(IntegerMatmul(node, 0, 3, 2, 5), kFloat32);
  const ir::Expr scale =
      MakeCall("divide", {MakeCall("multiply", {node.Input(1), node.Input(4)}), node.Input(6)});
  return Quantize(MakeCall("multiply", {product, scale}), MakeScalar(1, kFloat32), node.Input(7),
                  node.InputDType(7));
}

}  // namespace

void AddQuantizeConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "QuantizeLinear", 10, kMaxOpset, ConvertQuantizeLinear);
  AddConverter(table, "DequantizeLinear", 10, kMaxOpset, ConvertDequantizeLinear);
  AddConverter(table, "DynamicQuantizeLinear", 11, kMaxOpset, ConvertDynamicQuantizeLinear);
  AddConverter(table, "MatMulInteger", 10, kMaxOpset, ConvertMatMulInteger);
  AddConverter(table, "QLinearMatMul", 10, kMaxOpset, ConvertQLinearMatMul);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
