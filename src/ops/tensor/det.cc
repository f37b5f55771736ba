// det: ONNX Det. The determinant of each square matrix in the last two dims of `data`.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type DetRelation(const TypeRelationContext& ctx) {
  std::vector<arith::SizeExpr> shape = ctx.Shape(0);
  const auto message = [&](const std::string& undecided) {
    return ctx.Describe("'data' " + ir::ShapeToText(shape) +
                        " must end in square matrices (..., M, M)" + undecided);
  };
  KILN_CHECK(shape.size() >= 2, TypeError) << message("");
  const SizeFact square = ProveEqual(ctx, shape[shape.size() - 2], shape.back());
  KILN_CHECK(square.holds(), TypeError) << message(square.Undecided());
  shape.resize(shape.size() - 2);
  return TypeRelationContext::TensorResult(shape, ctx.DType(0));
}

KILN_REGISTER_OP("det")
    .add_input("data")
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(DetRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
