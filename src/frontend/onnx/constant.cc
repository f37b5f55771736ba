// ONNX ops whose value is known when importing: Constant, ConstantOfShape (filled at run time
// where its shape is symbolic or computed), and Shape and Size (shape values, constants where
// static).
#include <kiln/ffi/error.h>

#include <algorithm>

#include "converter.h"
#include "shape_propagation.h"
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

// A shape computed from symbolic sizes fills at run time: the value broadcast to that shape.
ir::Expr ConvertConstantOfShape(const NodeContext& node) {
  DLDataType dtype = kFloat32;
  double value = 0.0;
  if (const onnx::TensorProto* proto = node.TensorAttr("value")) {
    const Tensor element = TensorFromProto(*proto);
    KILN_CHECK(element.NumElements() == 1, ValueError)
        << node.Describe() << ": value must hold one element";
    dtype = element.dtype();
    value = TensorAsDoubles(element)[0];
  }
  if (node.IsRunTimeValue(0)) {
    // The shape's values are the sizes themselves (a negative one is refused when read).
    const std::vector<arith::SizeExpr> sizes = node.NewSizes(node.InputExtent(0, 0));
    return MakeCall("expand", {DefineSizes(MakeScalar(value, dtype), node.Input(0), sizes)},
                    {{"shape", SizesAttr(sizes)}});
  }
  const std::vector<arith::SizeExpr> shape = node.SizesInput(0);
  if (std::optional<std::vector<int64_t>> extents = ConstantSizes(shape)) {
    return ir::Constant(FilledTensor(*extents, dtype, value));
  }
  return MakeCall("expand", {MakeScalar(value, dtype)}, {{"shape", SizesAttr(shape)}});
}

// The importer evaluates Shape and Size as shape values (shape_propagation.h) before it looks
// for a converter; this one serves other users of the converter table, with the same Constant.
ir::Expr ConvertShapeOrSize(const NodeContext& node) {
  const std::optional<ShapeValue> value = PropagateShapeValue(node);
  KILN_ICHECK(value.has_value()) << node.Describe() << " has no shape value";
  KILN_CHECK(!value->IsSymbolic(), NotImplementedError)
      << node.Describe() << ": its value " << value->ToString()
      << " is computed from symbolic sizes at run time, and Kiln does not materialize run-time "
         "shape values as tensors yet; "
      << SpecializeHint(node.sizes().inputs, value->elements);
  return ir::Constant(ShapeValueTensor(*value));
}

}  // namespace

void AddConstantConverters(std::vector<ConverterEntry>& table) {
  table.push_back({"Constant", kMinOpset, kMaxOpset, ConvertConstant});
  table.push_back({"ConstantOfShape", 9, kMaxOpset, ConvertConstantOfShape});
  table.push_back({"Shape", kMinOpset, kMaxOpset, ConvertShapeOrSize});
  table.push_back({"Size", kMinOpset, kMaxOpset, ConvertShapeOrSize});
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
