// Evaluating, at import, an expression built from constants only: how converters get the
// shapes, axes and scales that a model computes (Shape -> Cast -> Sub -> ConstantOfShape ->
// Reshape) where ONNX's data propagation stops.
#ifndef KILN_SRC_FRONTEND_ONNX_CONSTANT_EVAL_H_
#define KILN_SRC_FRONTEND_ONNX_CONSTANT_EVAL_H_

#include <kiln/ir/expr.h>

#include <optional>

namespace kiln {
namespace frontend {
namespace onnx_import {

/// The value of `expr` when it depends on constants only and every op on the way has a CPU
/// kernel (it is run through InferType and FoldConstant, the CPU kernels FKernel names);
/// nullopt when it reads a parameter or cannot be folded.
std::optional<Tensor> EvaluateConstant(const ir::Expr& expr);

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_CONSTANT_EVAL_H_
