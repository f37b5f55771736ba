// The converter table: one entry per (ONNX op type, opset range), each a small function that
// emits Kiln core ops for one node. Families of ops register in their own files.
#ifndef KILN_SRC_FRONTEND_ONNX_CONVERTER_H_
#define KILN_SRC_FRONTEND_ONNX_CONVERTER_H_

#include <kiln/arith/size_expr.h>
#include <kiln/ir/expr.h>

#include <functional>
#include <string>
#include <vector>

#include "node_context.h"

namespace kiln {
namespace frontend {
namespace onnx_import {

/// The node's value: one expression, or a tuple-typed one when the node has several outputs.
using Converter = std::function<ir::Expr(const NodeContext& node)>;

/// The opsets Kiln imports.
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 17;

struct ConverterEntry {
  std::string op_type;
  int64_t since;  ///< first opset this converter handles (the ONNX version it follows)
  int64_t until;  ///< last opset, inclusive
  Converter convert;
};

/// Appends `convert` for `op_type` at opsets [max(since, kMinOpset), until]: ONNX numbers an op's
/// behaviour from the opset it changed in, which may predate the opsets Kiln imports.
void AddConverter(std::vector<ConverterEntry>& table, const char* op_type, int64_t since,
                  int64_t until, Converter convert);

/// The converter of `op_type` at `opset`, or nullptr when there is none.
const Converter* FindConverter(const std::string& op_type, int64_t opset);
/// Every entry, in registration order (for documentation and tests).
const std::vector<ConverterEntry>& ConverterTable();

// The families; each appends its entries.
void AddElementwiseConverters(std::vector<ConverterEntry>& table);
void AddNNConverters(std::vector<ConverterEntry>& table);
void AddTensorConverters(std::vector<ConverterEntry>& table);
void AddReduceConverters(std::vector<ConverterEntry>& table);
void AddConstantConverters(std::vector<ConverterEntry>& table);
void AddResizeConverters(std::vector<ConverterEntry>& table);
void AddActivationConverters(std::vector<ConverterEntry>& table);
void AddIndexingConverters(std::vector<ConverterEntry>& table);
void AddGeneratorConverters(std::vector<ConverterEntry>& table);
void AddLayoutConverters(std::vector<ConverterEntry>& table);
void AddLossConverters(std::vector<ConverterEntry>& table);
void AddNormalizationConverters(std::vector<ConverterEntry>& table);
void AddEinsumConverters(std::vector<ConverterEntry>& table);
void AddSequenceConverters(std::vector<ConverterEntry>& table);
void AddQuantizeConverters(std::vector<ConverterEntry>& table);
void AddDetectionConverters(std::vector<ConverterEntry>& table);
void AddRecurrentConverters(std::vector<ConverterEntry>& table);

/// Whether `op_type`'s one output is a sequence (a tuple value naming one output, where other
/// tuple values are a node's several outputs).
bool ProducesSequence(const std::string& op_type);

/// A call of core op `op`; its schema checks the attributes and fills in defaults.
ir::Expr MakeCall(const std::string& op, Array<ir::Expr> args,
                  Map<String, Any> attrs = Map<String, Any>());
/// A scalar (rank-0) constant of `dtype` (a float or integer type) holding `value`.
ir::Expr MakeScalar(double value, DLDataType dtype);
Array<int64_t> ToArray(const std::vector<int64_t>& values);
/// The value of a size attribute (AttrKind kSize): an int64 where `size` is constant, else the
/// expression.
Any SizeAttr(const arith::SizeExpr& size);
/// The value of a sizes attribute (AttrKind kSizes, Reshape's newshape, Expand's shape): each
/// item as SizeAttr writes it, so an all-constant one is the integer array it always was.
Array<Any> SizesAttr(const std::vector<arith::SizeExpr>& sizes);
/// `data` with `sizes` (NodeContext::NewSizes) defined as the elements of `values`, an int64
/// vector computed at run time (docs/design.md §22); ops that use the sizes take the result.
ir::Expr DefineSizes(ir::Expr data, ir::Expr values, const std::vector<arith::SizeExpr>& sizes);
/// `value` cast to int64 unless it is int64 already (shape values ONNX allows as int32).
ir::Expr AsInt64(ir::Expr value, DLDataType dtype);
/// `data` reshaped to sizes computed at run time by `size_op(data, extra)` (squeeze_sizes,
/// unsqueeze_sizes, reshape_sizes...), `count` of them.
ir::Expr ReshapeToRunTimeSizes(const NodeContext& node, const ir::Expr& data, size_t count,
                               const std::string& size_op, const ir::Expr& extra,
                               Map<String, Any> attrs = Map<String, Any>());
/// `data` padded by `pads` (int64, ONNX order: begins then ends) holding `value` (a scalar of
/// data's dtype) in `mode`, both read at run time: pad_sizes sizes the result, dynamic_pad fills
/// it.
ir::Expr PadAtRunTime(const NodeContext& node, const ir::Expr& data, const ir::Expr& pads,
                      const ir::Expr& value, const std::string& mode);
/// An int64 constant of rank `rank` holding 0..extent-1 along `axis` (extent 1 elsewhere): what
/// an index is compared with to make a one-hot mask (OneHot, Hardmax).
ir::Expr AxisPositions(int64_t extent, int64_t axis, int64_t rank);
/// A per-channel (C) value reshaped to (C, 1, ...) so that it broadcasts along axis 1 of a
/// rank-`rank` (N, C, ...) tensor.
ir::Expr PerChannel(const ir::Expr& per_channel, size_t rank);
/// The product of `shape[begin:end]`.
int64_t Product(const std::vector<int64_t>& shape, size_t begin, size_t end);
/// The newshape of a reshape viewing input 0 of `node` as the matrix (prod(shape[:axis]),
/// prod(shape[axis:])) (Flatten, Softmax before opset 13): the two products where both are
/// static, else 0 (copy the one leading extent) or -1 (infer) for the symbolic side, so that a
/// symbolic batch needs no static shape. ValueError when both sides are symbolic products that
/// neither can express.
Array<int64_t> MatrixNewShape(const NodeContext& node, size_t axis);
/// The newshape of a reshape giving a tensor of as many elements input 0's shape again: its
/// static extents, -1 for its one symbolic extent. ValueError when several are symbolic.
Array<int64_t> InputNewShape(const NodeContext& node);
/// `axis` counted from the front when negative (counted from the end) for a rank-`rank` tensor.
int64_t NormalizeAxis(int64_t axis, int64_t rank);

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_CONVERTER_H_
