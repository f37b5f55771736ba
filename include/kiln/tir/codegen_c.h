/// C and CUDA code generation for the tensor-level IR (docs/design.md §23, §24): each prim_func
/// becomes one C function in Kiln's calling convention (a KilnSafeCall taking one tensor per buffer
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

/// One CUDA C++ translation unit (for NVRTC) defining an `extern "C" __global__` kernel per
/// prim_func: one pointer per buffer parameter (a tensor's data), then one int64 per size
/// variable of the buffers' shapes, in name order (CudaSizeParams). Loops bound to block_x...
/// thread_z take their variable from blockIdx / threadIdx and skip iterations past their
/// extent; a launch gives each bound loop at least its extent of blocks or threads.
/// NotImplementedError for a parallel loop (bind it instead) or a buffer too large for a thread.
KILN_API std::string GenerateCuda(const std::vector<Node>& funcs);

/// The size variables a CUDA kernel of a function with these buffer parameters takes.
KILN_API std::vector<std::string> CudaSizeParams(const Array<Any>& params);

/// A "c_source" module of GenerateC(funcs): compiled by the host compiler on its first call, and
/// into the artifact by export_library (kiln/runtime/artifact.h).
KILN_API runtime::Module BuildC(const std::vector<Node>& funcs);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_TIR_CODEGEN_C_H_
