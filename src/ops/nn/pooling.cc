// 2-D pooling in NCHW: nn.max_pool2d and nn.avg_pool2d (ONNX MaxPool/AveragePool with explicit
// pads), and the global forms that reduce H and W to 1 (GlobalMaxPool/GlobalAveragePool).
#include <kiln/ir/op.h>

#include "../op_common.h"
#include "../window.h"

namespace kiln {
namespace op {
namespace {

Type Pool2DRelation(const TypeRelationContext& ctx) {
  const std::vector<int64_t> data = ShapeOfRank(ctx, 0, 4, "(N, C, H, W)");
  const Window window = ReadWindow(ctx, ReadBoundedInts(ctx, "pool_size", 2, 1));
  const std::vector<int64_t> spatial = WindowOutputShape(ctx, window, {data[2], data[3]});
  return TypeRelationContext::TensorResult({data[0], data[1], spatial[0], spatial[1]},
                                           ctx.DType(0));
}

Type GlobalPool2DRelation(const TypeRelationContext& ctx) {
  const std::vector<int64_t> data = ShapeOfRank(ctx, 0, 4, "(N, C, H, W)");
  return TypeRelationContext::TensorResult({data[0], data[1], 1, 1}, ctx.DType(0));
}

// The attributes both windowed pools share.
#define KILN_REGISTER_POOL2D_OP(Name)                                   \
  KILN_REGISTER_OP(Name)                                                \
      .add_input("data")                                                \
      .add_attr("pool_size", AttrKind::kInts)                           \
      .add_attr("strides", AttrKind::kInts, Array<int64_t>{1, 1})       \
      .add_attr("padding", AttrKind::kInts, Array<int64_t>{0, 0, 0, 0}) \
      .add_attr("dilation", AttrKind::kInts, Array<int64_t>{1, 1})      \
      .add_attr("ceil_mode", AttrKind::kBool, false)                    \
      .set_pattern(OpPattern::kOutEWiseFusable)                         \
      .set_type_relation(Pool2DRelation)

KILN_REGISTER_POOL2D_OP("nn.max_pool2d");
// count_include_pad: whether padded positions count in the divisor (ONNX's attribute).
KILN_REGISTER_POOL2D_OP("nn.avg_pool2d").add_attr("count_include_pad", AttrKind::kBool, false);

#undef KILN_REGISTER_POOL2D_OP

#define KILN_REGISTER_GLOBAL_POOL2D_OP(Name)    \
  KILN_REGISTER_OP(Name)                        \
      .add_input("data")                        \
      .set_pattern(OpPattern::kOutEWiseFusable) \
      .set_type_relation(GlobalPool2DRelation)

KILN_REGISTER_GLOBAL_POOL2D_OP("nn.global_max_pool2d");
KILN_REGISTER_GLOBAL_POOL2D_OP("nn.global_avg_pool2d");

#undef KILN_REGISTER_GLOBAL_POOL2D_OP

}  // namespace
}  // namespace op
}  // namespace kiln
