// nn.attention: multi-head scaled dot-product attention, softmax(q k^T * scale + mask) v per
// head, over q, k and v as the projections before it write them: one rank-3 tensor each whose
// last axis holds every head, (batch, seq, heads * head_dim) in layout "BSNH" or
// (seq, batch, heads * head_dim) in "SBNH" (PyTorch's MultiheadAttention), so no reshape or
// transpose splits the heads out (design §16). The schema has no optional inputs, so `mask` is
// always there: a graph without one passes a scalar 0.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

/// Where batch and sequence sit in q, k, v and the result.
struct AttentionAxes {
  size_t batch;
  size_t seq;
};

AttentionAxes AxesOf(const std::string& layout) {
  return layout == "BSNH" ? AttentionAxes{0, 1} : AttentionAxes{1, 0};
}

/// Requires `extent` (the last dimension of argument `i`) to split into `heads` equal heads.
void CheckSplitsIntoHeads(const TypeRelationContext& ctx, int64_t i, const arith::SizeExpr& extent,
                          int64_t heads) {
  const SizeFact splits = ProveDivisible(ctx, extent, arith::IntImm(heads));
  KILN_CHECK(splits.holds(), TypeError) << ctx.Describe(
      "the last dimension " + extent.ToString() + " of " + ctx.ArgName(i) +
      " does not split into num_heads = " + std::to_string(heads) + " heads" + splits.Undecided());
}

/// Requires `mask` to broadcast to the scores (batch, heads, seq_q, seq_k) without growing them.
void CheckMaskBroadcasts(const TypeRelationContext& ctx, const std::vector<arith::SizeExpr>& mask,
                         const std::vector<arith::SizeExpr>& scores) {
  const auto message = [&](const std::string& undecided) {
    return ctx.Describe("'mask' " + ir::ShapeToText(mask) +
                        " does not broadcast to the scores (batch, heads, seq_q, seq_k) = " +
                        ir::ShapeToText(scores) + undecided);
  };
  KILN_CHECK(mask.size() <= scores.size(), TypeError) << message("");
  for (size_t i = 0; i < mask.size(); ++i) {
    const arith::SizeExpr& extent = mask[mask.size() - 1 - i];
    if (extent.as_int() == 1) continue;
    const SizeFact fits = ProveEqual(ctx, extent, scores[scores.size() - 1 - i]);
    KILN_CHECK(fits.holds(), TypeError) << message(fits.Undecided());
  }
}

/// Requires extents `a` and `b` to be equal; TypeError `what` otherwise.
void CheckSame(const TypeRelationContext& ctx, const arith::SizeExpr& a, const arith::SizeExpr& b,
               const char* what) {
  const SizeFact same = ProveEqual(ctx, a, b);
  KILN_CHECK(same.holds(), TypeError) << ctx.Describe(what + same.Undecided());
}

Type AttentionRelation(const TypeRelationContext& ctx) {
  const std::string layout = StringChoiceAttr(ctx, "layout", {"BSNH", "SBNH"});
  const std::string dims =
      layout == "BSNH" ? "(batch, seq, heads * head_dim)" : "(seq, batch, heads * head_dim)";
  const std::vector<arith::SizeExpr> q = ShapeOfRank(ctx, 0, 3, dims);
  const std::vector<arith::SizeExpr> k = ShapeOfRank(ctx, 1, 3, dims);
  const std::vector<arith::SizeExpr> v = ShapeOfRank(ctx, 2, 3, dims);
  for (int64_t i = 1; i < 4; ++i) ctx.CheckSameDType(0, i);
  KILN_CHECK(ctx.DType(0).code == kDLFloat, TypeError)
      << ctx.Describe("'q' must be a floating-point tensor");
  const auto heads = ctx.Attr<int64_t>("num_heads");
  KILN_CHECK(heads > 0, TypeError) << ctx.Describe("attribute 'num_heads' must be positive");
  const AttentionAxes axes = AxesOf(layout);
  const char* batch = "'q', 'k' and 'v' must have the same batch";
  CheckSame(ctx, q[axes.batch], k[axes.batch], batch);
  CheckSame(ctx, q[axes.batch], v[axes.batch], batch);
  CheckSame(ctx, k[axes.seq], v[axes.seq], "'k' and 'v' must have the same sequence length");
  CheckSame(ctx, q[2], k[2], "'q' and 'k' must have the same last dimension (heads * head_dim)");
  CheckSplitsIntoHeads(ctx, 0, q[2], heads);
  CheckSplitsIntoHeads(ctx, 2, v[2], heads);
  CheckMaskBroadcasts(ctx, ctx.Shape(3),
                      {q[axes.batch], arith::IntImm(heads), q[axes.seq], k[axes.seq]});
  std::vector<arith::SizeExpr> out = q;
  out[2] = v[2];
  return TypeRelationContext::TensorResult(out, ctx.DType(0));
}

KILN_REGISTER_OP("nn.attention")
    .add_input("q")
    .add_input("k")
    .add_input("v")
    .add_input("mask")
    .add_attr("num_heads", AttrKind::kInt)
    .add_attr("scale", AttrKind::kFloat)
    .add_attr("layout", AttrKind::kString, String("BSNH"))
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(AttentionRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
