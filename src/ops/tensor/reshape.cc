// reshape: ONNX Reshape with the target shape as an attribute (the frontend folds the shape
// input, into size expressions where it is computed from symbolic sizes): a constant 0 copies
// the input's extent at that position, a constant -1 is inferred from the rest.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

/// The extent -1 stands for in `target`: floordiv(elements, known), where `known` is the product
/// of the other extents. TypeError unless the analyzer proves that `known` divides `elements`,
/// or when it proves `known` is 0 (which leaves -1 undefined; a symbolic `known` such as batch
/// is taken to be positive).
arith::SizeExpr InferredExtent(const TypeRelationContext& ctx, const std::string& target,
                               const arith::SizeExpr& elements, const arith::SizeExpr& known) {
  const std::string what =
      target + " cannot hold the " + elements.ToString() + " elements of 'data'";
  KILN_CHECK(!ctx.analyzer().CanProveLE(known, arith::IntImm(0)), TypeError) << ctx.Describe(what);
  const SizeFact divides = ProveDivisible(ctx, elements, known);
  KILN_CHECK(divides.holds(), TypeError) << ctx.Describe(what + divides.Undecided());
  return ctx.analyzer().Simplify(arith::FloorDiv(elements, known));
}

Type ReshapeRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const std::vector<arith::SizeExpr> newshape = ctx.SizesAttr("newshape");
  const std::string target = "newshape " + ir::ShapeToText(newshape);
  std::vector<arith::SizeExpr> shape;
  int64_t inferred = -1;
  for (size_t i = 0; i < newshape.size(); ++i) {
    const std::optional<int64_t> constant = newshape[i].as_int();
    if (!constant.has_value()) {
      shape.push_back(ctx.analyzer().Simplify(newshape[i]));
    } else if (*constant == 0) {
      KILN_CHECK(i < data.size(), TypeError) << ctx.Describe(
          target + " copies dimension " + std::to_string(i) + " (0) that 'data' does not have");
      shape.push_back(data[i]);
    } else if (*constant == -1) {
      KILN_CHECK(inferred < 0, TypeError) << ctx.Describe(target + " has more than one -1");
      inferred = static_cast<int64_t>(i);
      shape.push_back(arith::IntImm(1));
    } else {
      KILN_CHECK(*constant > 0, TypeError)
          << ctx.Describe(target + " has the invalid extent " + std::to_string(*constant));
      shape.push_back(newshape[i]);
    }
  }
  const arith::SizeExpr elements = NumElementsExpr(ctx, data);
  if (inferred >= 0) {
    // The inferred extent makes the element counts equal by construction.
    shape[inferred] = InferredExtent(ctx, target, elements, NumElementsExpr(ctx, shape));
    return TypeRelationContext::TensorResult(shape, ctx.DType(0));
  }
  const arith::SizeExpr count = NumElementsExpr(ctx, shape);
  const SizeFact same = ProveEqual(ctx, count, elements);
  const std::string what =
      target + " has " + count.ToString() + " elements, 'data' " + elements.ToString();
  KILN_CHECK(same.holds() || same.Defer(ctx, what), TypeError) << ctx.Describe(what);
  return TypeRelationContext::TensorResult(shape, ctx.DType(0));
}

KILN_REGISTER_OP("reshape")
    .add_input("data")
    .add_attr("newshape", AttrKind::kSizes)
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(ReshapeRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
