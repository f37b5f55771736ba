// image.resize2d: ONNX Resize of the H and W of an NCHW tensor to `size` (the frontend computes
// it from scales). The string attributes are ONNX's mode, coordinate_transformation_mode and
// nearest_mode; cubic_alpha and cubic_exclude are cubic_coeff_a and exclude_outside. `scales`
// ([H, W], when the model gave scales) is what output coordinates are divided by; without it
// the ratio of the sizes is used, as ONNX does for a Resize given sizes.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type Resize2DRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ShapeOfRank(ctx, 0, 4, "(N, C, H, W)");
  const std::vector<int64_t> size = ReadBoundedInts(ctx, "size", 2, 1);
  if (ctx.HasAttr("scales")) {
    const std::vector<double> scales = ctx.FloatsAttr("scales");
    KILN_CHECK(scales.size() == 2 && scales[0] > 0 && scales[1] > 0, TypeError)
        << ctx.Describe("'scales' must be two positive values [H, W]");
  }
  StringChoiceAttr(ctx, "method", {"nearest", "linear", "cubic"});
  StringChoiceAttr(ctx, "coordinate_transformation_mode",
                   {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                    "asymmetric", "tf_half_pixel_for_nn"});
  StringChoiceAttr(ctx, "rounding_method",
                   {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  return TypeRelationContext::TensorResult(
      {data[0], data[1], arith::IntImm(size[0]), arith::IntImm(size[1])}, ctx.DType(0));
}

KILN_REGISTER_OP("image.resize2d")
    .add_input("data")
    .add_attr("size", AttrKind::kInts)
    .add_attr("method", AttrKind::kString, String("nearest"))
    .add_attr("coordinate_transformation_mode", AttrKind::kString, String("half_pixel"))
    .add_attr("rounding_method", AttrKind::kString, String("round_prefer_floor"))
    .add_attr("cubic_alpha", AttrKind::kFloat, -0.75)
    .add_attr("cubic_exclude", AttrKind::kBool, false)
    .add_attr("scales", AttrKind::kFloats, Any(nullptr))
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(Resize2DRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
