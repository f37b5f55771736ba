// expand: ONNX Expand with the shape as an attribute (size expressions where it is computed
// from symbolic sizes); the shape and the input's broadcast in both directions, so a 1 in
// `shape` keeps the input's extent.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type ExpandRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const std::vector<arith::SizeExpr> shape = ctx.SizesAttr("shape");
  std::optional<std::vector<arith::SizeExpr>> out =
      BroadcastTwoShapes(ctx, data, shape, "attribute 'shape'");
  KILN_CHECK(out.has_value(), TypeError)
      << ctx.Describe("'data' of shape " + ir::ShapeToText(data) +
                      " does not broadcast with attribute 'shape' = " + ir::ShapeToText(shape));
  return TypeRelationContext::TensorResult(*out, ctx.DType(0));
}

KILN_REGISTER_OP("expand")
    .add_input("data")
    .add_attr("shape", AttrKind::kSizes)
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(ExpandRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
