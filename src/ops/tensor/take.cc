// take: ONNX Gather. Entries of `indices` pick slices of `data` along `axis`; the result has
// `data`'s shape with that axis replaced by `indices`' shape. Negative indices count from the
// end (checked, like bounds, when the kernel runs).
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type TakeRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const std::vector<arith::SizeExpr> indices = ctx.Shape(1);
  const DLDataType index_type = ctx.DType(1);
  KILN_CHECK(DataTypeEqual(index_type, kInt32) || DataTypeEqual(index_type, kInt64), TypeError)
      << ctx.Describe(ctx.ArgName(1) + " must be int32 or int64, got " +
                      DataTypeToString(index_type));
  const int64_t axis =
      ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), static_cast<int64_t>(data.size()), "axis");
  std::vector<arith::SizeExpr> out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return TypeRelationContext::TensorResult(out, ctx.DType(0));
}

KILN_REGISTER_OP("take")
    .add_input("data")
    .add_input("indices")
    .add_attr("axis", AttrKind::kInt, int64_t{0})
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(TakeRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
