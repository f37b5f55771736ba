// squeeze and unsqueeze: removing and inserting dimensions of extent 1 (ONNX Squeeze/Unsqueeze
// with axes as an attribute).
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

/// Whether axis `axis` of `data` has extent 1; `requested` when the axes attribute names it
/// (then it must be 1). TypeError when that cannot be decided: the result's rank would depend
/// on the sizes.
bool IsUnitAxis(const TypeRelationContext& ctx, const std::vector<arith::SizeExpr>& data,
                int64_t axis, bool requested) {
  const SizeFact unit = ProveEqual(ctx, data[axis], arith::IntImm(1));
  KILN_CHECK(!requested || unit.holds(), TypeError) << ctx.Describe(
      "cannot squeeze axis " + std::to_string(axis) + " of 'data' " + ir::ShapeToText(data) +
      ": its extent is " + data[axis].ToString() + ", not 1" + unit.Undecided());
  KILN_CHECK(!unit.undecided(), TypeError) << ctx.Describe(
      "cannot tell whether axis " + std::to_string(axis) + " of 'data' " + ir::ShapeToText(data) +
      " has extent 1; name the axes to squeeze" + unit.Undecided());
  return unit.holds();
}

Type SqueezeRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const auto rank = static_cast<int64_t>(data.size());
  std::vector<bool> removed(data.size(), false);
  if (ctx.HasAttr("axes")) {
    for (int64_t axis : NormalizeAxes(ctx, ctx.IntsAttr("axes"), rank, "axes")) {
      removed[axis] = IsUnitAxis(ctx, data, axis, true);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) removed[i] = IsUnitAxis(ctx, data, i, false);
  }
  std::vector<arith::SizeExpr> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!removed[i]) out.push_back(data[i]);
  }
  return TypeRelationContext::TensorResult(out, ctx.DType(0));
}

KILN_REGISTER_OP("squeeze")
    .add_input("data")
    .add_attr("axes", AttrKind::kInts, Any(nullptr))
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(SqueezeRelation);

// ONNX: `axes` index the output, whose rank is the input's plus the number of axes.
Type UnsqueezeRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const std::vector<int64_t> axes = ctx.IntsAttr("axes");
  const auto rank = static_cast<int64_t>(data.size() + axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t axis : NormalizeAxes(ctx, axes, rank, "axes")) inserted[axis] = true;
  std::vector<arith::SizeExpr> out;
  auto next = data.begin();
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(inserted[i] ? arith::SizeExpr(arith::IntImm(1)) : *next++);
  return TypeRelationContext::TensorResult(out, ctx.DType(0));
}

KILN_REGISTER_OP("unsqueeze")
    .add_input("data")
    .add_attr("axes", AttrKind::kInts)
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(UnsqueezeRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
