// image.resize2d: ONNX Resize of the H and W of an NCHW tensor to `size` (the frontend computes
// it from scales). The string attributes are ONNX's mode, coordinate_transformation_mode and
// nearest_mode; cubic_alpha and cubic_exclude are cubic_coeff_a and exclude_outside. `scales`
// ([H, W], when the model gave scales) is what output coordinates are divided by; without it
// the ratio of the sizes is used, as ONNX does for a Resize given sizes. `size` may hold sizes
// read at run time. image.resize2d_scaled takes ONNX's (N, C, H, W) scales as a tensor read at
// run time (a Resize whose scales are fed then), with `size` computed from them by resize_sizes.
#include <kiln/ir/op.h>

#include <algorithm>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

/// The result's (N, C, H, W): `size` gives H and W, each a constant of at least 1 or a size
/// read at run time; the string attributes must name ONNX's modes.
Type ResizedType(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ShapeOfRank(ctx, 0, 4, "(N, C, H, W)");
  const std::vector<arith::SizeExpr> size = ctx.SizesAttr("size");
  const bool valid = size.size() == 2 && std::all_of(size.begin(), size.end(), [](const auto& e) {
                       return e.as_int().value_or(1) >= 1;
                     });
  KILN_CHECK(valid, TypeError) << ctx.Describe(
      "attribute 'size' must be 2 extents [H, W], each "
      "at least 1, got " +
      ir::ShapeToText(size));
  StringChoiceAttr(ctx, "method", {"nearest", "linear", "cubic"});
  StringChoiceAttr(ctx, "coordinate_transformation_mode",
                   {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                    "asymmetric", "tf_half_pixel_for_nn"});
  StringChoiceAttr(ctx, "rounding_method",
                   {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  return TypeRelationContext::TensorResult({data[0], data[1], size[0], size[1]}, ctx.DType(0));
}

Type Resize2DRelation(const TypeRelationContext& ctx) {
  if (ctx.HasAttr("scales")) {
    const std::vector<double> scales = ctx.FloatsAttr("scales");
    KILN_CHECK(scales.size() == 2 && scales[0] > 0 && scales[1] > 0, TypeError)
        << ctx.Describe("'scales' must be two positive values [H, W]");
  }
  return ResizedType(ctx);
}

/// The scales are ONNX Resize's (N, C, H, W) scales input, read at run time.
Type ScaledResize2DRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> scales = ctx.Shape(1);
  KILN_CHECK(scales.size() == 1 && scales[0].as_int() == 4 &&
                 DataTypeEqual(ctx.DType(1), DLDataType{kDLFloat, 32, 1}),
             TypeError)
      << ctx.Describe("'scales' must be float32 of shape (4,), a scale per dimension");
  return ResizedType(ctx);
}

/// Adds the attributes both resize ops take (after their inputs) to `op`.
ir::OpRegisterer& WithResizeAttrs(ir::OpRegisterer& op) {
  return op.add_attr("size", AttrKind::kSizes)
      .add_attr("method", AttrKind::kString, String("nearest"))
      .add_attr("coordinate_transformation_mode", AttrKind::kString, String("half_pixel"))
      .add_attr("rounding_method", AttrKind::kString, String("round_prefer_floor"))
      .add_attr("cubic_alpha", AttrKind::kFloat, -0.75)
      .add_attr("cubic_exclude", AttrKind::kBool, false)
      .set_pattern(OpPattern::kInjective);
}

[[maybe_unused]] const bool kResize2DRegistered =
    (WithResizeAttrs(ir::Op::Register("image.resize2d").add_input("data"))
         .add_attr("scales", AttrKind::kFloats, Any(nullptr))
         .set_type_relation(Resize2DRelation),
     true);

[[maybe_unused]] const bool kScaledResize2DRegistered =
    (WithResizeAttrs(
         ir::Op::Register("image.resize2d_scaled").add_input("data").add_input("scales"))
         .set_type_relation(ScaledResize2DRelation),
     true);

}  // namespace
}  // namespace op
}  // namespace kiln
