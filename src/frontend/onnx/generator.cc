// ONNX ops that generate their values from constants at import: Range, EyeLike and the window
// functions (HannWindow, HammingWindow, BlackmanWindow) become Constants (a Range to a limit
// computed from symbolic sizes becomes an arange); Trilu multiplies its input by a constant
// triangular mask.
#include <kiln/ffi/error.h>

#include <cmath>
#include <vector>

#include "converter.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// Element 0 of constant scalar input `index`.
double ScalarInput(const NodeContext& node, size_t index) {
  const std::vector<double> values = node.ConstantFloats(index);
  KILN_CHECK(values.size() == 1, ValueError)
      << node.Describe() << ": input " << index << " must hold one value, not " << values.size();
  return values[0];
}

/// The most elements a generated constant may have: the values are spelled out in the module.
constexpr double kMaxGenerated = 1 << 24;

/// max(ceil((limit - start) / delta), 0), the element count of a Range to a symbolic `limit`
/// from integer `start` by integer `delta` (!= 0): ceil(x / d) is floordiv(x + d - 1, d) for
/// d > 0, and a negative delta counts the span the other way.
arith::SizeExpr RangeSize(const arith::SizeExpr& limit, int64_t start, int64_t delta) {
  const arith::SizeExpr span = delta > 0 ? limit - start : start - limit;
  const int64_t step = delta > 0 ? delta : -delta;
  return arith::Max(arith::FloorDiv(span + (step - 1), step), 0);
}

// A limit computed from symbolic sizes (torch.arange(x.shape[1]) exports as Range(0, seq, 1))
// makes an arange of a symbolic size; start and delta must be constant integers.
ir::Expr SymbolicRange(const NodeContext& node) {
  const double start = ScalarInput(node, 0);
  const double delta = ScalarInput(node, 2);
  KILN_CHECK(delta != 0, ValueError) << node.Describe() << ": delta must not be 0";
  const std::vector<arith::SizeExpr> limit = node.SizesInput(1);
  KILN_CHECK(limit.size() == 1, ValueError)
      << node.Describe() << ": input 1 must hold one value, not " << limit.size();
  const auto is_integer = [](double value) {
    constexpr double kExactIntegers = 9007199254740992.0;  // 2^53: a double holds them all
    return std::trunc(value) == value && std::abs(value) <= kExactIntegers;
  };
  KILN_CHECK(is_integer(start) && is_integer(delta), NotImplementedError)
      << node.Describe() << ": a limit computed from symbolic sizes (" << limit[0]
      << ") needs integer start and delta, not " << start << " and " << delta;
  const arith::SizeExpr size = node.analyzer().Simplify(
      RangeSize(limit[0], static_cast<int64_t>(start), static_cast<int64_t>(delta)));
  return MakeCall("arange", {},
                  {{"start", start},
                   {"step", delta},
                   {"size", SizeAttr(size)},
                   {"dtype", String(DataTypeToString(node.InputDType(0)))}});
}

// start, start + delta, ... up to (not including) limit: max(ceil((limit - start) / delta), 0)
// elements of start's dtype.
ir::Expr ConvertRange(const NodeContext& node) {
  if (node.IsRunTimeValue(0) || node.IsRunTimeValue(1) || node.IsRunTimeValue(2)) {
    // Bounds known only at run time: range_sizes counts the elements then.
    KILN_CHECK(node.SymbolicInput(1) == nullptr, NotImplementedError)
        << node.Describe() << ": a limit computed from symbolic sizes needs constant start and "
        << "delta";
    const std::vector<arith::SizeExpr> count = node.NewSizes(1);
    const ir::Expr values = MakeCall("range_sizes", {node.Input(0), node.Input(1), node.Input(2)});
    return MakeCall("range", {DefineSizes(node.Input(0), values, count), node.Input(2)},
                    {{"size", SizeAttr(count[0])}});
  }
  if (node.SymbolicInput(1) != nullptr) return SymbolicRange(node);
  const double start = ScalarInput(node, 0);
  const double limit = ScalarInput(node, 1);
  const double delta = ScalarInput(node, 2);
  KILN_CHECK(delta != 0, ValueError) << node.Describe() << ": delta must not be 0";
  const double count = std::max(std::ceil((limit - start) / delta), 0.0);
  KILN_CHECK(count <= kMaxGenerated, ValueError)
      << node.Describe() << ": " << count << " elements is more than Kiln generates at import";
  const DLDataType dtype = node.InputDType(0);
  // Each element is computed from start, as ONNX's reference does, so integer ranges are exact.
  std::vector<double> values(static_cast<size_t>(count));
  for (size_t i = 0; i < values.size(); ++i) values[i] = start + static_cast<double>(i) * delta;
  return ir::Constant(TensorFromDoubles(values, {static_cast<int64_t>(count)}, dtype));
}

