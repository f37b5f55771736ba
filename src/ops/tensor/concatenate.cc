// concatenate and split: joining a tuple of tensors along an axis (ONNX Concat) and cutting one
// into pieces of given sizes (ONNX Split with its `split` sizes as an attribute).
#include <kiln/ir/op.h>

#include <numeric>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

/// The static shape of field `index` of the tuple argument.
std::vector<int64_t> FieldShape(const TypeRelationContext& ctx, const ir::TensorTypeObj& field,
                                size_t index) {
  std::vector<int64_t> shape;
  for (const ir::Dim& dim : field.shape()) {
    std::optional<int64_t> extent = dim.as_static();
    KILN_CHECK(extent.has_value(), TypeError)
        << ctx.Describe("field " + std::to_string(index) + " of " + ctx.ArgName(0) +
                        " needs a static shape, dimension " + std::to_string(shape.size()) +
                        " is " + dim.ToString());
    shape.push_back(*extent);
  }
  return shape;
}

Type ConcatenateRelation(const TypeRelationContext& ctx) {
  const std::vector<const ir::TensorTypeObj*> fields = ctx.TensorTuple(0);
  KILN_CHECK(!fields.empty(), TypeError) << ctx.Describe(ctx.ArgName(0) + " is an empty tuple");
  const std::vector<int64_t> first = FieldShape(ctx, *fields[0], 0);
  std::vector<int64_t> out = first;
  const int64_t axis =
      ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), static_cast<int64_t>(out.size()), "axis");
  for (size_t i = 1; i < fields.size(); ++i) {
    const std::vector<int64_t> shape = FieldShape(ctx, *fields[i], i);
    const std::string field = "field " + std::to_string(i) + " of " + ctx.ArgName(0);
    KILN_CHECK(DataTypeEqual(fields[i]->dtype(), fields[0]->dtype()), TypeError)
        << ctx.Describe(field + " has dtype " + DataTypeToString(fields[i]->dtype()) +
                        ", field 0 " + DataTypeToString(fields[0]->dtype()));
    bool matches = shape.size() == first.size();
    for (size_t d = 0; matches && d < shape.size(); ++d) {
      matches = static_cast<int64_t>(d) == axis || shape[d] == first[d];
    }
    KILN_CHECK(matches, TypeError) << ctx.Describe(
        field + " has shape " + ir::ShapeToText(shape) + ", which differs from field 0's " +
        ir::ShapeToText(first) + " outside axis " + std::to_string(axis));
    out[axis] += shape[axis];
  }
  return TypeRelationContext::TensorResult(out, fields[0]->dtype());
}

KILN_REGISTER_OP("concatenate")
    .add_input("data")
    .add_attr("axis", AttrKind::kInt, int64_t{0})
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(ConcatenateRelation);

Type SplitRelation(const TypeRelationContext& ctx) {
  const std::vector<int64_t> data = ctx.StaticShape(0);
  const int64_t axis =
      ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), static_cast<int64_t>(data.size()), "axis");
  const std::vector<int64_t> sections = ctx.IntsAttr("sections");
  bool valid = !sections.empty();
  for (int64_t size : sections) valid = valid && size >= 0;
  valid = valid && std::accumulate(sections.begin(), sections.end(), int64_t{0}) == data[axis];
  KILN_CHECK(valid, TypeError) << ctx.Describe(
      "attribute 'sections' = " + ir::ShapeToText(sections) +
      " must be non-negative sizes adding up to " + std::to_string(data[axis]) +
      ", the extent of 'data' along axis " + std::to_string(axis));
  Array<Type> pieces;
  for (int64_t size : sections) {
    std::vector<int64_t> shape = data;
    shape[axis] = size;
    pieces.push_back(TypeRelationContext::TensorResult(shape, ctx.DType(0)));
  }
  return ir::TupleType(pieces);
}

KILN_REGISTER_OP("split")
    .add_input("data")
    .add_attr("axis", AttrKind::kInt, int64_t{0})
    .add_attr("sections", AttrKind::kInts)
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(SplitRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
