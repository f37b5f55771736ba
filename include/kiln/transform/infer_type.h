/// Type inference: the checked type of every expression, from parameter annotations, constants
/// and each op's type relation (kiln/ir/type_relation.h).
///
/// The InferType pass (passes.h) runs this over a module; other passes call InferExprType on the
/// nodes they build. Types are static: a parameter of a global function needs an annotation; a
/// parameter of a nested function that is called directly takes the type of its argument.
/// Errors are TypeErrors that name the op, the argument and the types (the op's relation), or
/// the node and what was expected.
#ifndef KILN_TRANSFORM_INFER_TYPE_H_
#define KILN_TRANSFORM_INFER_TYPE_H_

#include <kiln/ir/module.h>

namespace kiln {
namespace transform {

/// The type of `expr`, filling in the checked_type of every node it reaches. Calls to global
/// functions are typed through `mod` (their annotations, or inference of their bodies).
KILN_API ir::Type InferExprType(const ir::Expr& expr, const ir::IRModule& mod = ir::IRModule());

/// The type of `node` whose operands already have checked types (a node a pass has just built
/// from typed parts); only operands without one are walked. Sets node's checked_type.
KILN_API ir::Type InferNodeType(const ir::Expr& node, const ir::IRModule& mod = ir::IRModule());

/// How many extents an If whose branches have types `then_type` and `else_type` must name
/// (ir::If's `sizes`): those where the branches disagree. TypeError when they disagree in
/// anything else (structure, dtype, rank).
KILN_API size_t CountDisagreeingExtents(const ir::Type& then_type, const ir::Type& else_type);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_TRANSFORM_INFER_TYPE_H_
