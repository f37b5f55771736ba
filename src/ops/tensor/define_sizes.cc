// define_sizes: sizes that a tensor's values decide (docs/design.md §22), and size_values, the
// other way: sizes as a tensor's values. It returns 'data'
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

/// size_values(carriers; sizes, scalar): the int64 tensor whose elements are `sizes` (size
/// expressions), a vector or, with `scalar`, a scalar of the one size: a shape value computed
/// from symbolic sizes where a model uses it as a tensor (Shape -> Cast -> arithmetic). The
/// carriers (a tuple) are tensors whose shapes give every size, so that the kernel, which
/// only writes the evaluated sizes, is called with them known.
Type SizeValuesRelation(const TypeRelationContext& ctx) {
  ctx.TensorTuple(0);
  const std::vector<arith::SizeExpr> sizes = ctx.SizesAttr("sizes");
  if (ctx.Attr<bool>("scalar")) {
    KILN_CHECK(sizes.size() == 1, TypeError)
        << ctx.Describe("a scalar holds one size, got " + ir::ShapeToText(sizes));
    return TypeRelationContext::TensorResult(std::vector<int64_t>{}, kInt64);
  }
  return TypeRelationContext::TensorResult(std::vector<int64_t>{static_cast<int64_t>(sizes.size())},
                                           kInt64);
}

KILN_REGISTER_OP("size_values")
    .add_input("carriers")
    .add_attr("sizes", AttrKind::kSizes)
    .add_attr("scalar", AttrKind::kBool, false)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(SizeValuesRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
