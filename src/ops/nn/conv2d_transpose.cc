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

Type Conv2DTransposeRelation(const TypeRelationContext& ctx) {
  const std::vector<int64_t> data = ShapeOfRank(ctx, 0, 4, "(N, C, H, W)");
  const std::vector<int64_t> weight = ShapeOfRank(ctx, 1, 4, "(C, O/groups, KH, KW)");
  ctx.CheckSameDType(0, 1);
  const int64_t groups = ctx.Attr<int64_t>("groups");
  KILN_CHECK(groups >= 1 && weight[0] % groups == 0, TypeError)
      << ctx.Describe("groups = " + std::to_string(groups) + " must be positive and divide the " +
                      std::to_string(weight[0]) + " input channels of 'weight'");
  KILN_CHECK(data[1] == weight[0], TypeError) << ctx.Describe(
      "input channels " + std::to_string(data[1]) + " of 'data' do not match " +
      std::to_string(weight[0]) + " input channels of 'weight' (C, O/groups, KH, KW)");
  const Window window = ReadWindow(ctx, {weight[2], weight[3]});
  const std::vector<int64_t> output_padding = ReadBoundedInts(ctx, "output_padding", 2, 0);
  std::vector<int64_t> out = {data[0], weight[1] * groups, 0, 0};
  for (size_t i = 0; i < 2; ++i) {
    // output_padding restores rows a strided (or dilated) conv2d would have dropped, so there
    // are fewer of them than the stride or the dilation.
    KILN_CHECK(output_padding[i] < std::max(window.strides[i], window.dilation[i]), TypeError)
        << ctx.Describe("attribute 'output_padding' = " + ir::ShapeToText(output_padding) +
                        " must be smaller than the stride or the dilation of its dimension");
    // The same bound as WindowOutputShape's, so the products below stay under 2^62.
    KILN_CHECK(data[i + 2] <= (int64_t{1} << 40), TypeError)
        << ctx.Describe("spatial dimension " + std::to_string(i) + " of 'data' is too large");
    const int64_t extent = (data[i + 2] - 1) * window.strides[i] +
                           window.dilation[i] * (window.kernel[i] - 1) + 1 + output_padding[i] -
                           window.padding[i] - window.padding[i + 2];
    KILN_CHECK(extent >= 1, TypeError)
        << ctx.Describe("padding " + ir::ShapeToText(window.padding) +
                        " leaves no output in spatial dimension " + std::to_string(i));
    out[i + 2] = extent;
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
