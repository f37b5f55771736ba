// ONNX NonMaxSuppression as two ops over the same inputs (docs/design.md §22): the size op
// non_max_suppression_count says how many boxes are selected, and non_max_suppression, whose
// `count` names that size, writes their (batch, class, box) indices. Both kernels run one
// selection (src/kernels/cpu/non_max_suppression.cc).
//
// The three trailing inputs are scalars (or one-element vectors, as exporters write them) that
// the model may feed at run time; one with no elements stands for an input the ONNX node
// omits, so the op keeps ONNX's defaults: no box selected, an IoU threshold of 0, no score
// threshold.
#include <kiln/ir/op.h>

#include <string>
#include <tuple>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

constexpr DLDataType kFloat32{kDLFloat, 32, 1};

/// A rank-0 or rank-1 argument of `dtype` with at most one element where its extent is static
/// (a symbolic one is checked by the kernel).
void CheckOptionalScalar(const TypeRelationContext& ctx, int64_t index, DLDataType dtype) {
  const std::vector<arith::SizeExpr> shape = ctx.Shape(index);
  const bool at_most_one =
      shape.empty() || (shape.size() == 1 && shape[0].as_int().value_or(0) <= 1);
  KILN_CHECK(at_most_one && DataTypeEqual(ctx.DType(index), dtype), TypeError) << ctx.Describe(
      ctx.ArgName(index) + " must be a scalar or a vector of at most one element, of dtype " +
      DataTypeToString(dtype));
}

/// The checks both ops make: boxes (B, N, 4) and scores (B, C, N) of float32, the scalars'
/// dtypes, center_point_box 0 or 1.
void CheckInputs(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> boxes = ctx.Shape(0);
  const std::vector<arith::SizeExpr> scores = ctx.Shape(1);
  KILN_CHECK(boxes.size() == 3 && boxes[2].as_int() == 4, TypeError)
      << ctx.Describe("'boxes' must have shape (batches, boxes, 4)");
  KILN_CHECK(scores.size() == 3, TypeError)
      << ctx.Describe("'scores' must have shape (batches, classes, boxes)");
  for (int64_t i = 0; i < 2; ++i) {
    KILN_CHECK(DataTypeEqual(ctx.DType(i), kFloat32), TypeError)
        << ctx.Describe(ctx.ArgName(i) + " must be float32");
  }
  for (const auto& [boxes_axis, scores_axis, what] :
       {std::tuple<size_t, size_t, const char*>{0, 0, "batches"}, {1, 2, "boxes"}}) {
    const std::string mismatch = std::string("'boxes' and 'scores' must agree on the number of ") +
                                 what + " (" + boxes[boxes_axis].ToString() + " and " +
                                 scores[scores_axis].ToString() + ")";
    const SizeFact same = ProveEqual(ctx, boxes[boxes_axis], scores[scores_axis]);
    KILN_CHECK(same.holds() || same.Defer(ctx, mismatch), TypeError)
        << ctx.Describe(mismatch + same.Undecided());
  }
  CheckOptionalScalar(ctx, 2, kInt64);
  CheckOptionalScalar(ctx, 3, kFloat32);
  CheckOptionalScalar(ctx, 4, kFloat32);
  const auto center_point_box = ctx.Attr<int64_t>("center_point_box");
  KILN_CHECK(center_point_box == 0 || center_point_box == 1, TypeError)
      << ctx.Describe("'center_point_box' must be 0 or 1, got " + std::to_string(center_point_box));
}

Type NonMaxSuppressionCountRelation(const TypeRelationContext& ctx) {
  CheckInputs(ctx);
  return TypeRelationContext::TensorResult(std::vector<int64_t>{1}, kInt64);
}

Type NonMaxSuppressionRelation(const TypeRelationContext& ctx) {
  CheckInputs(ctx);
  return TypeRelationContext::TensorResult(
      std::vector<arith::SizeExpr>{ctx.SizeAttr("count"), arith::IntImm(3)}, kInt64);
}

KILN_REGISTER_OP("non_max_suppression_count")
    .add_input("boxes")
    .add_input("scores")
    .add_input("max_output_boxes_per_class")
    .add_input("iou_threshold")
    .add_input("score_threshold")
    .add_attr("center_point_box", AttrKind::kInt, int64_t{0})
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(NonMaxSuppressionCountRelation);

KILN_REGISTER_OP("non_max_suppression")
    .add_input("boxes")
    .add_input("scores")
    .add_input("max_output_boxes_per_class")
    .add_input("iou_threshold")
    .add_input("score_threshold")
    .add_attr("count", AttrKind::kSize)
    .add_attr("center_point_box", AttrKind::kInt, int64_t{0})
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(NonMaxSuppressionRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
