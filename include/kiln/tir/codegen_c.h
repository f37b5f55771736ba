/// C code generation for the tensor-level IR (docs/design.md §23): each prim_func becomes one C
/// function in Kiln's calling convention (a KilnSafeCall taking one tensor per buffer
/// parameter), which reads its size variables from the arguments' shapes and checks every
/// extent before it stores anything.
#ifndef KILN_TIR_CODEGEN_C_H_
#define KILN_TIR_CODEGEN_C_H_

#include <kiln/runtime/module.h>
#include <kiln/tir/node.h>

#include <string>
#include <vector>

namespace kiln {
namespace tir {

/// One C translation unit defining a function per prim_func of `funcs`, named as the prim_func.
/// NotImplementedError for what C cannot express yet (a `reduce` not lowered, a GPU scope).
KILN_API std::string GenerateC(const std::vector<Node>& funcs);

/// A "c_source" module of GenerateC(funcs): compiled by the host compiler on its first call, and
/// into the artifact by export_library (kiln/runtime/artifact.h).
KILN_API runtime::Module BuildC(const std::vector<Node>& funcs);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_TIR_CODEGEN_C_H_
