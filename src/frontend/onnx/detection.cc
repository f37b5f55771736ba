// Object-detection ONNX ops: NonMaxSuppression, whose number of selected boxes its inputs'
// values decide (docs/design.md §22), so every input may be fed at run time.
#include <vector>

#include "converter.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// non_max_suppression_count gives the number of selected boxes, non_max_suppression's `count`.
/// An omitted scalar input becomes one of no elements, which the ops read as ONNX's default.
ir::Expr ConvertNonMaxSuppression(const NodeContext& node) {
  const DLDataType scalar_dtypes[] = {{kDLInt, 64, 1}, {kDLFloat, 32, 1}, {kDLFloat, 32, 1}};
  Array<ir::Expr> args{node.Input(0), node.Input(1)};
  for (size_t index = 2; index < 5; ++index) {
    args.push_back(node.HasInput(index)
                       ? node.Input(index)
                       : ir::Constant(FilledTensor({0}, scalar_dtypes[index - 2], 0)));
  }
  Map<String, Any> attrs{{"center_point_box", node.Int("center_point_box", 0)}};
  const std::vector<arith::SizeExpr> count = node.NewSizes(1);
  Array<ir::Expr> sized = args;
  sized.Set(0, DefineSizes(args[0], MakeCall("non_max_suppression_count", args, attrs), count));
  attrs.Set("count", SizeAttr(count[0]));
  return MakeCall("non_max_suppression", sized, attrs);
}

}  // namespace

void AddDetectionConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "NonMaxSuppression", 10, kMaxOpset, ConvertNonMaxSuppression);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
