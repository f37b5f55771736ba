// nn.batch_norm in inference form (ONNX BatchNormalization with training_mode=0): one output,
// (x - mean) / sqrt(var + epsilon) * gamma + beta along `axis`. CanonicalizeBatchNorm folds it
// into the producer's constants or into a multiply and an add.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type BatchNormRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const int64_t axis =
      ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), static_cast<int64_t>(data.size()), "axis");
  for (int64_t i = 1; i < ctx.num_args(); ++i) {
    ctx.CheckSameDType(0, i);
    const SizeFact channels = ProveSameShape(ctx, ctx.Shape(i), {data[axis]});
    KILN_CHECK(channels.holds(), TypeError) << ctx.Describe(
        ctx.ArgName(i) + " must have shape (" + data[axis].ToString() +
        "), the channels of 'data' along axis " + std::to_string(axis) + channels.Undecided());
  }
  return ctx.arg_type(0);
}

KILN_REGISTER_OP("nn.batch_norm")
    .add_input("data")
    .add_input("gamma")
    .add_input("beta")
    .add_input("mean")
    .add_input("var")
    .add_attr("axis", AttrKind::kInt, int64_t{1})
    .add_attr("epsilon", AttrKind::kFloat, 1e-5)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(BatchNormRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
