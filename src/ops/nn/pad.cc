// nn.pad: ONNX Pad with the pads as an attribute, in ONNX order (all begins, then all ends).
// Negative pads crop. reflect mirrors without repeating the edge, so it pads at most extent - 1.
#include <kiln/ir/op.h>

#include <algorithm>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type PadRelation(const TypeRelationContext& ctx) {
  std::vector<int64_t> shape = ctx.StaticShape(0);
  const size_t rank = shape.size();
  const std::vector<int64_t> pads = ctx.IntsAttr("pads");
  const std::string mode = StringChoiceAttr(ctx, "mode", {"constant", "reflect", "edge"});
  KILN_CHECK(pads.size() == 2 * rank, TypeError)
      << ctx.Describe("attribute 'pads' = " + ir::ShapeToText(pads) + " must have 2 x " +
                      std::to_string(rank) + " entries for 'data' " + ir::ShapeToText(shape));
  for (size_t i = 0; i < rank; ++i) {
    const int64_t extent = shape[i] + pads[i] + pads[i + rank];
    KILN_CHECK(extent >= 0, TypeError)
        << ctx.Describe("attribute 'pads' = " + ir::ShapeToText(pads) + " crops dimension " +
                        std::to_string(i) + " of 'data' " + ir::ShapeToText(shape) + " below 0");
    const int64_t widest = std::max(pads[i], pads[i + rank]);
    KILN_CHECK(mode != "reflect" || widest < shape[i], TypeError) << ctx.Describe(
        "mode 'reflect' pads dimension " + std::to_string(i) + " of 'data' " +
        ir::ShapeToText(shape) + " by " + std::to_string(widest) + ", more than its extent - 1");
    KILN_CHECK(mode != "edge" || widest <= 0 || shape[i] > 0, TypeError)
        << ctx.Describe("mode 'edge' cannot pad the empty dimension " + std::to_string(i) +
                        " of 'data' " + ir::ShapeToText(shape));
    shape[i] = extent;
  }
  return TypeRelationContext::TensorResult(shape, ctx.DType(0));
}

KILN_REGISTER_OP("nn.pad")
    .add_input("data")
    .add_attr("pads", AttrKind::kInts)
    .add_attr("mode", AttrKind::kString, String("constant"))
    .add_attr("pad_value", AttrKind::kFloat, 0.0)
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(PadRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
