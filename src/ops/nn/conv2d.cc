// nn.conv2d: 2-D convolution in NCHW with groups, dilation and explicit padding (ONNX Conv;
// the frontend turns auto_pad into explicit pads).
#include <kiln/ir/op.h>

#include "../op_common.h"
#include "../window.h"

namespace kiln {
namespace op {
namespace {

Type Conv2DRelation(const TypeRelationContext& ctx) {
  const std::vector<int64_t> data = ShapeOfRank(ctx, 0, 4, "(N, C, H, W)");
  const std::vector<int64_t> weight = ShapeOfRank(ctx, 1, 4, "(O, C/groups, KH, KW)");
  ctx.CheckSameDType(0, 1);
  const int64_t groups = ctx.Attr<int64_t>("groups");
  KILN_CHECK(groups >= 1 && weight[0] % groups == 0, TypeError)
      << ctx.Describe("groups = " + std::to_string(groups) + " must be positive and divide the " +
                      std::to_string(weight[0]) + " output channels of 'weight'");
  KILN_CHECK(data[1] == weight[1] * groups, TypeError) << ctx.Describe(
      "input channels " + std::to_string(data[1]) + " of 'data' do not match " +
      std::to_string(weight[1]) + " channels of 'weight' x " + std::to_string(groups) + " groups");
  const Window window = ReadWindow(ctx, {weight[2], weight[3]});
  const std::vector<int64_t> spatial = WindowOutputShape(ctx, window, {data[2], data[3]});
  return TypeRelationContext::TensorResult({data[0], weight[0], spatial[0], spatial[1]},
                                           ctx.DType(0));
}

KILN_REGISTER_OP("nn.conv2d")
    .add_input("data")
    .add_input("weight")
    .add_attr("strides", AttrKind::kInts, Array<int64_t>{1, 1})
    .add_attr("padding", AttrKind::kInts, Array<int64_t>{0, 0, 0, 0})
    .add_attr("dilation", AttrKind::kInts, Array<int64_t>{1, 1})
    .add_attr("groups", AttrKind::kInt, int64_t{1})
    .set_pattern(OpPattern::kOutEWiseFusable)
    .set_type_relation(Conv2DRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
