// ONNX Unique along an axis as two ops (docs/design.md §22): the size op unique_count says how
// many distinct slices 'data' has along `axis`, and unique, whose `count` names that size,
// returns them with ONNX's three other outputs. The frontend flattens 'data' for a Unique
// without an axis. Both kernels group the slices alike (src/kernels/cpu/unique.cc).
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

/// `axis` of 'data', which must have at least one dimension.
int64_t UniqueAxis(const TypeRelationContext& ctx) {
  const auto rank = static_cast<int64_t>(ctx.Shape(0).size());
  KILN_CHECK(rank >= 1, TypeError) << ctx.Describe("'data' must have at least one dimension");
  return ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), rank, "axis");
}

Type UniqueCountRelation(const TypeRelationContext& ctx) {
  UniqueAxis(ctx);
  return TypeRelationContext::TensorResult(std::vector<int64_t>{1}, kInt64);
}

KILN_REGISTER_OP("unique_count")
    .add_input("data")
    .add_attr("axis", AttrKind::kInt, int64_t{0})
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(UniqueCountRelation);

/// (values, indices, inverse_indices, counts): the `count` distinct slices along `axis`, the
/// position of each one's first occurrence, the distinct slice of each position, and how often
/// each occurs.
Type UniqueRelation(const TypeRelationContext& ctx) {
  const int64_t axis = UniqueAxis(ctx);
  std::vector<arith::SizeExpr> shape = ctx.Shape(0);
  const arith::SizeExpr extent = shape[axis];
  const arith::SizeExpr count = ctx.SizeAttr("count");
  shape[axis] = count;
  const Type per_distinct =
      TypeRelationContext::TensorResult(std::vector<arith::SizeExpr>{count}, kInt64);
  return ir::TupleType(
      {TypeRelationContext::TensorResult(shape, ctx.DType(0)), per_distinct,
       TypeRelationContext::TensorResult(std::vector<arith::SizeExpr>{extent}, kInt64),
       per_distinct});
}

KILN_REGISTER_OP("unique")
    .add_input("data")
    .add_attr("count", AttrKind::kSize)
    .add_attr("axis", AttrKind::kInt, int64_t{0})
    .add_attr("sorted", AttrKind::kBool, true)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(UniqueRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
