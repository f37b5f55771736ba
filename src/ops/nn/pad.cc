// nn.pad: ONNX Pad with the pads as an attribute, in ONNX order (all begins, then all ends), and
// dynamic_pad, with them read at run time.
// Negative pads crop. reflect mirrors without repeating the edge, so it pads at most extent - 1.
#include <kiln/ir/op.h>

#include <algorithm>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

/// Requires `mode` to be able to fill padding of width up to `widest` along dimension `i` of
/// `shape`.
void CheckPadMode(const TypeRelationContext& ctx, const std::string& mode, size_t i,
                  const std::vector<arith::SizeExpr>& shape, int64_t widest) {
  const arith::SizeExpr& extent = shape[i];
  // A dimension that is not padded mirrors nothing, so only a static extent is held to the rule
  // there (as it always was); a symbolic batch need not be proven non-empty.
  if (mode == "reflect" && (widest > 0 || extent.as_int().has_value())) {
    const SizeFact fits = ProveLT(ctx, arith::IntImm(widest), extent);
    KILN_CHECK(fits.holds(), TypeError)
        << ctx.Describe("mode 'reflect' pads dimension " + std::to_string(i) + " of 'data' " +
                        ir::ShapeToText(shape) + " by " + std::to_string(widest) +
                        ", more than its extent - 1" + fits.Undecided());
  }
  if (mode == "edge" && widest > 0) {
    const SizeFact nonempty = ProveGE(ctx, extent, arith::IntImm(1));
    KILN_CHECK(nonempty.holds(), TypeError)
        << ctx.Describe("mode 'edge' cannot pad the empty dimension " + std::to_string(i) +
                        " of 'data' " + ir::ShapeToText(shape) + nonempty.Undecided());
  }
}

Type PadRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const size_t rank = data.size();
  const std::vector<int64_t> pads = ctx.IntsAttr("pads");
  const std::string mode = StringChoiceAttr(ctx, "mode", {"constant", "reflect", "edge"});
  KILN_CHECK(pads.size() == 2 * rank, TypeError)
      << ctx.Describe("attribute 'pads' = " + ir::ShapeToText(pads) + " must have 2 x " +
                      std::to_string(rank) + " entries for 'data' " + ir::ShapeToText(data));
  std::vector<arith::SizeExpr> out = data;
  for (size_t i = 0; i < rank; ++i) {
    const arith::SizeExpr extent = ctx.analyzer().Simplify(data[i] + pads[i] + pads[i + rank]);
    const SizeFact nonnegative = ProveGE(ctx, extent, arith::IntImm(0));
    KILN_CHECK(nonnegative.holds(), TypeError) << ctx.Describe(
        "attribute 'pads' = " + ir::ShapeToText(pads) + " crops dimension " + std::to_string(i) +
        " of 'data' " + ir::ShapeToText(data) + " below 0" + nonnegative.Undecided());
    CheckPadMode(ctx, mode, i, data, std::max(pads[i], pads[i + rank]));
    // An unpadded extent is kept as written.
    if (pads[i] != 0 || pads[i + rank] != 0) out[i] = extent;
  }
  return TypeRelationContext::TensorResult(out, ctx.DType(0));
}

KILN_REGISTER_OP("nn.pad")
    .add_input("data")
    .add_attr("pads", AttrKind::kInts)
    .add_attr("mode", AttrKind::kString, String("constant"))
    .add_attr("pad_value", AttrKind::kFloat, 0.0)
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(PadRelation);

/// dynamic_pad: ONNX Pad with pads (int64 (2 x rank)) and value (a scalar of 'data''s dtype) read
/// at run time; `sizes` is the result's shape, computed by pad_sizes, which checks the pads.
Type DynamicPadRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  StringChoiceAttr(ctx, "mode", {"constant", "reflect", "edge"});
  const std::vector<arith::SizeExpr> pads = ctx.Shape(1);
  KILN_CHECK(pads.size() == 1 && pads[0].as_int() == static_cast<int64_t>(2 * data.size()) &&
                 DataTypeEqual(ctx.DType(1), kInt64),
             TypeError)
      << ctx.Describe("'pads' must be int64 of shape (" + std::to_string(2 * data.size()) + ",)");
  KILN_CHECK(ctx.Shape(2).empty() && DataTypeEqual(ctx.DType(2), ctx.DType(0)), TypeError)
      << ctx.Describe("'value' must be a scalar of the dtype of 'data'");
  const std::vector<arith::SizeExpr> sizes = ctx.SizesAttr("sizes");
  KILN_CHECK(sizes.size() == data.size(), TypeError)
      << ctx.Describe("attribute 'sizes' must give one extent per dimension of 'data'");
  return TypeRelationContext::TensorResult(sizes, ctx.DType(0));
}

KILN_REGISTER_OP("dynamic_pad")
    .add_input("data")
    .add_input("pads")
    .add_input("value")
    .add_attr("mode", AttrKind::kString, String("constant"))
    .add_attr("sizes", AttrKind::kSizes)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(DynamicPadRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
