/// Structural equality and hashing of IR nodes (expressions, types, dims) and of the values
/// that appear in attributes (Array, Map, String, numbers, tensors).
///
/// Two expressions are equal when they have the same shape of nodes with equal fields:
///   - variables bound by a Function are matched by position of the parameter (alpha
///     equivalence: `fn(%x) { %x }` equals `fn(%y) { %y }`), provided their annotations are equal;
///   - free variables are equal only when they are the same object, unless `map_free_vars`,
///     which matches them one-to-one in order of first occurrence;
///   - GlobalVars compare by name (a module has one function per name), Ops by identity (an
///     Op is one object per name);
///   - IRModules compare by their attributes and their functions, matched by name;
///   - constants compare by dtype, shape and bytes; attribute maps by their sets of entries;
///   - symbolic dimensions and size expressions by arith::StructuralEqual (size variables by
///     name: they are not bound, so map_free_vars does not apply to them);
///   - the checked_type cache and the name hints of variables are ignored.
/// Sharing is not compared: a DAG equals the tree it unfolds to. Both walks keep an explicit
/// stack, so graphs of any depth are fine.
#ifndef KILN_IR_STRUCTURAL_EQUAL_H_
#define KILN_IR_STRUCTURAL_EQUAL_H_

#include <kiln/ffi/any.h>

#include <cstdint>

namespace kiln {
namespace ir {

/// True when `a` and `b` are structurally equal (see above).
KILN_API bool StructuralEqual(const ObjectRef& a, const ObjectRef& b, bool map_free_vars = false);

/// A hash consistent with StructuralEqual under the same `map_free_vars`: equal nodes hash
/// equal. Free variables hash by identity unless `map_free_vars`, and node kinds by their
/// run-time type index, so a hash is meaningful within one process only (never store it).
KILN_API uint64_t StructuralHash(const ObjectRef& node, bool map_free_vars = false);

}  // namespace ir
}  // namespace kiln

#endif  // KILN_IR_STRUCTURAL_EQUAL_H_
