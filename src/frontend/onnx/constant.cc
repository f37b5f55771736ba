// ONNX ops whose value is known when importing: Constant, ConstantOfShape, and Shape and Size
// of static extents (constants that Reshape/Expand can read).
#include <kiln/ffi/error.h>

#include <algorithm>

#include "converter.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

constexpr DLDataType kFloat32{kDLFloat, 32, 1};

ir::Expr ConvertConstant(const NodeContext& node) {
  if (const onnx::TensorProto* value = node.TensorAttr("value")) {
    return ir::Constant(TensorFromProto(*value));
  }
  if (node.HasAttr("value_float")) {
    return ir::Constant(FilledTensor({}, kFloat32, node.Float("value_float", 0.0)));
  }
  if (node.HasAttr("value_int")) {
    return ir::Constant(Int64Tensor({node.Int("value_int", 0)}, std::vector<int64_t>{}));
  }
  if (std::optional<std::vector<double>> floats = node.Floats("value_floats")) {
    Tensor tensor = FilledTensor({static_cast<int64_t>(floats->size())}, kFloat32, 0.0);
    std::copy(floats->begin(), floats->end(), static_cast<float*>(tensor.data()));
    return ir::Constant(tensor);
  }
  if (std::optional<std::vector<int64_t>> ints = node.Ints("value_ints")) {
    return ir::Constant(Int64Tensor(*ints));
  }
  KILN_THROW(NotImplementedError)
      << node.Describe()
      << ": only value, value_float(s) and value_int(s) are supported (no strings or sparse "
         "tensors)";
}

ir::Expr ConvertConstantOfShape(const NodeContext& node) {
  const std::vector<int64_t> shape = node.ConstantInts(0);
  if (const onnx::TensorProto* value = node.TensorAttr("value")) {
    const Tensor element = TensorFromProto(*value);
    KILN_CHECK(element.NumElements() == 1, ValueError)
        << node.Describe() << ": value must hold one element";
    return ir::Constant(FilledTensor(shape, element.dtype(), TensorAsDoubles(element)[0]));
  }
  return ir::Constant(FilledTensor(shape, kFloat32, 0.0));
}

/// The static extents of dimensions [begin, end) of input 0, which are the node's value. A
/// symbolic one is known only when the model runs, which the importer cannot express yet.
std::vector<int64_t> FoldedExtents(const NodeContext& node, size_t begin, size_t end) {
  return node.InputShape(0, begin, end, "run-time shape computation is not supported yet");
}

// Opset 15 added start/end, which slice the shape like Python's shape[start:end]; only the
// extents in that slice need to be static.
ir::Expr ConvertShape(const NodeContext& node) {
  const auto rank = static_cast<int64_t>(node.InputRank(0));
  auto clamp = [rank](int64_t index) {
    return std::clamp(index < 0 ? index + rank : index, int64_t{0}, rank);
  };
  const int64_t start = clamp(node.Int("start", 0));
  const int64_t end = std::max(start, clamp(node.Int("end", rank)));
  return ir::Constant(Int64Tensor(FoldedExtents(node, start, end)));
}

ir::Expr ConvertSize(const NodeContext& node) {
  const std::vector<int64_t> shape = FoldedExtents(node, 0, node.InputRank(0));
  return ir::Constant(Int64Tensor({Product(shape, 0, shape.size())}, std::vector<int64_t>{}));
}

}  // namespace

void AddConstantConverters(std::vector<ConverterEntry>& table) {
  table.push_back({"Constant", kMinOpset, kMaxOpset, ConvertConstant});
  table.push_back({"ConstantOfShape", 9, kMaxOpset, ConvertConstantOfShape});
  table.push_back({"Shape", kMinOpset, kMaxOpset, ConvertShape});
  table.push_back({"Size", kMinOpset, kMaxOpset, ConvertSize});
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
