// reshape: ONNX Reshape with the target shape as an attribute (the frontend folds the shape
// input): 0 copies the input's extent at that position, -1 is inferred from the rest.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

Type ReshapeRelation(const TypeRelationContext& ctx) {
  const auto Product = [&ctx](const std::vector<int64_t>& shape) {
    return NumElements(ctx, shape);
  };
  const std::vector<int64_t> data = ctx.StaticShape(0);
  std::vector<int64_t> shape = ctx.IntsAttr("newshape");
  const std::string target = "newshape " + ir::ShapeToText(shape);
  int64_t inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      KILN_CHECK(i < data.size(), TypeError) << ctx.Describe(
          target + " copies dimension " + std::to_string(i) + " (0) that 'data' does not have");
      shape[i] = data[i];
    } else if (shape[i] == -1) {
      KILN_CHECK(inferred < 0, TypeError) << ctx.Describe(target + " has more than one -1");
      inferred = static_cast<int64_t>(i);
    } else {
      KILN_CHECK(shape[i] > 0, TypeError)
          << ctx.Describe(target + " has the invalid extent " + std::to_string(shape[i]));
    }
  }
  const int64_t elements = Product(data);
  if (inferred >= 0) {
    shape[inferred] = 1;
    const int64_t known = Product(shape);
    KILN_CHECK(known > 0 && elements % known == 0, TypeError) << ctx.Describe(
        target + " cannot hold the " + std::to_string(elements) + " elements of 'data'");
    shape[inferred] = elements / known;
  }
  KILN_CHECK(Product(shape) == elements, TypeError)
      << ctx.Describe(target + " has " + std::to_string(Product(shape)) + " elements, 'data' " +
                      std::to_string(elements));
  return TypeRelationContext::TensorResult(shape, ctx.DType(0));
}

KILN_REGISTER_OP("reshape")
    .add_input("data")
    .add_attr("newshape", AttrKind::kInts)
    .set_pattern(OpPattern::kInjective)
    .set_type_relation(ReshapeRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
