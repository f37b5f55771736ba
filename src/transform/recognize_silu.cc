// RecognizeSilu: ONNX has no SiLU (swish), so exporters spell it x * sigmoid(x), two ops and
// two passes over memory after the convolution that usually produces x (EfficientNet, YOLO,
// MobileNetV3's relatives). nn.silu is one elementwise op, which FuseOps fuses with that
// convolution and the kernel program then runs in its epilogue. Its hard variant, MobileNetV3's
// hard-swish, is spelled x * HardSigmoid(x) (alpha 1/6, beta 1/2) before ONNX opset 14 gave it
// an op, and becomes nn.hardswish the same way.
#include <kiln/ir/structural_equal.h>
#include <kiln/transform/passes.h>

#include <cmath>
#include <optional>

#include "expr_util.h"
#include "typed_mutator.h"

namespace kiln {
namespace transform {
namespace {

using ir::Call;
using ir::Expr;

/// Whether `gate` is the hard sigmoid of hard-swish: alpha 1/6, beta 1/2 (as float32 holds them).
bool IsHardSwishGate(const ir::CallObj& gate) {
  const double alpha = gate.attrs().at(String("alpha")).cast<double>();
  const double beta = gate.attrs().at(String("beta")).cast<double>();
  return std::abs(alpha - 1.0 / 6.0) < 1e-7 && beta == 0.5;
}

/// x when `product` is multiply(x, gate(x)) or multiply(gate(x), x), x the same node, for
/// the op named `gate_op` (and, for nn.hard_sigmoid, hard-swish's constants).
std::optional<Expr> GatedInput(const ir::CallObj& product, const char* gate_op) {
  for (int side = 0; side < 2; ++side) {
    const Expr& x = product.args()[side];
    const ir::CallObj* gate = AsCallOf(product.args()[1 - side], gate_op);
    if (gate == nullptr || !gate->args()[0].same_as(x)) continue;
    if (gate->op().as<ir::OpObj>()->name() == "nn.hard_sigmoid" && !IsHardSwishGate(*gate)) {
      continue;
    }
    return x;
  }
  return std::nullopt;
}

class SiluRecognizer : public TypedMutator {
 public:
  using TypedMutator::TypedMutator;

 protected:
  Expr RewriteCall(const Call& /*pre*/, const Call& call) override {
    if (AsCallOf(call, "multiply") == nullptr) return call;
    for (const auto& [gate, op] :
         {std::pair("sigmoid", "nn.silu"), std::pair("nn.hard_sigmoid", "nn.hardswish")}) {
      const std::optional<Expr> x = GatedInput(*call.get(), gate);
      if (x.has_value() && ir::StructuralEqual(x.value()->checked_type(), call->checked_type())) {
        return Typed(Call(ir::Op::Get(op), {*x}));
      }
    }
    return call;
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
