// nn.softmax and nn.log_softmax along one axis (ONNX Softmax/LogSoftmax, opset 13: the axis is
// a single dimension, not a flattened suffix).
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type SoftmaxRelation(const TypeRelationContext& ctx) {
  const auto rank = static_cast<int64_t>(ctx.Shape(0).size());
  ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), rank, "axis");
  return ctx.arg_type(0);
}

#define KILN_REGISTER_SOFTMAX_OP(Name)               \
  KILN_REGISTER_OP(Name)                             \
      .add_input("data")                             \
      .add_attr("axis", AttrKind::kInt, int64_t{-1}) \
      .set_pattern(OpPattern::kOpaque)               \
      .set_type_relation(SoftmaxRelation)

KILN_REGISTER_SOFTMAX_OP("nn.softmax");
KILN_REGISTER_SOFTMAX_OP("nn.log_softmax");

#undef KILN_REGISTER_SOFTMAX_OP

}  // namespace
}  // namespace op
}  // namespace kiln
