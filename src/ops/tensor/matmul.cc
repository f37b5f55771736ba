// Matrix products: matmul (ONNX MatMul, numpy semantics) and nn.batch_matmul (3-D operands with
// optional transposes, as TVM's and the frontends' fused transposes produce).
#include <kiln/ir/op.h>

#include <utility>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

using Extents = std::vector<arith::SizeExpr>;

/// The batch dimensions of `a` and `b` broadcast together (static or symbolic, as
/// BroadcastArgShapes); TypeError naming both shapes.
Extents BroadcastBatch(const TypeRelationContext& ctx, const Extents& a, const Extents& b) {
  std::optional<Extents> batch = BroadcastTwoShapes(ctx, a, b, ctx.ArgName(1));
  KILN_CHECK(batch.has_value(), TypeError)
      << ctx.Describe("batch dimensions " + ir::ShapeToText(a) + " of 'lhs' and " +
                      ir::ShapeToText(b) + " of 'rhs' do not broadcast");
  return *batch;
}

void CheckContraction(const TypeRelationContext& ctx, const arith::SizeExpr& lhs_k,
                      const arith::SizeExpr& rhs_k) {
  const SizeFact same = ProveEqual(ctx, lhs_k, rhs_k);
  const std::string what = "the contracted dimension " + lhs_k.ToString() +
                           " of 'lhs' does not match " + rhs_k.ToString() + " of 'rhs'";
  KILN_CHECK(same.holds() || same.Defer(ctx, what), TypeError) << ctx.Describe(what);
}

Type MatmulRelation(const TypeRelationContext& ctx) {
  Extents lhs = ctx.Shape(0);
  Extents rhs = ctx.Shape(1);
  ctx.CheckSameDType(0, 1);
  KILN_CHECK(!lhs.empty() && !rhs.empty(), TypeError)
      << ctx.Describe("'lhs' and 'rhs' must be at least 1-D");
  // numpy: a 1-D lhs is a row (1, K), a 1-D rhs a column (K, 1); the added 1 is dropped again.
  const bool lhs_vector = lhs.size() == 1;
  const bool rhs_vector = rhs.size() == 1;
  if (lhs_vector) lhs.insert(lhs.begin(), arith::IntImm(1));
  if (rhs_vector) rhs.push_back(arith::IntImm(1));
  CheckContraction(ctx, lhs.back(), rhs[rhs.size() - 2]);
  Extents out = BroadcastBatch(ctx, {lhs.begin(), lhs.end() - 2}, {rhs.begin(), rhs.end() - 2});
  if (!lhs_vector) out.push_back(lhs[lhs.size() - 2]);
  if (!rhs_vector) out.push_back(rhs.back());
  return TypeRelationContext::TensorResult(out, ctx.DType(0));
}

KILN_REGISTER_OP("matmul")
    .add_input("lhs")
    .add_input("rhs")
    .set_pattern(OpPattern::kOutEWiseFusable)
    .set_type_relation(MatmulRelation);

Type BatchMatmulRelation(const TypeRelationContext& ctx) {
  Extents lhs = ShapeOfRank(ctx, 0, 3, "(B, M, K)");
  Extents rhs = ShapeOfRank(ctx, 1, 3, "(B, K, N)");
  ctx.CheckSameDType(0, 1);
  if (ctx.Attr<bool>("transpose_a")) std::swap(lhs[1], lhs[2]);
  if (ctx.Attr<bool>("transpose_b")) std::swap(rhs[1], rhs[2]);
  CheckContraction(ctx, lhs[2], rhs[1]);
  Extents out = BroadcastBatch(ctx, {lhs[0]}, {rhs[0]});
  out.push_back(lhs[1]);
  out.push_back(rhs[2]);
  return TypeRelationContext::TensorResult(out, ctx.DType(0));
}

KILN_REGISTER_OP("nn.batch_matmul")
    .add_input("lhs")
    .add_input("rhs")
    .add_attr("transpose_a", AttrKind::kBool, false)
    .add_attr("transpose_b", AttrKind::kBool, false)
    .set_pattern(OpPattern::kOutEWiseFusable)
    .set_type_relation(BatchMatmulRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
