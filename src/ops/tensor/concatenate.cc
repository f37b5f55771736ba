// concatenate and split: joining a tuple of tensors along an axis (ONNX Concat) and cutting one
// into pieces of given sizes (ONNX Split with its `split` sizes as an attribute).
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

/// The shape of a field of the tuple argument, each extent a size expression.
std::vector<arith::SizeExpr> FieldShape(const ir::TensorTypeObj& field) {
  std::vector<arith::SizeExpr> shape;
  for (const ir::Dim& dim : field.shape()) shape.push_back(dim.AsSizeExpr());
  return shape;
}

/// Requires `shape` (of field `field`) to equal `first` (field 0's) outside `axis`.
void CheckSameOutsideAxis(const TypeRelationContext& ctx, const std::string& field,
                          const std::vector<arith::SizeExpr>& shape,
                          const std::vector<arith::SizeExpr>& first, int64_t axis) {
  std::vector<arith::SizeExpr> outside = shape;
  std::vector<arith::SizeExpr> first_outside = first;
  if (shape.size() == first.size()) outside[axis] = first_outside[axis] = arith::IntImm(0);
  const std::string what = field + " has shape " + ir::ShapeToText(shape) +
                           ", which differs from field 0's " + ir::ShapeToText(first) +
                           " outside axis " + std::to_string(axis);
  // Extent by extent, so that each undecided pair becomes a check of its own.
  for (size_t i = 0; i < outside.size() && outside.size() == first_outside.size(); ++i) {
    const SizeFact same = ProveEqual(ctx, outside[i], first_outside[i]);
    KILN_CHECK(same.holds() || same.Defer(ctx, what), TypeError) << ctx.Describe(what);
  }
  KILN_CHECK(outside.size() == first_outside.size(), TypeError) << ctx.Describe(what);
}

Type ConcatenateRelation(const TypeRelationContext& ctx) {
  const std::vector<const ir::TensorTypeObj*> fields = ctx.TensorTuple(0);
  KILN_CHECK(!fields.empty(), TypeError) << ctx.Describe(ctx.ArgName(0) + " is an empty tuple");
  const std::vector<arith::SizeExpr> first = FieldShape(*fields[0]);
  std::vector<arith::SizeExpr> out = first;
  const int64_t axis =
      ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), static_cast<int64_t>(out.size()), "axis");
  arith::SizeExpr joined = first[axis];
  for (size_t i = 1; i < fields.size(); ++i) {
    const std::vector<arith::SizeExpr> shape = FieldShape(*fields[i]);
    const std::string field = "field " + std::to_string(i) + " of " + ctx.ArgName(0);
    KILN_CHECK(DataTypeEqual(fields[i]->dtype(), fields[0]->dtype()), TypeError)
        << ctx.Describe(field + " has dtype " + DataTypeToString(fields[i]->dtype()) +
                        ", field 0 " + DataTypeToString(fields[0]->dtype()));
    CheckSameOutsideAxis(ctx, field, shape, first, axis);
    joined = joined + shape[axis];
  }
  // A single field is kept as written; a sum is simplified (seq + 1 + seq is seq * 2 + 1).
  if (fields.size() > 1) out[axis] = ctx.analyzer().Simplify(joined);
  return TypeRelationContext::TensorResult(out, fields[0]->dtype());
}

KILN_REGISTER_OP("concatenate")
    .add_input("data")
    .add_attr("axis", AttrKind::kInt, int64_t{0})
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(ConcatenateRelation);

Type SplitRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const int64_t axis =
      ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), static_cast<int64_t>(data.size()), "axis");
  const std::vector<arith::SizeExpr> sections = ctx.SizesAttr("sections");
  const std::string what = "attribute 'sections' = " + ir::ShapeToText(sections) +
                           " must be non-negative sizes adding up to " + data[axis].ToString() +
                           ", the extent of 'data' along axis " + std::to_string(axis);
  bool valid = !sections.empty();
  arith::SizeExpr total = arith::IntImm(0);
  for (const arith::SizeExpr& size : sections) {
    valid = valid && size.as_int().value_or(0) >= 0;
    total = total + size;
  }
  KILN_CHECK(valid, TypeError) << ctx.Describe(what);
  // Sections read at run time (ONNX Split's split input) are checked once they are read.
  const SizeFact adds_up = ProveEqual(ctx, ctx.analyzer().Simplify(total), data[axis]);
  KILN_CHECK(adds_up.holds() || adds_up.Defer(ctx, what), TypeError)
      << ctx.Describe(what + adds_up.Undecided());
  Array<Type> pieces;
  for (const arith::SizeExpr& size : sections) {
    std::vector<arith::SizeExpr> shape = data;
    shape[axis] = size;
    pieces.push_back(TypeRelationContext::TensorResult(shape, ctx.DType(0)));
  }
  return ir::TupleType(pieces);
}

KILN_REGISTER_OP("split")
    .add_input("data")
    .add_attr("axis", AttrKind::kInt, int64_t{0})
    .add_attr("sections", AttrKind::kSizes)
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(SplitRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
