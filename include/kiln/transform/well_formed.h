/// WellFormed: structural invariants every pass must preserve.
#ifndef KILN_TRANSFORM_WELL_FORMED_H_
#define KILN_TRANSFORM_WELL_FORMED_H_

#include <kiln/ir/module.h>

#include <string>

namespace kiln {
namespace transform {

/// True when, for every function of `mod`:
///   - every Var used is bound by the parameters of an enclosing function (the global function
///     itself or a nested Function literal);
///   - no Var is bound twice within the global function (as a parameter of two functions);
///   - a TupleGetItem's index is within the tuple's arity, when the tuple is a Tuple node or
///     already has a TupleType;
///   - its `global_symbol` attribute, when set, equals the name of its GlobalVar.
/// Otherwise false, and `reason` (when not null) names the function and the node at fault.
KILN_API bool WellFormed(const ir::IRModule& mod, std::string* reason = nullptr);

/// Throws ValueError with WellFormed's reason when `mod` is not well-formed.
KILN_API void CheckWellFormed(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_TRANSFORM_WELL_FORMED_H_
