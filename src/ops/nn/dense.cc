// nn.dense: data (..., K) times the transpose of weight (N, K), as ONNX Gemm with transB=1
// (the frontend transposes constant weights of other Gemm forms).
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type DenseRelation(const TypeRelationContext& ctx) {
  std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const std::vector<arith::SizeExpr> weight = ctx.Shape(1);
  KILN_CHECK(!data.empty(), TypeError) << ctx.Describe(ctx.ArgName(0) + " must be at least 1-D");
  KILN_CHECK(weight.size() == 2, TypeError) << ctx.Describe(ctx.ArgName(1) + " must be 2-D (N, K)");
  ctx.CheckSameDType(0, 1);
  const std::string what = "the last dimension " + data.back().ToString() +
                           " of 'data' does not match K = " + weight[1].ToString() +
                           " of 'weight' (N, K)";
  const SizeFact same = ProveEqual(ctx, data.back(), weight[1]);
  KILN_CHECK(same.holds() || same.Defer(ctx, what), TypeError) << ctx.Describe(what);
  data.back() = weight[0];
  return TypeRelationContext::TensorResult(data, ctx.DType(0));
}

KILN_REGISTER_OP("nn.dense")
    .add_input("data")
    .add_input("weight")
    .set_pattern(OpPattern::kOutEWiseFusable)
    .set_type_relation(DenseRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
