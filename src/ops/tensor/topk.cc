// topk: ONNX TopK with k as a size attribute (a constant, or a size read at run time). The k
// largest (or smallest) entries along `axis` and their int64 positions, as a tuple (values,
// indices); ties go to the lower position, as ONNX.
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
  const arith::SizeExpr k = ctx.SizeAttr("k");
  const std::string what = "'k' = " + k.ToString() + " must lie in [0, " + shape[axis].ToString() +
                           "], the extent of axis " + std::to_string(axis);
  KILN_CHECK(!ctx.analyzer().CanProveLE(k, arith::IntImm(-1)), TypeError) << ctx.Describe(what);
  // A k read at run time is deferred like any undecided size: checked once it is read.
  const SizeFact fits = ProveGE(ctx, shape[axis], k);
  KILN_CHECK(fits.holds() || fits.Defer(ctx, what), TypeError)
      << ctx.Describe(what + fits.Undecided());
  shape[axis] = k;
  return ir::TupleType({TypeRelationContext::TensorResult(shape, ctx.DType(0)),
                        TypeRelationContext::TensorResult(shape, kInt64)});
}

KILN_REGISTER_OP("topk")
    .add_input("data")
    .add_attr("k", AttrKind::kSize)
    .add_attr("axis", AttrKind::kInt, int64_t{-1})
    .add_attr("largest", AttrKind::kBool, true)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(TopKRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
