// topk: ONNX TopK with k as an attribute. The k largest (or smallest) entries along `axis` and
// their int64 positions, as a tuple (values, indices); ties go to the lower position, as ONNX.
#include <kiln/ir/op.h>

#include <string>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type TopKRelation(const TypeRelationContext& ctx) {
  std::vector<int64_t> shape = ctx.StaticShape(0);
  const int64_t axis =
      ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), static_cast<int64_t>(shape.size()), "axis");
  const auto k = ctx.Attr<int64_t>("k");
  KILN_CHECK(k >= 0 && k <= shape[axis], TypeError) << ctx.Describe(
      "'k' = " + std::to_string(k) + " must lie in [0, " + std::to_string(shape[axis]) +
      "], the extent of axis " + std::to_string(axis));
  shape[axis] = k;
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
