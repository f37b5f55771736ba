// arange: ONNX Range where the count is known before the data: `size` elements start, start +
// step, ... in `dtype`. The frontend folds a constant Range into a Constant; this op is the
// Range whose limit comes from a symbolic size (torch.arange(x.shape[1])), so `size` is an
// extent of kind size.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type ArangeRelation(const TypeRelationContext& ctx) {
  const arith::SizeExpr size = ctx.SizeAttr("size");
  KILN_CHECK(!ctx.analyzer().CanProveLE(size, arith::IntImm(-1)), TypeError)
      << ctx.Describe("attribute 'size' = " + size.ToString() + " is negative");
  const std::optional<DLDataType> dtype = ParseDataType(ctx.Attr<String>("dtype").str());
  return TypeRelationContext::TensorResult(std::vector<arith::SizeExpr>{size}, *dtype);
}

KILN_REGISTER_OP("arange")
    .add_attr("start", AttrKind::kFloat, 0.0)
    .add_attr("step", AttrKind::kFloat, 1.0)
    .add_attr("size", AttrKind::kSize)
    .add_attr("dtype", AttrKind::kDType, String("int64"))
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(ArangeRelation);

/// range: arange whose start and step are scalar tensors read at run time (ONNX Range with
/// computed bounds; range_sizes gives `size`). The result has their dtype.
Type RangeRelation(const TypeRelationContext& ctx) {
  KILN_CHECK(ctx.Shape(0).empty() && ctx.Shape(1).empty(), TypeError)
      << ctx.Describe("'start' and 'step' must be scalars");
  KILN_CHECK(DataTypeEqual(ctx.DType(0), ctx.DType(1)), TypeError)
      << ctx.Describe("'start' and 'step' must have one dtype");
  return TypeRelationContext::TensorResult(std::vector<arith::SizeExpr>{ctx.SizeAttr("size")},
                                           ctx.DType(0));
}

KILN_REGISTER_OP("range")
    .add_input("start")
    .add_input("step")
    .add_attr("size", AttrKind::kSize)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(RangeRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
