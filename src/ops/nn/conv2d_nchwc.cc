// The channel-blocked layout's ops (docs/design.md §48): block_channels and unblock_channels
// move a tensor into and out of it, nn.conv2d_nchwc convolves within it.
#include <kiln/ir/channel_blocks.h>
#include <kiln/ir/op.h>

#include "../op_common.h"
#include "../window.h"

namespace kiln {
namespace op {
namespace {

using ir::ChannelBlocks;
using ir::kChannelBlock;

/// (N, C, *S) -> (N, ceil(C / 16), *S, 16); C static.
Type BlockChannelsRelation(const TypeRelationContext& ctx) {
  std::vector<arith::SizeExpr> shape = ctx.Shape(0);
  KILN_CHECK(shape.size() >= 2, TypeError)
      << ctx.Describe("data must have a batch and a channel axis, got " +
                      std::to_string(shape.size()) + " dimensions");
  const int64_t channels = StaticExtent(ctx, 0, shape, 1, "the channel count");
  shape[1] = arith::IntImm(ChannelBlocks(channels));
  shape.push_back(arith::IntImm(kChannelBlock));
  return TypeRelationContext::TensorResult(shape, ctx.DType(0));
}

/// (N, B, *S, 16) -> (N, channels, *S), channels within the B blocks.
Type UnblockChannelsRelation(const TypeRelationContext& ctx) {
  std::vector<arith::SizeExpr> shape = ctx.Shape(0);
  KILN_CHECK(shape.size() >= 3 && shape.back().as_int() == kChannelBlock, TypeError)
      << ctx.Describe("data must be blocked (N, C/16, ..., 16)");
  const int64_t blocks = StaticExtent(ctx, 0, shape, 1, "the channel block count");
  const int64_t channels = ctx.Attr<int64_t>("channels");
  KILN_CHECK(channels > 0 && ChannelBlocks(channels) == blocks, TypeError)
      << ctx.Describe("channels " + std::to_string(channels) + " do not fill " +
                      std::to_string(blocks) + " blocks of " + std::to_string(kChannelBlock));
  shape.pop_back();
  shape[1] = arith::IntImm(channels);
  return TypeRelationContext::TensorResult(shape, ctx.DType(0));
}

/// Data (N, ceil(C / 16), H, W, 16), weight (O, C / groups, KH, KW), groups 1 or C (= O) ->
/// (N, ceil(O / 16), OH, OW, 16).
Type Conv2DNchwcRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ShapeOfRank(ctx, 0, 5, "(N, C/16, H, W, 16)");
  const std::vector<arith::SizeExpr> weight = ShapeOfRank(ctx, 1, 4, "(O, C/groups, KH, KW)");
  ctx.CheckSameDType(0, 1);
  KILN_CHECK(data[4].as_int() == kChannelBlock, TypeError)
      << ctx.Describe("data's last axis must be the block of 16 channels");
  const int64_t out_channels = StaticExtent(ctx, 1, weight, 0, "the output channel count");
  const int64_t groups = ctx.Attr<int64_t>("groups");
  const int64_t group_in = StaticExtent(ctx, 1, weight, 1, "the input channel count");
  const int64_t channels = group_in * groups;
  KILN_CHECK(groups == 1 || (group_in == 1 && groups == out_channels), TypeError) << ctx.Describe(
      "groups must be 1 or the channel count (depthwise), got " + std::to_string(groups));
  const int64_t blocks = StaticExtent(ctx, 0, data, 1, "the channel block count");
  KILN_CHECK(blocks == ChannelBlocks(channels), TypeError)
      << ctx.Describe(std::to_string(blocks) + " channel blocks of 'data' do not hold the " +
                      std::to_string(channels) + " input channels of 'weight'");
  const Window window = ReadWindow(ctx, {StaticExtent(ctx, 1, weight, 2, "the kernel extent"),
                                         StaticExtent(ctx, 1, weight, 3, "the kernel extent")});
  const std::vector<arith::SizeExpr> spatial = WindowOutputShape(ctx, window, {data[2], data[3]});
  return TypeRelationContext::TensorResult({data[0], arith::IntImm(ChannelBlocks(out_channels)),
                                            spatial[0], spatial[1], arith::IntImm(kChannelBlock)},
                                           ctx.DType(0));
}

KILN_REGISTER_OP("block_channels")
    .add_input("data")
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(BlockChannelsRelation);

KILN_REGISTER_OP("unblock_channels")
    .add_input("data")
    .add_attr("channels", AttrKind::kInt, int64_t{0})
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(UnblockChannelsRelation);

KILN_REGISTER_OP("nn.conv2d_nchwc")
    .add_input("data")
    .add_input("weight")
    .add_attr("strides", AttrKind::kInts, Array<int64_t>{1, 1})
    .add_attr("padding", AttrKind::kInts, Array<int64_t>{0, 0, 0, 0})
    .add_attr("dilation", AttrKind::kInts, Array<int64_t>{1, 1})
    .add_attr("groups", AttrKind::kInt, int64_t{1})
    .set_pattern(OpPattern::kOutEWiseFusable)
    .set_type_relation(Conv2DNchwcRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
