// strided_slice: ONNX Slice with starts/ends/axes/steps as attributes. Out-of-range starts and
// ends are clamped as ONNX does, so INT64_MAX means "to the end" and negative steps walk back.
#include <kiln/ir/op.h>

#include <algorithm>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

/// The number of elements `begin:end:step` selects from a dimension of `extent` (ONNX Slice).
int64_t SliceLength(int64_t begin, int64_t end, int64_t step, int64_t extent) {
  // Negative indices count from the end; a step < 0 may end one before the first element.
  if (begin < 0) begin += extent;
  if (end < 0) end += extent;
  if (step > 0) {
    begin = std::clamp<int64_t>(begin, 0, extent);
    end = std::clamp<int64_t>(end, 0, extent);
    return end > begin ? (end - begin + step - 1) / step : 0;
  }
  begin = std::clamp<int64_t>(begin, 0, extent - 1);
  end = std::clamp<int64_t>(end, -1, extent - 1);
  return begin > end ? (begin - end - step - 1) / -step : 0;
}

Type StridedSliceRelation(const TypeRelationContext& ctx) {
  std::vector<int64_t> shape = ctx.StaticShape(0);
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
    shape[axes[i]] = SliceLength(begin[i], end[i], strides[i], shape[axes[i]]);
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

}  // namespace
}  // namespace op
}  // namespace kiln
