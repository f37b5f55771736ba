#include "constant_eval.h"

#include <kiln/ir/function.h>
#include <kiln/ir/module.h>
#include <kiln/transform/passes.h>

namespace kiln {
namespace frontend {
namespace onnx_import {

std::optional<Tensor> EvaluateConstant(const ir::Expr& expr) {
  if (const auto* constant = expr.as<ir::ConstantObj>()) return constant->data();
  // FoldConstant is the one place that runs kernels at compile time; a parameterless function
  // around the expression lets it run unchanged. A parameter the expression reads stays a free
  // variable, whose calls simply do not fold.
  ir::IRModule mod = ir::IRModule::Create();
  mod.Add(ir::GlobalVar("main"), ir::Function(Array<ir::Var>(), expr));
  const transform::PassContext context = transform::PassContext::Create().SetOptLevel(2);
  mod = transform::FoldConstant()(transform::InferType()(mod, context), context);
  if (const auto* folded = mod.Lookup("main")->body().as<ir::ConstantObj>()) {
    return folded->data();
  }
  return std::nullopt;
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
