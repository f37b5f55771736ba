// topk: ONNX TopK with k as an attribute. The k largest (or smallest) entries along `axis` and
// their int64 positions, as a tuple (values, indices); ties go to the lower position, as ONNX.
#include <kiln/ir/op.h>

#include <string>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type TopKRelation(const TypeRelationContext& ctx) {
  std::vector<arith::SizeExpr> shape = ctx.Shape(0);
  const int64_t axis =
      ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), static_cast<int64_t>(shape.size()), "axis");
  const auto k = ctx.Attr<int64_t>("k");
  const auto message = [&](const std::string& undecided) {
    return ctx.Describe("'k' = " + std::to_string(k) + " must lie in [0, " +
                        shape[axis].ToString() + "], the extent of axis " + std::to_string(axis) +
                        undecided);
  };
  KILN_CHECK(k >= 0, TypeError) << message("");
  const SizeFact fits = ProveGE(ctx, shape[axis], arith::IntImm(k));
  KILN_CHECK(fits.holds(), TypeError) << message(fits.Undecided());
  shape[axis] = arith::IntImm(k);
  return ir::TupleType({TypeRelationContext::TensorResult(shape, ctx.DType(0)),
                        TypeRelationContext::TensorResult(shape, kInt64)});
}

KILN_REGISTER_OP("topk")
    .add_input("data")
    .add_attr("k", AttrKind::kInt)
    .add_attr("axis", AttrKind::kInt, int64_t{-1})
    .add_attr("largest", AttrKind::kBool, true)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(TopKRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
