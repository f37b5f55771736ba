#include "converter.h"

#include <kiln/ffi/error.h>
#include <kiln/ir/op.h>
#include <kiln/transform/infer_type.h>

#include <algorithm>

#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {

const std::vector<ConverterEntry>& ConverterTable() {
  static const auto* table = [] {
    auto* entries = new std::vector<ConverterEntry>();
    AddElementwiseConverters(*entries);
    AddNNConverters(*entries);
    AddTensorConverters(*entries);
    AddReduceConverters(*entries);
    AddConstantConverters(*entries);
    AddResizeConverters(*entries);
    AddActivationConverters(*entries);
    AddIndexingConverters(*entries);
    AddGeneratorConverters(*entries);
    AddLayoutConverters(*entries);
    AddLossConverters(*entries);
    AddNormalizationConverters(*entries);
    AddEinsumConverters(*entries);
    AddSequenceConverters(*entries);
    AddQuantizeConverters(*entries);
    AddDetectionConverters(*entries);
    AddRecurrentConverters(*entries);
    return entries;
  }();
  return *table;
}

void AddConverter(std::vector<ConverterEntry>& table, const char* op_type, int64_t since,
                  int64_t until, Converter convert) {
  table.push_back({op_type, std::max(since, kMinOpset), until, std::move(convert)});
}

const Converter* FindConverter(const std::string& op_type, int64_t opset) {
  for (const ConverterEntry& entry : ConverterTable()) {
    if (entry.op_type == op_type && entry.since <= opset && opset <= entry.until) {
      return &entry.convert;
    }
  }
  return nullptr;
}

ir::Expr MakeCall(const std::string& op, Array<ir::Expr> args, Map<String, Any> attrs) {
  return ir::Call(ir::Op::Get(op), std::move(args), std::move(attrs));
}

ir::Expr MakeScalar(double value, DLDataType dtype) {
  return ir::Constant(FilledTensor({}, dtype, value));
}

ir::Expr AxisPositions(int64_t extent, int64_t axis, int64_t rank) {
  std::vector<int64_t> shape(rank, 1);
  shape[axis] = extent;
  std::vector<int64_t> values(extent);
  for (int64_t i = 0; i < extent; ++i) values[i] = i;
  return ir::Constant(Int64Tensor(values, shape));
}

Array<int64_t> ToArray(const std::vector<int64_t>& values) { return Array<int64_t>(values); }

Any SizeAttr(const arith::SizeExpr& size) {
  if (std::optional<int64_t> constant = size.as_int()) return Any(*constant);
  return Any(size);
}

Array<Any> SizesAttr(const std::vector<arith::SizeExpr>& sizes) {
  Array<Any> items;
  for (const arith::SizeExpr& size : sizes) items.push_back(SizeAttr(size));
  return items;
}

ir::Expr DefineSizes(ir::Expr data, ir::Expr values, const std::vector<arith::SizeExpr>& sizes) {
  return MakeCall("define_sizes", {std::move(data), std::move(values)},
                  {{"sizes", SizesAttr(sizes)}});
}

ir::Expr AsInt64(ir::Expr value, DLDataType dtype) {
  if (DataTypeEqual(dtype, DLDataType{kDLInt, 64, 1})) return value;
  return MakeCall("cast", {std::move(value)}, {{"dtype", String("int64")}});
}

ir::Expr ReshapeToRunTimeSizes(const NodeContext& node, const ir::Expr& data, size_t count,
                               const std::string& size_op, const ir::Expr& extra,
                               Map<String, Any> attrs) {
  const std::vector<arith::SizeExpr> sizes = node.NewSizes(count);
  const ir::Expr values = MakeCall(size_op, {data, extra}, std::move(attrs));
  return MakeCall("reshape", {DefineSizes(data, values, sizes)}, {{"newshape", SizesAttr(sizes)}});
}

ir::Expr PadAtRunTime(const NodeContext& node, const ir::Expr& data, const ir::Expr& pads,
                      const ir::Expr& value, const std::string& mode) {
  transform::InferNodeType(data);
  const size_t rank = data->checked_type().as<ir::TensorTypeObj>()->shape().size();
  const std::vector<arith::SizeExpr> sizes = node.NewSizes(rank);
  const ir::Expr sized = DefineSizes(data, MakeCall("pad_sizes", {data, pads}), sizes);
  return MakeCall("dynamic_pad", {sized, pads, value},
                  {{"mode", String(mode)}, {"sizes", SizesAttr(sizes)}});
}

ir::Expr PerChannel(const ir::Expr& per_channel, size_t rank) {
  std::vector<int64_t> shape(rank - 1, 1);
  shape[0] = -1;
  return MakeCall("reshape", {per_channel}, {{"newshape", ToArray(shape)}});
}

int64_t Product(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) product *= shape[i];
  return product;
}

namespace {

using Extents = std::vector<std::optional<int64_t>>;

std::optional<int64_t> StaticProduct(const Extents& extents, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) {
    if (!extents[i].has_value()) return std::nullopt;
    product *= *extents[i];
  }
  return product;
}

/// `extents` as a newshape: static extents as they are, one symbolic extent as -1, which the
/// reshape infers from the element count; nullopt when several are symbolic.
std::optional<Array<int64_t>> InferringNewShape(const Extents& extents) {
  if (std::count(extents.begin(), extents.end(), std::nullopt) > 1) return std::nullopt;
  Array<int64_t> newshape;
  for (const std::optional<int64_t>& extent : extents) newshape.push_back(extent.value_or(-1));
  return newshape;
}

}  // namespace

Array<int64_t> MatrixNewShape(const NodeContext& node, size_t axis) {
  const Extents extents = node.InputExtents(0);
  const std::optional<int64_t> rows = StaticProduct(extents, 0, axis);
  const std::optional<int64_t> columns = StaticProduct(extents, axis, extents.size());
  // 0 copies a single leading extent whatever it is, so the columns may be symbolic too.
  if (axis == 1 && !(rows.has_value() && columns.has_value())) return {0, -1};
  std::optional<Array<int64_t>> newshape = InferringNewShape({rows, columns});
  KILN_CHECK(newshape.has_value(), ValueError)
      << node.Describe() << " views input 0 ('" << node.proto().input(0) << "') of shape "
      << node.InputShapeText(0) << " as a matrix at axis " << axis
      << ", which needs the extents before the axis or those from it on static; "
      << node.SpecializeHint(0);
  return *newshape;
}

Array<int64_t> InputNewShape(const NodeContext& node) {
  std::optional<Array<int64_t>> newshape = InferringNewShape(node.InputExtents(0));
  KILN_CHECK(newshape.has_value(), ValueError)
      << node.Describe() << " reshapes back to the shape " << node.InputShapeText(0)
      << " of input 0 ('" << node.proto().input(0)
      << "'), which needs all but one of its extents static; " << node.SpecializeHint(0);
  return *newshape;
}

int64_t NormalizeAxis(int64_t axis, int64_t rank) {
  KILN_CHECK(-rank <= axis && axis < rank, ValueError)
      << "axis " << axis << " is out of range for a tensor of rank " << rank;
  return axis < 0 ? axis + rank : axis;
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
