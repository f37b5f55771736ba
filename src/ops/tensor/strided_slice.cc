// strided_slice: ONNX Slice with starts/ends/axes/steps as attributes, and dynamic_slice, with
// them as tensors read at run time. Out-of-range starts and
// ends are clamped as ONNX does, so INT64_MAX means "to the end" and negative steps walk back.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

/// min(max(value, lo), hi), leaving out the bounds the analyzer proves redundant.
arith::SizeExpr Clamp(const arith::Analyzer& analyzer, const arith::SizeExpr& value,
                      const arith::SizeExpr& lo, const arith::SizeExpr& hi) {
  if (analyzer.CanProveLE(value, hi)) {
    // Then the clamp is max(value, min(lo, hi)) (whether lo <= hi or not), which is value when
    // value is at least lo or hi.
    if (analyzer.CanProveGE(value, lo) || analyzer.CanProveGE(value, hi)) return value;
    return arith::Max(value, analyzer.CanProveLE(lo, hi) ? lo : arith::Min(lo, hi));
  }
  return arith::Min(analyzer.CanProveGE(value, lo) ? value : arith::Max(value, lo), hi);
}

/// A begin or end of the slice along a dimension of `extent`, before clamping: negative
/// indices count from the end. An index of kMaxElements or more in size lies beyond every
/// extent (no dimension is longer; exporters write INT64_MAX for "to the end"), so it stands
/// for `past_end` or `before_start`: the analyzer could not prove INT64_MAX past a symbolic
/// extent, and the arithmetic stays far from overflow.
arith::SizeExpr Position(int64_t index, const arith::SizeExpr& extent,
                         const arith::SizeExpr& before_start, const arith::SizeExpr& past_end) {
  if (index >= kMaxElements) return past_end;
  if (index <= -kMaxElements) return before_start;
  return index < 0 ? extent + index : arith::IntImm(index);
}

/// The number of elements `begin:end:step` selects from a dimension of `extent` (ONNX Slice),
/// static or symbolic: ceil((to - from) / |step|) clamped at 0, where ONNX clamps begin and end
/// into [0, extent] (into [0, extent - 1] and [-1, extent - 1] for a step < 0). A clamp that
/// can only change a length the clamp at 0 gives anyway is left out, and to - max(start, low)
/// is written min(to - start, to - low): both keep symbolic lengths small (x[1:] has
/// max(n, 1) - 1 elements, x[-4:] has min(n, 4)).
arith::SizeExpr SliceLength(const arith::Analyzer& analyzer, int64_t begin, int64_t end,
                            int64_t step, const arith::SizeExpr& extent) {
  const arith::SizeExpr zero = arith::IntImm(0);
  arith::SizeExpr span;
  if (step > 0) {
    const arith::SizeExpr to = arith::Min(Position(end, extent, zero, extent), extent);
    span = arith::Min(to - Position(begin, extent, zero, extent), to);
  } else {
    // Walking back: the elements run from the clamped begin down to just above the end.
    const arith::SizeExpr last = extent - 1;
    const arith::SizeExpr before = arith::IntImm(-1);
    const arith::SizeExpr to = Clamp(analyzer, Position(begin, extent, zero, last), zero, last);
    span = arith::Min(to - Position(end, extent, before, last), to + 1);
  }
  // A step past every extent takes the first element only (its size is kept out of the
  // arithmetic, where it would only make huge constants).
  if (step >= kMaxElements || step <= -kMaxElements) {
    return analyzer.Simplify(arith::Min(arith::Max(span, zero), 1));
  }
  const int64_t stride = step > 0 ? step : -step;
  return analyzer.Simplify(arith::Max(arith::FloorDiv(span - 1, stride) + 1, zero));
}

Type StridedSliceRelation(const TypeRelationContext& ctx) {
  std::vector<arith::SizeExpr> shape = ctx.Shape(0);
  const auto rank = static_cast<int64_t>(shape.size());
  const std::vector<int64_t> begin = ctx.IntsAttr("begin");
  const std::vector<int64_t> end = ctx.IntsAttr("end");
  std::vector<int64_t> axes;
  if (ctx.HasAttr("axes")) {
    axes = NormalizeAxes(ctx, ctx.IntsAttr("axes"), rank, "axes");
  } else {
    for (size_t i = 0; i < begin.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  const std::vector<int64_t> strides =
      ctx.HasAttr("strides") ? ctx.IntsAttr("strides") : std::vector<int64_t>(begin.size(), 1);
  KILN_CHECK(end.size() == begin.size() && axes.size() == begin.size() &&
                 strides.size() == begin.size() && static_cast<int64_t>(begin.size()) <= rank,
             TypeError)
      << ctx.Describe("attributes 'begin' " + ir::ShapeToText(begin) + ", 'end' " +
                      ir::ShapeToText(end) + ", 'axes' " + ir::ShapeToText(axes) +
                      " and 'strides' " + ir::ShapeToText(strides) +
                      " must have one entry per sliced axis of 'data'");
  for (size_t i = 0; i < begin.size(); ++i) {
    KILN_CHECK(strides[i] != 0, TypeError)
        << ctx.Describe("attribute 'strides' = " + ir::ShapeToText(strides) + " has a 0 step");
    shape[axes[i]] = SliceLength(ctx.analyzer(), begin[i], end[i], strides[i], shape[axes[i]]);
  }
  return TypeRelationContext::TensorResult(shape, ctx.DType(0));
}

KILN_REGISTER_OP("strided_slice")
    .add_input("data")
    .add_attr("begin", AttrKind::kInts)
    .add_attr("end", AttrKind::kInts)
    .add_attr("axes", AttrKind::kInts, Any(nullptr))
    .add_attr("strides", AttrKind::kInts, Any(nullptr))
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(StridedSliceRelation);

/// dynamic_slice: ONNX Slice whose starts, axes and steps (int64 vectors of one length) are read
/// at run time; `sizes` is the result's shape, computed by slice_sizes.
Type DynamicSliceRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> sizes = ctx.SizesAttr("sizes");
  KILN_CHECK(sizes.size() == ctx.Shape(0).size(), TypeError)
      << ctx.Describe("attribute 'sizes' must give one extent per dimension of 'data'");
  const std::vector<arith::SizeExpr> starts = ctx.Shape(1);
  for (int64_t i = 1; i <= 3; ++i) {
    const bool ok = ctx.Shape(i).size() == 1 && DataTypeEqual(ctx.DType(i), kInt64) &&
                    arith::StructuralEqual(ctx.Shape(i)[0], starts[0]);
    KILN_CHECK(ok, TypeError) << ctx.Describe(ctx.ArgName(i) +
                                              " must be an int64 vector as long as 'starts'");
  }
  return TypeRelationContext::TensorResult(sizes, ctx.DType(0));
}

KILN_REGISTER_OP("dynamic_slice")
    .add_input("data")
    .add_input("starts")
    .add_input("axes")
    .add_input("steps")
    .add_attr("sizes", AttrKind::kSizes)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(DynamicSliceRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
