// Pooling: nn.max_pool2d/3d and nn.avg_pool2d/3d in NCHW / NCDHW (ONNX MaxPool/AveragePool with
// explicit pads), and the 2-D global forms that reduce H and W to 1 (GlobalMaxPool,
// GlobalAveragePool).
#include <kiln/ir/op.h>

#include "../op_common.h"
#include "../window.h"

namespace kiln {
namespace op {
namespace {

template <size_t kRank>
Type PoolRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data =
      ShapeOfRank(ctx, 0, kRank + 2, kRank == 2 ? "(N, C, H, W)" : "(N, C, D, H, W)");
  const Window window = ReadWindow(ctx, ReadBoundedInts(ctx, "pool_size", kRank, 1));
  const std::vector<arith::SizeExpr> spatial =
      WindowOutputShape(ctx, window, std::vector<arith::SizeExpr>(data.begin() + 2, data.end()));
  std::vector<arith::SizeExpr> out = {data[0], data[1]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  return TypeRelationContext::TensorResult(out, ctx.DType(0));
}

Type GlobalPool2DRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ShapeOfRank(ctx, 0, 4, "(N, C, H, W)");
  return TypeRelationContext::TensorResult({data[0], data[1], arith::IntImm(1), arith::IntImm(1)},
                                           ctx.DType(0));
}

// The attributes every windowed pool shares; `Ones`/`Zeros` are the defaults of its rank.
#define KILN_REGISTER_POOL_OP(Name, Rank, Ones, Zeros)             \
  KILN_REGISTER_OP(Name)                                           \
      .add_input("data")                                           \
      .add_attr("pool_size", AttrKind::kInts)                      \
      .add_attr("strides", AttrKind::kInts, Array<int64_t>(Ones))  \
      .add_attr("padding", AttrKind::kInts, Array<int64_t>(Zeros)) \
      .add_attr("dilation", AttrKind::kInts, Array<int64_t>(Ones)) \
      .add_attr("ceil_mode", AttrKind::kBool, false)               \
      .set_pattern(OpPattern::kOutEWiseFusable)                    \
      .set_type_relation(PoolRelation<Rank>)

const std::vector<int64_t> kOnes2D{1, 1};
const std::vector<int64_t> kZeros2D(4, 0);
const std::vector<int64_t> kOnes3D{1, 1, 1};
const std::vector<int64_t> kZeros3D(6, 0);

KILN_REGISTER_POOL_OP("nn.max_pool2d", 2, kOnes2D, kZeros2D);
KILN_REGISTER_POOL_OP("nn.max_pool3d", 3, kOnes3D, kZeros3D);
// count_include_pad: whether padded positions count in the divisor (ONNX's attribute).
KILN_REGISTER_POOL_OP("nn.avg_pool2d", 2, kOnes2D, kZeros2D)
    .add_attr("count_include_pad", AttrKind::kBool, false);
KILN_REGISTER_POOL_OP("nn.avg_pool3d", 3, kOnes3D, kZeros3D)
    .add_attr("count_include_pad", AttrKind::kBool, false);

#undef KILN_REGISTER_POOL_OP

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
