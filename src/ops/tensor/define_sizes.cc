// define_sizes: sizes that a tensor's values decide (docs/design.md §22). It returns 'data'
// unchanged and defines the fresh size variables of attribute 'sizes' as the elements of
// 'values' (an int64 vector, one element per size), known once 'values' is computed. Ops that
// use the sizes take this op's result as an argument, which orders them after it and keeps it
// alive; lowering makes it no node, only a size definition of the graph.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type DefineSizesRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> sizes = ctx.SizesAttr("sizes");
  for (const arith::SizeExpr& size : sizes) {
    KILN_CHECK(size.as<arith::SizeVarObj>() != nullptr, TypeError)
        << ctx.Describe("attribute 'sizes' must hold size variables only, got " + size.ToString());
  }
  const std::vector<arith::SizeExpr> values = ctx.Shape(1);
  const bool vector_of_sizes = values.size() == 1 &&
                               values[0].as_int() == static_cast<int64_t>(sizes.size()) &&
                               DataTypeEqual(ctx.DType(1), DLDataType{kDLInt, 64, 1});
  KILN_CHECK(vector_of_sizes, TypeError)
      << ctx.Describe("'values' must be int64 of shape (" + std::to_string(sizes.size()) +
                      ",), one element per size");
  ctx.Tensor(0);
  return ctx.arg_type(0);
}

KILN_REGISTER_OP("define_sizes")
    .add_input("data")
    .add_input("values")
    .add_attr("sizes", AttrKind::kSizes)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(DefineSizesRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
