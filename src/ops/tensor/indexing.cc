// Element-wise and tuple-wise indexing (ONNX GatherElements, ScatterElements, GatherND,
// ScatterND). Index values (negative ones count from the end) are checked against the data's
// extents when the kernel runs; the relations check shapes, ranks and the index dtype.
#include <kiln/ir/op.h>

#include <string>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

void CheckIndexDType(const TypeRelationContext& ctx, int64_t i) {
  const DLDataType dtype = ctx.DType(i);
  KILN_CHECK(DataTypeEqual(dtype, kInt32) || DataTypeEqual(dtype, kInt64), TypeError)
      << ctx.Describe(ctx.ArgName(i) + " must be int32 or int64, got " + DataTypeToString(dtype));
}

using Extents = std::vector<arith::SizeExpr>;

/// gather_elements / scatter_elements: `indices` has `data`'s rank, and outside `axis` it may
/// not be longer than `data` (an index there is the position itself, which must exist).
int64_t CheckElementIndices(const TypeRelationContext& ctx, const Extents& data,
                            const Extents& indices) {
  CheckIndexDType(ctx, 1);
  const auto rank = static_cast<int64_t>(data.size());
  const int64_t axis = ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), rank, "axis");
  KILN_CHECK(indices.size() == data.size(), TypeError)
      << ctx.Describe("'indices' " + ir::ShapeToText(indices) + " must have the rank of 'data' " +
                      ir::ShapeToText(data));
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis) continue;
    const SizeFact fits = ProveGE(ctx, data[d], indices[d]);
    KILN_CHECK(fits.holds(), TypeError) << ctx.Describe(
        "'indices' " + ir::ShapeToText(indices) + " is longer than 'data' " +
        ir::ShapeToText(data) + " along axis " + std::to_string(d) + fits.Undecided());
  }
  return axis;
}

/// Requires the updates (argument 2) to have shape `expected`; TypeError `what` otherwise.
void CheckUpdatesShape(const TypeRelationContext& ctx, const Extents& expected,
                       const std::string& what) {
  const SizeFact same = ProveSameShape(ctx, ctx.Shape(2), expected);
  KILN_CHECK(same.holds(), TypeError) << ctx.Describe(what + same.Undecided());
}

Type GatherElementsRelation(const TypeRelationContext& ctx) {
  const Extents indices = ctx.Shape(1);
  CheckElementIndices(ctx, ctx.Shape(0), indices);
  return TypeRelationContext::TensorResult(indices, ctx.DType(0));
}

KILN_REGISTER_OP("gather_elements")
    .add_input("data")
    .add_input("indices")
    .add_attr("axis", AttrKind::kInt, int64_t{0})
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(GatherElementsRelation);

const std::vector<std::string> kScatterReductions = {"none", "add", "mul", "max", "min"};

Type ScatterElementsRelation(const TypeRelationContext& ctx) {
  const Extents data = ctx.Shape(0);
  const Extents indices = ctx.Shape(1);
  CheckElementIndices(ctx, data, indices);
  CheckUpdatesShape(ctx, indices, "'updates' must have the shape of 'indices'");
  ctx.CheckSameDType(0, 2);
  StringChoiceAttr(ctx, "reduction", kScatterReductions);
  return ctx.arg_type(0);
}

KILN_REGISTER_OP("scatter_elements")
    .add_input("data")
    .add_input("indices")
    .add_input("updates")
    .add_attr("axis", AttrKind::kInt, int64_t{0})
    .add_attr("reduction", AttrKind::kString, String("none"))
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(ScatterElementsRelation);

/// gather_nd / scatter_nd: the last extent of `indices` (static) is how many leading dims
/// (after `batch_dims` shared ones) each index tuple addresses; returns the shape of one
/// gathered slice: `data.shape[batch_dims + k:]`.
Extents NdSliceShape(const TypeRelationContext& ctx, const Extents& data, const Extents& indices,
                     int64_t batch_dims) {
  CheckIndexDType(ctx, 1);
  KILN_CHECK(!indices.empty(), TypeError) << ctx.Describe("'indices' must have rank >= 1");
  const int64_t k = StaticExtent(ctx, 1, indices, indices.size() - 1, "the index tuple length");
  const auto rank = static_cast<int64_t>(data.size());
  KILN_CHECK(batch_dims >= 0 && batch_dims < static_cast<int64_t>(indices.size()) &&
                 batch_dims + k <= rank,
             TypeError)
      << ctx.Describe("index tuples of " + std::to_string(k) + " elements after " +
                      std::to_string(batch_dims) + " batch dims do not fit 'data' " +
                      ir::ShapeToText(data) + " ('indices' " + ir::ShapeToText(indices) + ")");
  for (int64_t d = 0; d < batch_dims; ++d) {
    const SizeFact same = ProveEqual(ctx, indices[d], data[d]);
    KILN_CHECK(same.holds(), TypeError) << ctx.Describe(
        "batch dim " + std::to_string(d) + " of 'indices' " + ir::ShapeToText(indices) +
        " differs from 'data' " + ir::ShapeToText(data) + same.Undecided());
  }
  return Extents(data.begin() + batch_dims + k, data.end());
}

Type GatherNDRelation(const TypeRelationContext& ctx) {
  const Extents indices = ctx.Shape(1);
  const int64_t batch_dims = ctx.Attr<int64_t>("batch_dims");
  const Extents slice = NdSliceShape(ctx, ctx.Shape(0), indices, batch_dims);
  Extents out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), slice.begin(), slice.end());
  return TypeRelationContext::TensorResult(out, ctx.DType(0));
}

KILN_REGISTER_OP("gather_nd")
    .add_input("data")
    .add_input("indices")
    .add_attr("batch_dims", AttrKind::kInt, int64_t{0})
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(GatherNDRelation);

Type ScatterNDRelation(const TypeRelationContext& ctx) {
  const Extents data = ctx.Shape(0);
  const Extents indices = ctx.Shape(1);
  const Extents slice = NdSliceShape(ctx, data, indices, 0);
  Extents updates(indices.begin(), indices.end() - 1);
  updates.insert(updates.end(), slice.begin(), slice.end());
  CheckUpdatesShape(ctx, updates, "'updates' must have shape " + ir::ShapeToText(updates));
  ctx.CheckSameDType(0, 2);
  StringChoiceAttr(ctx, "reduction", kScatterReductions);
  return ctx.arg_type(0);
}

KILN_REGISTER_OP("scatter_nd")
    .add_input("data")
    .add_input("indices")
    .add_input("updates")
    .add_attr("reduction", AttrKind::kString, String("none"))
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(ScatterNDRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