ir::Expr ConvertEyeLike(const NodeContext& node) {
  const std::vector<int64_t> shape = node.InputShape(0);
  KILN_CHECK(shape.size() == 2, ValueError) << node.Describe() << ": the input must be 2-D";
  const DLDataType dtype =
      node.HasAttr("dtype")
          ? DTypeFromOnnx(static_cast<int32_t>(node.Int("dtype", 0)), node.Describe() + "'s dtype")
          : node.InputDType(0);
  const int64_t k = node.Int("k", 0);
  std::vector<double> values(static_cast<size_t>(shape[0] * shape[1]), 0.0);
  for (int64_t i = 0; i < shape[0]; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < shape[1]) values[i * shape[1] + j] = 1.0;
  }
  return ir::Constant(TensorFromDoubles(values, shape, dtype));
}

// Trilu with k read at run time: the mask compares a constant table of j - i with k.
ir::Expr RunTimeTrilu(const NodeContext& node) {
  const size_t rank = node.InputRank(0);
  KILN_CHECK(rank >= 2, ValueError) << node.Describe() << ": the input must be >= 2-D";
  const int64_t rows = node.InputExtent(0, rank - 2);
  const int64_t columns = node.InputExtent(0, rank - 1);
  std::vector<int64_t> offsets(static_cast<size_t>(rows * columns));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < columns; ++j) offsets[i * columns + j] = j - i;
  }
  const ir::Expr table = ir::Constant(Int64Tensor(offsets, std::vector<int64_t>{rows, columns}));
  const ir::Expr k = AsInt64(node.Input(1), node.InputDType(1));
  const ir::Expr keep =
      MakeCall(node.Int("upper", 1) != 0 ? "greater_equal" : "less_equal", {table, k});
  return MakeCall("where", {keep, node.Input(0), MakeScalar(0, node.InputDType(0))});
}

// Keeps x[..., i, j] where j - i >= k (upper) or j - i <= k (lower), 0 elsewhere: a where with a
// constant (rows, columns) mask, which broadcasts over the leading dims.
ir::Expr ConvertTrilu(const NodeContext& node) {
  const size_t rank = node.InputRank(0);
  KILN_CHECK(rank >= 2, ValueError) << node.Describe() << ": the input must be >= 2-D";
  if (node.IsRunTimeValue(1)) return RunTimeTrilu(node);
  int64_t k = 0;
  if (node.HasInput(1)) {
    const std::vector<int64_t> values = node.ConstantInts(1);  // k is int64 in ONNX
    KILN_CHECK(values.size() == 1, ValueError) << node.Describe() << ": k must be one value";
    k = values[0];
  }
  const bool upper = node.Int("upper", 1) != 0;
  const int64_t rows = node.InputExtent(0, rank - 2);
  const int64_t columns = node.InputExtent(0, rank - 1);
  std::vector<double> mask(static_cast<size_t>(rows * columns));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < columns; ++j) {
      mask[i * columns + j] = (upper ? j - i >= k : j - i <= k) ? 1.0 : 0.0;
    }
  }
  ir::Expr keep = ir::Constant(TensorFromDoubles(mask, {rows, columns}, DLDataType{kDLUInt, 1, 1}));
  return MakeCall("where", {keep, node.Input(0), MakeScalar(0, node.InputDType(0))});
}

