// What the files of src/arith share: raw node construction, operator spellings and the pieces
// of the Analyzer (interval bounds, the canonical simplifier) before they are wrapped in it.
#ifndef KILN_SRC_ARITH_ARITH_INTERNAL_H_
#define KILN_SRC_ARITH_ARITH_INTERNAL_H_

#include <kiln/arith/analyzer.h>
#include <kiln/arith/size_expr.h>

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace kiln {
namespace arith {
namespace internal {

/// A node of kind `op` over `a` and `b` exactly as given: no folding, no identities. The
/// simplifier builds its normal form with it, so the builders' rules cannot reshape it. Defined
/// in libkiln_runtime with the nodes and exported for the simplifier in libkiln, though no public
/// header declares it.
KILN_API SizeExpr RawBinary(BinaryOp op, SizeExpr a, SizeExpr b);

/// "+", "-", "*" for the infix operators, the function name for the others.
const char* OpSpelling(BinaryOp op);

/// Known bounds of variables by name; a variable not listed is a size: [0, +inf).
using VarBounds = std::map<std::string, ConstIntBound, std::less<>>;

/// The bound of the variable `name` under `bounds`.
ConstIntBound VarBoundOf(const VarBounds& bounds, std::string_view name);

/// Constant bounds of `expr` by interval arithmetic over its tree, holding wherever `expr` is
/// defined (a division by a divisor that may be zero ignores that divisor value).
ConstIntBound TreeBound(const SizeExpr& expr, const VarBounds& bounds);

/// Bounds of `expr` computed on its normal form (with c * floordiv(e, c) also read as
/// e - floormod(e, c)); they hold wherever `expr` is defined.
ConstIntBound NormalFormBound(const SizeExpr& expr, const VarBounds& bounds);

/// `expr` in normal form (docs/design.md §19); the same value wherever `expr` is defined.
SizeExpr CanonicalSimplify(const SizeExpr& expr, const VarBounds& bounds);

}  // namespace internal
}  // namespace arith
}  // namespace kiln

#endif  // KILN_SRC_ARITH_ARITH_INTERNAL_H_
