/// The built-in passes. Each is also registered as the global function `transform.<Name>`.
#ifndef KILN_TRANSFORM_PASSES_H_
#define KILN_TRANSFORM_PASSES_H_

#include <kiln/transform/pass.h>

namespace kiln {
namespace transform {

/// Removes global functions that no entry function can reach through GlobalVar references.
/// Entries are the functions named `main` and those with a `global_symbol` attribute; a module
/// without any entry is returned unchanged (nothing says what is used). Opt level 1.
/// Nothing inside functions is removed: the dataflow IR has no bindings (no `let`) that could
/// be dead, and an unused Tuple field may still be read through the tuple as a whole.
KILN_API Pass DeadCodeElimination();

/// Fills in the checked type of every expression and the result type of every function that
/// has none (infer_type.h). Required (runs at any opt level); functions taken by an external
/// compiler are typed too, since their callers' types depend on them.
KILN_API Pass InferType();

}  // namespace transform
}  // namespace kiln

#endif  // KILN_TRANSFORM_PASSES_H_
