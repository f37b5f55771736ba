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
void CheckSplitsIntoHeads(const TypeRelationContext& ctx, int64_t i, int64_t extent,
                          int64_t heads) {
  KILN_CHECK(extent % heads == 0, TypeError)
      << ctx.Describe("the last dimension " + std::to_string(extent) + " of " + ctx.ArgName(i) +
                      " does not split into num_heads = " + std::to_string(heads) + " heads");
}

/// Requires `mask` to broadcast to the scores (batch, heads, seq_q, seq_k) without growing them.
void CheckMaskBroadcasts(const TypeRelationContext& ctx, const std::vector<int64_t>& mask,
                         const std::vector<int64_t>& scores) {
  bool fits = mask.size() <= scores.size();
  for (size_t i = 0; fits && i < mask.size(); ++i) {
    const int64_t extent = mask[mask.size() - 1 - i];
    fits = extent == 1 || extent == scores[scores.size() - 1 - i];
  }
  KILN_CHECK(fits, TypeError) << ctx.Describe(
      "'mask' " + ir::ShapeToText(mask) +
      " does not broadcast to the scores (batch, heads, seq_q, seq_k) = " +
      ir::ShapeToText(scores));
}

Type AttentionRelation(const TypeRelationContext& ctx) {
  const std::string layout = StringChoiceAttr(ctx, "layout", {"BSNH", "SBNH"});
  const std::string dims =
      layout == "BSNH" ? "(batch, seq, heads * head_dim)" : "(seq, batch, heads * head_dim)";
  const std::vector<int64_t> q = ShapeOfRank(ctx, 0, 3, dims);
  const std::vector<int64_t> k = ShapeOfRank(ctx, 1, 3, dims);
  const std::vector<int64_t> v = ShapeOfRank(ctx, 2, 3, dims);
  for (int64_t i = 1; i < 4; ++i) ctx.CheckSameDType(0, i);
  KILN_CHECK(ctx.DType(0).code == kDLFloat, TypeError)
      << ctx.Describe("'q' must be a floating-point tensor");
  const auto heads = ctx.Attr<int64_t>("num_heads");
  KILN_CHECK(heads > 0, TypeError) << ctx.Describe("attribute 'num_heads' must be positive");
  const AttentionAxes axes = AxesOf(layout);
  KILN_CHECK(q[axes.batch] == k[axes.batch] && q[axes.batch] == v[axes.batch], TypeError)
      << ctx.Describe("'q', 'k' and 'v' must have the same batch");
  KILN_CHECK(k[axes.seq] == v[axes.seq], TypeError)
      << ctx.Describe("'k' and 'v' must have the same sequence length");
  KILN_CHECK(q[2] == k[2], TypeError)
      << ctx.Describe("'q' and 'k' must have the same last dimension (heads * head_dim)");
  CheckSplitsIntoHeads(ctx, 0, q[2], heads);
  CheckSplitsIntoHeads(ctx, 2, v[2], heads);
  CheckMaskBroadcasts(ctx, ctx.StaticShape(3), {q[axes.batch], heads, q[axes.seq], k[axes.seq]});
  std::vector<int64_t> out = q;
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
