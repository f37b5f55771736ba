// image.grid_sample: ONNX GridSample (opset 16) on NCHW. Each output pixel (n, :, h, w) samples
// `data` at the normalized position grid[n, h, w] = (x, y) in [-1, 1]; `method` interpolates,
// `padding_mode` says what lies outside, `align_corners` whether -1 and 1 are the centers of
// the corner pixels (else their outer edges).
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type GridSampleRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ShapeOfRank(ctx, 0, 4, "(N, C, H, W)");
  const std::vector<arith::SizeExpr> grid = ShapeOfRank(ctx, 1, 4, "(N, H_out, W_out, 2)");
  const SizeFact fits = ProveSameShape(ctx, {grid[0], grid[3]}, {data[0], arith::IntImm(2)});
  KILN_CHECK(fits.holds(), TypeError)
      << ctx.Describe("'grid' " + ir::ShapeToText(grid) + " must be (N, H_out, W_out, 2) for " +
                      "'data' " + ir::ShapeToText(data) + fits.Undecided());
  ctx.CheckSameDType(0, 1);
  StringChoiceAttr(ctx, "method", {"bilinear", "nearest", "bicubic"});
  StringChoiceAttr(ctx, "padding_mode", {"zeros", "border", "reflection"});
  return TypeRelationContext::TensorResult({data[0], data[1], grid[1], grid[2]}, ctx.DType(0));
}

KILN_REGISTER_OP("image.grid_sample")
    .add_input("data")
    .add_input("grid")
    .add_attr("method", AttrKind::kString, String("bilinear"))
    .add_attr("padding_mode", AttrKind::kString, String("zeros"))
    .add_attr("align_corners", AttrKind::kBool, false)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(GridSampleRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