/// The window of CosineWindow below for a size fed at run time: the same sum, over a range of
/// that many positions, in float64 like the constant one.
ir::Expr RunTimeCosineWindow(const NodeContext& node, const std::vector<double>& coefficients) {
  constexpr DLDataType kFloat64{kDLFloat, 64, 1};
  const std::vector<arith::SizeExpr> count = node.NewSizes(1);
  const ir::Expr& size = node.Input(0);
  const ir::Expr positions =
      MakeCall("range",
               {DefineSizes(MakeScalar(0, kFloat64), MakeCall("as_sizes", {size}), count),
                MakeScalar(1, kFloat64)},
               {{"size", SizeAttr(count[0])}});
  ir::Expr period = MakeCall("cast", {size}, {{"dtype", String("float64")}});
  if (node.Int("periodic", 1) == 0)
    period = MakeCall("subtract", {period, MakeScalar(1, kFloat64)});
  // 2 pi n / period, then each term's multiple of it.
  const ir::Expr angle = MakeCall(
      "divide", {MakeCall("multiply", {positions, MakeScalar(2 * M_PI, kFloat64)}), period});
  ir::Expr sum = MakeScalar(coefficients[0], kFloat64);
  for (size_t i = 1; i < coefficients.size(); ++i) {
    const double sign = i % 2 == 0 ? 1.0 : -1.0;
    const ir::Expr cosine = MakeCall(
        "cos", {MakeCall("multiply", {angle, MakeScalar(static_cast<double>(i), kFloat64)})});
    sum = MakeCall(
        "add", {sum, MakeCall("multiply", {cosine, MakeScalar(sign * coefficients[i], kFloat64)})});
  }
  const DLDataType dtype = DTypeFromOnnx(static_cast<int32_t>(node.Int("output_datatype", 1)),
                                         node.Describe() + "'s output_datatype");
  return MakeCall("cast", {sum}, {{"dtype", String(DataTypeToString(dtype))}});
}

/// A cosine-sum window of constant `size` (input 0): sum_i (-1)^i a_i cos(2 pi i n / N), with
/// N = size for a periodic window (the default) and size - 1 for a symmetric one.
ir::Expr CosineWindow(const NodeContext& node, const std::vector<double>& coefficients) {
  if (node.IsRunTimeValue(0)) return RunTimeCosineWindow(node, coefficients);
  const double size = ScalarInput(node, 0);
  KILN_CHECK(size >= 0 && size <= kMaxGenerated, ValueError)
      << node.Describe() << ": size " << size << " is out of range";
  const auto count = static_cast<int64_t>(size);
  const double period = node.Int("periodic", 1) != 0 ? size : size - 1;
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t n = 0; n < count; ++n) {
    double sum = 0;
    for (size_t i = 0; i < coefficients.size(); ++i) {
      const double sign = i % 2 == 0 ? 1.0 : -1.0;
      sum += sign * coefficients[i] *
             std::cos(2 * M_PI * static_cast<double>(i) * static_cast<double>(n) / period);
    }
    values[n] = sum;
  }
  const DLDataType dtype = DTypeFromOnnx(static_cast<int32_t>(node.Int("output_datatype", 1)),
                                         node.Describe() + "'s output_datatype");
  return ir::Constant(TensorFromDoubles(values, {count}, dtype));
}

}  // namespace

void AddGeneratorConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "Range", 11, kMaxOpset, ConvertRange);
  AddConverter(table, "EyeLike", 9, kMaxOpset, ConvertEyeLike);
  AddConverter(table, "Trilu", 14, kMaxOpset, ConvertTrilu);
  AddConverter(table, "HannWindow", 17, kMaxOpset, [](const NodeContext& node) {
    return CosineWindow(node, {0.5, 0.5});
  });
  AddConverter(table, "HammingWindow", 17, kMaxOpset, [](const NodeContext& node) {
    return CosineWindow(node, {25.0 / 46.0, 21.0 / 46.0});
  });
  AddConverter(table, "BlackmanWindow", 17, kMaxOpset, [](const NodeContext& node) {
    return CosineWindow(node, {0.42, 0.5, 0.08});
  });
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
