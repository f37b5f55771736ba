// nn.conv2d and nn.conv3d: convolution in NCHW / NCDHW with groups, dilation and explicit
// padding (ONNX Conv; the frontend turns auto_pad into explicit pads).
#include <kiln/ir/op.h>

#include "../op_common.h"
#include "../window.h"

namespace kiln {
namespace op {
namespace {

/// (N, C, spatial...) data and (O, C/groups, kernel...) weight with kRank spatial axes. The
/// batch, channels and spatial extents may be symbolic; the kernel extents must be static.
template <size_t kRank>
Type ConvRelation(const TypeRelationContext& ctx) {
  const char* data_layout = kRank == 2 ? "(N, C, H, W)" : "(N, C, D, H, W)";
  const char* weight_layout = kRank == 2 ? "(O, C/groups, KH, KW)" : "(O, C/groups, KD, KH, KW)";
  const std::vector<arith::SizeExpr> data = ShapeOfRank(ctx, 0, kRank + 2, data_layout);
  const std::vector<arith::SizeExpr> weight = ShapeOfRank(ctx, 1, kRank + 2, weight_layout);
  ctx.CheckSameDType(0, 1);
  const int64_t groups = ReadGroups(ctx, weight[0], "output channels of 'weight'");
  const SizeFact channels = ProveEqual(ctx, data[1], weight[1] * groups);
  KILN_CHECK(channels.holds(), TypeError) << ctx.Describe(
      "input channels " + data[1].ToString() + " of 'data' do not match " + weight[1].ToString() +
      " channels of 'weight' x " + std::to_string(groups) + " groups" + channels.Undecided());
  std::vector<int64_t> kernel;
  for (size_t i = 2; i < weight.size(); ++i) {
    kernel.push_back(StaticExtent(ctx, 1, weight, i, "the kernel extent"));
  }
  const Window window = ReadWindow(ctx, kernel);
  const std::vector<arith::SizeExpr> spatial =
      WindowOutputShape(ctx, window, std::vector<arith::SizeExpr>(data.begin() + 2, data.end()));
  std::vector<arith::SizeExpr> out = {data[0], weight[0]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  return TypeRelationContext::TensorResult(out, ctx.DType(0));
}

KILN_REGISTER_OP("nn.conv2d")
    .add_input("data")
    .add_input("weight")
    .add_attr("strides", AttrKind::kInts, Array<int64_t>{1, 1})
    .add_attr("padding", AttrKind::kInts, Array<int64_t>{0, 0, 0, 0})
    .add_attr("dilation", AttrKind::kInts, Array<int64_t>{1, 1})
    .add_attr("groups", AttrKind::kInt, int64_t{1})
    .set_pattern(OpPattern::kOutEWiseFusable)
    .set_type_relation(ConvRelation<2>);

KILN_REGISTER_OP("nn.conv3d")
    .add_input("data")
    .add_input("weight")
    .add_attr("strides", AttrKind::kInts, Array<int64_t>{1, 1, 1})
    .add_attr("padding", AttrKind::kInts, Array<int64_t>{0, 0, 0, 0, 0, 0})
    .add_attr("dilation", AttrKind::kInts, Array<int64_t>{1, 1, 1})
    .add_attr("groups", AttrKind::kInt, int64_t{1})
    .set_pattern(OpPattern::kOutEWiseFusable)
    .set_type_relation(ConvRelation<3>);

}  // namespace
}  // namespace op
}  // namespace kiln
