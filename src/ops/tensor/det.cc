// det: ONNX Det. The determinant of each square matrix in the last two dims of `data`.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type DetRelation(const TypeRelationContext& ctx) {
  std::vector<int64_t> shape = ctx.StaticShape(0);
  KILN_CHECK(shape.size() >= 2 && shape[shape.size() - 1] == shape[shape.size() - 2], TypeError)
      << ctx.Describe("'data' " + ir::ShapeToText(shape) +
                      " must end in square matrices (..., M, M)");
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
