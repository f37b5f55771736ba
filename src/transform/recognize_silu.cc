// RecognizeSilu: ONNX has no SiLU (swish), so exporters spell it x * sigmoid(x), two ops and
// two passes over memory after the convolution that usually produces x (EfficientNet, YOLO,
// MobileNetV3's relatives). nn.silu is one elementwise op, which FuseOps fuses with that
// convolution and the kernel program then runs in its epilogue.
#include <kiln/ir/structural_equal.h>
#include <kiln/transform/passes.h>

#include <optional>

#include "expr_util.h"
#include "typed_mutator.h"

namespace kiln {
namespace transform {
namespace {

using ir::Call;
using ir::Expr;

/// x when `product` is multiply(x, sigmoid(x)) or multiply(sigmoid(x), x), x the same node.
std::optional<Expr> SiluInput(const ir::CallObj& product) {
  for (int side = 0; side < 2; ++side) {
    const Expr& x = product.args()[side];
    const ir::CallObj* sigmoid = AsCallOf(product.args()[1 - side], "sigmoid");
    if (sigmoid != nullptr && sigmoid->args()[0].same_as(x)) return x;
  }
  return std::nullopt;
}

class SiluRecognizer : public TypedMutator {
 public:
  using TypedMutator::TypedMutator;

 protected:
  Expr RewriteCall(const Call& /*pre*/, const Call& call) override {
    if (AsCallOf(call, "multiply") == nullptr) return call;
    const std::optional<Expr> x = SiluInput(*call.get());
    if (!x.has_value() || !ir::StructuralEqual(x.value()->checked_type(), call->checked_type())) {
      return call;
    }
    return Typed(Call(ir::Op::Get("nn.silu"), {*x}));
  }
};

}  // namespace

Pass RecognizeSilu() {
  return CreateFunctionPass(
      [](const ir::Function& func, const ir::IRModule& mod, const PassContext& /*ctx*/) {
        return SiluRecognizer(mod).RewriteFunction(func);
      },
      PassInfo{"transform.RecognizeSilu", 2, false});
}

KILN_REGISTER_PASS(RecognizeSilu);

}  // namespace transform
}  // namespace kiln
