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

}  // namespace
}  // namespace op
}  // namespace kiln
