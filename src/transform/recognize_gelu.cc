// RecognizeGelu: ONNX has no GELU before opset 20, so exporters spell it in five ops,
//   x * (erf(x / sqrt(2)) + 1) * 0.5,
// in whatever order their source wrote the products. Each of the five is a pass over memory;
// nn.gelu is one op, which FuseOps fuses with the matmul before it and the kernel program then
// runs in that matmul's epilogue.
#include <kiln/ir/structural_equal.h>
#include <kiln/transform/passes.h>
#include <kiln/transform/pattern.h>

#include <cmath>

#include "constant_util.h"
#include "typed_mutator.h"

namespace kiln {
namespace transform {
namespace {

using ir::Call;
using ir::Expr;

/// `op(a, b)` or `op(b, a)`.
Pattern Commuted(const char* op, const Pattern& a, const Pattern& b) {
  return IsOp(op)({a, b}) | IsOp(op)({b, a});
}

/// The parts of the pattern whose bindings the check reads.
struct GeluPattern {
  Pattern x = Wildcard();
  Pattern root2 = IsConstant();      ///< x / root2
  Pattern inv_root2 = IsConstant();  ///< or x * inv_root2
  Pattern one = IsConstant();
  Pattern half = IsConstant();
  Pattern root;

  GeluPattern() {
    const Pattern scaled = IsOp("divide")({x, root2}) | Commuted("multiply", x, inv_root2);
    const Pattern one_plus_erf = Commuted("add", IsOp("erf")({scaled}), one);
    // 0.5 * x * (1 + erf(...)), grouped any of the three ways.
    root = Commuted("multiply", Commuted("multiply", x, one_plus_erf), half) |
           Commuted("multiply", Commuted("multiply", x, half), one_plus_erf) |
           Commuted("multiply", x, Commuted("multiply", one_plus_erf, half));
  }
};

/// Whether the constant `pattern` bound in `binding` holds `value` everywhere (to float32's
/// precision: exporters write sqrt(2) as a float32 literal).
bool HoldsValue(const PatternBinding& binding, const Pattern& pattern, double value) {
  const std::optional<Expr> bound = binding.Get(pattern);
  if (!bound.has_value()) return false;
  const std::optional<double> uniform = UniformValue(Downcast<ir::Constant>(*bound));
  return uniform.has_value() && std::abs(*uniform - value) <= 1e-6 * std::abs(value);
}

bool IsFloatTensor(const Expr& expr) {
  const auto* type = expr->checked_type().as<ir::TensorTypeObj>();
  return type != nullptr && type->dtype().code == kDLFloat;
}

class GeluRecognizer : public TypedMutator {
 public:
  using TypedMutator::TypedMutator;

 protected:
  Expr RewriteCall(const Call& /*pre*/, const Call& call) override {
    const std::optional<PatternBinding> binding = MatchPattern(pattern_.root, call);
    if (!binding.has_value()) return call;
    const Expr x = binding->at(pattern_.x);
    const bool scaled_right = HoldsValue(*binding, pattern_.root2, std::sqrt(2.0)) ||
                              HoldsValue(*binding, pattern_.inv_root2, std::sqrt(0.5));
    // The constants must not broadcast x to a larger shape or another dtype.
    if (!scaled_right || !HoldsValue(*binding, pattern_.one, 1.0) ||
        !HoldsValue(*binding, pattern_.half, 0.5) || !IsFloatTensor(x) ||
        !ir::StructuralEqual(x->checked_type(), call->checked_type())) {
      return call;
    }
    return Call(ir::Op::Get("nn.gelu"), {x});
  }

 private:
  GeluPattern pattern_;
};

}  // namespace

Pass RecognizeGelu() {
  return CreateFunctionPass(
      [](const ir::Function& func, const ir::IRModule& mod, const PassContext& /*ctx*/) {
        return GeluRecognizer(mod).RewriteFunction(func);
      },
      PassInfo{"transform.RecognizeGelu", 2, false});
}

KILN_REGISTER_PASS(RecognizeGelu);

}  // namespace transform
}  // namespace kiln
