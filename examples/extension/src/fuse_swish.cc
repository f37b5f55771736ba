// my_ext.transform.FuseSwish: rewrites `multiply(x, sigmoid(x))` and `multiply(sigmoid(x), x)`
// into `my_ext.swish(x)` (beta 1), so a model exported with swish spelled out runs the plugin's
// one-pass kernel instead of two ops and a temporary.
//
// It reads checked types (my_ext.swish is float32 only), so it runs after InferType:
//   transform.run_pipeline(mod, "InferType,my_ext.transform.FuseSwish")
// and it must run before the BYOC passes, or a plugin that takes multiply and sigmoid (dnnl)
// claims them first.
#include <kiln/ir/expr_functor.h>
#include <kiln/transform/pass.h>

#include <optional>

#include "mutator_pass.h"

namespace my_ext {
namespace {

namespace ir = kiln::ir;

class SwishFuser : public ir::ExprMutator {
 protected:
  ir::Expr VisitCall(const ir::Call& pre, const ir::Call& post) override {
    if (!post->op().same_as(multiply_) || post->args().size() != 2) return post;
    std::optional<ir::Expr> x = SwishOperand(post->args()[0], post->args()[1]);
    if (!x.has_value()) x = SwishOperand(post->args()[1], post->args()[0]);
    if (!x.has_value() || !IsFloat32Tensor(pre)) return post;
    return ir::Call(swish_, {*x});
  }

 private:
  /// `x` when `gate` is `sigmoid(x)`, the very same expression (not merely an equal one).
  std::optional<ir::Expr> SwishOperand(const ir::Expr& x, const ir::Expr& gate) const {
    const auto* call = gate.as<ir::CallObj>();
    if (call == nullptr || !call->op().same_as(sigmoid_) || !call->args()[0].same_as(x)) {
      return std::nullopt;
    }
    return x;
  }

  /// The multiply's type, as InferType left it; a ValueError says to run it when there is none.
  static bool IsFloat32Tensor(const ir::Call& multiply) {
    KILN_CHECK(multiply->checked_type().defined(), ValueError)
        << "my_ext.transform.FuseSwish reads checked types: run InferType before it";
    const auto* type = multiply->checked_type().as<ir::TensorTypeObj>();
    return type != nullptr && kiln::DataTypeEqual(type->dtype(), DLDataType{kDLFloat, 32, 1});
  }

  // Looked up when the pass runs: the plugin's ops register after its static initializers.
  const ir::Op multiply_ = ir::Op::Get("multiply");
  const ir::Op sigmoid_ = ir::Op::Get("sigmoid");
  const ir::Op swish_ = ir::Op::Get("my_ext.swish");
};

kiln::transform::Pass FuseSwish() { return MutatorPass<SwishFuser>("my_ext.transform.FuseSwish"); }

KILN_REGISTER_PASS_AS("my_ext.transform.FuseSwish", FuseSwish);

}  // namespace
}  // namespace my_ext
