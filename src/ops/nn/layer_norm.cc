// nn.layer_norm: normalization over the dimensions from `axis` on, scaled by gamma and shifted
// by beta (ONNX LayerNormalization with one output).
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type LayerNormRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const int64_t axis =
      ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), static_cast<int64_t>(data.size()), "axis");
  const std::vector<arith::SizeExpr> normalized(data.begin() + axis, data.end());
  for (int64_t i = 1; i < ctx.num_args(); ++i) {
    ctx.CheckSameDType(0, i);
    const std::vector<arith::SizeExpr> param = ctx.Shape(i);
    const SizeFact same = ProveSameShape(ctx, param, normalized);
    KILN_CHECK(same.holds(), TypeError)
        << ctx.Describe(ctx.ArgName(i) + " must have shape " + ir::ShapeToText(normalized) +
                        ", the dimensions of 'data' from axis " + std::to_string(axis) +
                        " on; got " + ir::ShapeToText(param) + same.Undecided());
  }
  return ctx.arg_type(0);
}

KILN_REGISTER_OP("nn.layer_norm")
    .add_input("data")
    .add_input("gamma")
    .add_input("beta")
    .add_attr("axis", AttrKind::kInt, int64_t{-1})
    .add_attr("epsilon", AttrKind::kFloat, 1e-5)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(LayerNormRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
