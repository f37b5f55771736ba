// Type relations shared by several families of core ops.
#include "op_common.h"

namespace kiln {
namespace op {

Type SameAsInputRelation(const TypeRelationContext& ctx) {
  ctx.Tensor(0);
  return ctx.arg_type(0);
}

std::vector<int64_t> BroadcastArgShapes(const TypeRelationContext& ctx, int64_t first_arg) {
  std::vector<int64_t> shape = ctx.StaticShape(first_arg);
  for (int64_t i = first_arg + 1; i < ctx.num_args(); ++i) {
    std::optional<std::vector<int64_t>> broadcast = ir::BroadcastShapes(shape, ctx.StaticShape(i));
    KILN_CHECK(broadcast.has_value(), TypeError) << ctx.Describe(
        "shapes " + ir::ShapeToText(shape) + " and " + ir::ShapeToText(ctx.StaticShape(i)) +
        " of " + ctx.ArgName(i) + " do not broadcast");
    shape = *broadcast;
  }
  return shape;
}

Type BroadcastRelation(const TypeRelationContext& ctx) {
  for (int64_t i = 1; i < ctx.num_args(); ++i) ctx.CheckSameDType(0, i);
  return TypeRelationContext::TensorResult(BroadcastArgShapes(ctx, 0), ctx.DType(0));
}

Type CompareRelation(const TypeRelationContext& ctx) {
  for (int64_t i = 1; i < ctx.num_args(); ++i) ctx.CheckSameDType(0, i);
  return TypeRelationContext::TensorResult(BroadcastArgShapes(ctx, 0), kBool);
}

DLDataType DTypeAttr(const TypeRelationContext& ctx, const char* name) {
  // The schema (AttrKind::kDType) guarantees the string parses.
  return *ParseDataType(ctx.Attr<String>(name).str());
}

}  // namespace op
}  // namespace kiln
