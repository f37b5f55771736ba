// nn.conv2d_transpose: the gradient of nn.conv2d with respect to its input, in NCHW (ONNX
// ConvTranspose with explicit pads; the frontend turns output_shape and auto_pad into pads and
// output_padding).
#include <kiln/ir/op.h>

#include <algorithm>

#include "../op_common.h"
#include "../window.h"

namespace kiln {
namespace op {
namespace {

/// The output extent along spatial dimension `i`, over which a conv2d with `window` gives back
/// the `input` extent (output_padding adds the rows that conv2d's stride would drop).
arith::SizeExpr TransposedExtent(const TypeRelationContext& ctx, const Window& window, size_t i,
                                 const arith::SizeExpr& input,
                                 const std::vector<int64_t>& output_padding) {
  // output_padding restores rows a strided (or dilated) conv2d would have dropped, so there
  // are fewer of them than the stride or the dilation.
  KILN_CHECK(output_padding[i] < std::max(window.strides[i], window.dilation[i]), TypeError)
      << ctx.Describe("attribute 'output_padding' = " + ir::ShapeToText(output_padding) +
                      " must be smaller than the stride or the dilation of its dimension");
  // The same bound as WindowOutputShape's, so the products of static sizes stay under 2^62.
  KILN_CHECK(ctx.analyzer().Bound(input).min <= (int64_t{1} << 40), TypeError)
      << ctx.Describe("spatial dimension " + std::to_string(i) + " of 'data' is too large");
  arith::SizeExpr extent = ctx.analyzer().Simplify(
      (input - 1) * window.strides[i] + (window.dilation[i] * (window.kernel[i] - 1) + 1) +
      (output_padding[i] - window.padding[i] - window.padding[i + 2]));
  const SizeFact positive = ProveGE(ctx, extent, arith::IntImm(1));
  KILN_CHECK(positive.holds(), TypeError) << ctx.Describe(
      "padding " + ir::ShapeToText(window.padding) + " leaves no output in spatial dimension " +
      std::to_string(i) + positive.Undecided());
  return extent;
}

Type Conv2DTransposeRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ShapeOfRank(ctx, 0, 4, "(N, C, H, W)");
  const std::vector<arith::SizeExpr> weight = ShapeOfRank(ctx, 1, 4, "(C, O/groups, KH, KW)");
  ctx.CheckSameDType(0, 1);
  const int64_t groups = ReadGroups(ctx, weight[0], "input channels of 'weight'");
  const SizeFact channels = ProveEqual(ctx, data[1], weight[0]);
  KILN_CHECK(channels.holds(), TypeError) << ctx.Describe(
      "input channels " + data[1].ToString() + " of 'data' do not match " + weight[0].ToString() +
      " input channels of 'weight' (C, O/groups, KH, KW)" + channels.Undecided());
  const Window window = ReadWindow(ctx, {StaticExtent(ctx, 1, weight, 2, "the kernel extent"),
                                         StaticExtent(ctx, 1, weight, 3, "the kernel extent")});
  const std::vector<int64_t> output_padding = ReadBoundedInts(ctx, "output_padding", 2, 0);
  std::vector<arith::SizeExpr> out = {data[0], ctx.analyzer().Simplify(weight[1] * groups)};
  for (size_t i = 0; i < 2; ++i) {
    out.push_back(TransposedExtent(ctx, window, i, data[i + 2], output_padding));
  }
  return TypeRelationContext::TensorResult(out, ctx.DType(0));
}

KILN_REGISTER_OP("nn.conv2d_transpose")
    .add_input("data")
    .add_input("weight")
    .add_attr("strides", AttrKind::kInts, Array<int64_t>{1, 1})
    .add_attr("padding", AttrKind::kInts, Array<int64_t>{0, 0, 0, 0})
    .add_attr("output_padding", AttrKind::kInts, Array<int64_t>{0, 0})
    .add_attr("dilation", AttrKind::kInts, Array<int64_t>{1, 1})
    .add_attr("groups", AttrKind::kInt, int64_t{1})
    .set_pattern(OpPattern::kOutEWiseFusable)
    .set_type_relation(Conv2DTransposeRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
