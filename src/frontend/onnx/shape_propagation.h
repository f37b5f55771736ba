// Shape-value propagation: the ONNX ops of PyTorch's shape arithmetic evaluated on shape values
// (shape_value.h) at import, without emitting IR, the way TVM Relax's importer and
// onnxruntime's symbolic_shape_infer do. Shape(x) of a (batch, seq, 64) input is [batch, seq,
// 64]; Gather, Unsqueeze and Concat of it make [batch, seq, 4, 16], which Reshape takes as its
// symbolic newshape.
#ifndef KILN_SRC_FRONTEND_ONNX_SHAPE_PROPAGATION_H_
#define KILN_SRC_FRONTEND_ONNX_SHAPE_PROPAGATION_H_

#include <optional>

#include "node_context.h"
#include "shape_value.h"

namespace kiln {
namespace frontend {
namespace onnx_import {

/// The value of `node`'s output as a shape value, each element simplified by the node's analyzer
/// (sizes >= 1), or nullopt where the node is to be converted to IR instead.
///
/// Shape and Size always have one. Gather, Unsqueeze, Squeeze, Concat, Reshape (to rank 0 or 1),
/// Slice, Cast, Identity, Add, Sub, Mul, Div, Mod, Min, Max, Neg, Equal, Where, Not and
/// ReduceProd have one when some input is a symbolic shape value, every input is a shape value
/// (constants of rank 0 or 1 included) and the result is decidable: Div only where the quotient
/// is an integer the analyzer can write, Equal only where the analyzer proves equality or
/// inequality. Chains of constants only are left to the converters, which fold them as before.
std::optional<ShapeValue> PropagateShapeValue(const NodeContext& node);

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_SHAPE_PROPAGATION_H_
