// transpose: ONNX Transpose; without `axes` the dimensions are reversed.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type TransposeRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const auto rank = static_cast<int64_t>(data.size());
  std::vector<int64_t> axes(data.size());
  for (int64_t i = 0; i < rank; ++i) axes[i] = rank - 1 - i;
  if (ctx.HasAttr("axes")) axes = ctx.IntsAttr("axes");
  KILN_CHECK(static_cast<int64_t>(axes.size()) == rank, TypeError) << ctx.Describe(
      "axes " + ir::ShapeToText(axes) + " must list all " + std::to_string(rank) + " dimensions");
  std::vector<bool> seen(data.size(), false);
  std::vector<arith::SizeExpr> shape;
  for (int64_t axis : axes) {
    const int64_t normalized = ctx.NormalizeAxis(axis, rank, "axes");
    KILN_CHECK(!seen[normalized], TypeError)
        << ctx.Describe("axes " + ir::ShapeToText(axes) + " is not a permutation");
    seen[normalized] = true;
    shape.push_back(data[normalized]);
  }
  return TypeRelationContext::TensorResult(shape, ctx.DType(0));
}

KILN_REGISTER_OP("transpose")
    .add_input("data")
    .add_attr("axes", AttrKind::kInts, Any(nullptr))
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(TransposeRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
