// The pattern table of the MergeComposite golden tests (tests/transform/golden/MergeComposite),
// registered the way a plugin registers its own: as `kiln.ext.test_golden.pattern_table`.
#include <kiln/ir/function.h>
#include <kiln/transform/pattern.h>

namespace kiln {
namespace transform {
namespace testing {
namespace {

/// conv2d (one group, constant weight) + constant bias, then an optional relu.
Pattern ConvBiasRelu() {
  const Pattern conv = IsOp("nn.conv2d")({Wildcard(), IsConstant()}).HasAttr({{"groups", 1}});
  const Pattern bias = IsOp("add")({conv, IsConstant()});
  return bias.Optional([](const Pattern& p) { return IsOp("nn.relu")({p}); });
}

/// Declines a dense + add whose batch (first dimension) is not 1, as a library that only has a
/// matrix-vector kernel would.
bool BatchOfOne(const ir::Expr& root) {
  const auto* type = root->checked_type().as<ir::TensorTypeObj>();
  return type != nullptr && type->shape()[0].as_static() == 1;
}

Array<PatternEntry> GoldenPatternTable() {
  const Pattern dense_add = IsOp("add")({IsOp("nn.dense")({Wildcard(), Wildcard()}), Wildcard()});
  const Pattern x = Wildcard();
  return {
      PatternEntry("test_golden.conv2d_bias_relu", ConvBiasRelu()),
      PatternEntry("test_golden.dense_add", dense_add,
                   kiln::Function::FromTyped(BatchOfOne, "test_golden.dense_add check")),
      PatternEntry("test_golden.activation", IsOp("nn.relu")({x}) | IsOp("tanh")({x})),
  };
}

KILN_REGISTER_GLOBAL("kiln.ext.test_golden.pattern_table").set_body_typed(GoldenPatternTable);

}  // namespace
}  // namespace testing
}  // namespace transform
}  // namespace kiln
