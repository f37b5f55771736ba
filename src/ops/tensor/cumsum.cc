// cumsum: ONNX CumSum, with the axis as an attribute. Running sums along `axis`; `exclusive`
// leaves the current element out, `reverse` sums from the end.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type CumsumRelation(const TypeRelationContext& ctx) {
  const auto rank = static_cast<int64_t>(ctx.Shape(0).size());
  ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), rank, "axis");
  return ctx.arg_type(0);
}

KILN_REGISTER_OP("cumsum")
    .add_input("data")
    .add_attr("axis", AttrKind::kInt, int64_t{0})
    .add_attr("exclusive", AttrKind::kBool, false)
    .add_attr("reverse", AttrKind::kBool, false)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(CumsumRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
