#include "converter.h"

#include <kiln/ffi/error.h>
#include <kiln/ir/op.h>

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

int64_t NormalizeAxis(int64_t axis, int64_t rank) {
  KILN_CHECK(-rank <= axis && axis < rank, ValueError)
      << "axis " << axis << " is out of range for a tensor of rank " << rank;
  return axis < 0 ? axis + rank : axis;
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
