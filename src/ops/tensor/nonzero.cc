// nonzero: ONNX NonZero. The int64 positions of the elements of 'data' that are not zero, one
// column per element in row-major order, so the result is (rank, count); `count` is a size read
// at run time (nonzero_count, docs/design.md §22).
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type NonzeroRelation(const TypeRelationContext& ctx) {
  const auto rank = static_cast<int64_t>(ctx.Shape(0).size());
  return TypeRelationContext::TensorResult(
      std::vector<arith::SizeExpr>{arith::IntImm(rank), ctx.SizeAttr("count")}, kInt64);
}

KILN_REGISTER_OP("nonzero")
    .add_input("data")
    .add_attr("count", AttrKind::kSize)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(NonzeroRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
