// The parsed form of a kernel program (kiln/runtime/kernel_program.h), shared by the module
// (kernel_program.cc) and the load-time rewrite that merges epilogues (program_epilogues.cc).
#ifndef KILN_SRC_KERNELS_CPU_KERNEL_PROGRAM_INTERNAL_H_
#define KILN_SRC_KERNELS_CPU_KERNEL_PROGRAM_INTERNAL_H_

#include <kiln/ffi/function.h>
#include <kiln/ffi/map.h>
#include <kiln/ffi/tensor.h>
#include <kiln/runtime/shape_signature.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace runtime {

/// A tensor's shape and dtype as the description gives them. A symbolic shape's extents are
/// evaluated on each call, from the sizes the function's arguments bind.
struct TensorSpec {
  SymbolicShape shape;           ///< every extent; constants are IntImm
  bool is_static = true;         ///< every extent is a constant
  std::vector<int64_t> extents;  ///< the shape, when static
  DLDataType dtype{};
  int64_t bytes = 0;  ///< compact size, when static
};

/// The spec of `tensor`'s shape and dtype.
TensorSpec SpecOfTensor(const Tensor& tensor);

/// A tensor a step reads or writes: which list ('i', 'o', 'c', 't') and the index in it.
struct TensorRef {
  char list = 'i';
  size_t index = 0;
};

/// A kernel call, or a copy when `kernel` is empty.
struct Step {
  std::string kernel;  ///< empty for a copy
  Function function;
  Map<String, Any> attrs;
  std::vector<TensorRef> inputs;
  std::vector<TensorRef> outputs;
  /// A reshape, squeeze or unsqueeze into a temporary: the temporary is its input's bytes
  /// under the new shape, not a copy (see MarkAliases in kernel_program.cc).
  bool aliases_input = false;
  /// Attributes holding size expressions (kinds size and sizes), evaluated on each call.
  std::vector<String> symbolic_attrs;
};

/// One function of the program.
struct ProgramFunction {
  std::string name;
  size_t num_inputs = 0;
  size_t num_outputs = 0;
  std::vector<TensorSpec> input_specs;   ///< empty when the description has none
  std::vector<TensorSpec> output_specs;  ///< empty when the description has none
  std::vector<TensorSpec> temps;
  /// Where the sizes of symbolic specs come from: the input and output specs; static when the
  /// description gives none or all are static.
  ShapeSignature signature;
  /// "kernel_program: '<name>'": how the signature's errors name the function (made once, not
  /// per call).
  std::string caller;
  std::vector<bool> temp_aliases;  ///< per temporary: written by a step that aliases its input
  /// Per input: the output a call may place in exactly its bytes, or -1 (MarkOutputsOverInputs
  /// in kernel_program.cc). Any other overlap of an input and an output is read from a copy.
  std::vector<int64_t> output_over_input;
  std::vector<Step> steps;
};

/// Merges the steps after each GEMM-backed step (conv2d, matmul, dense) that its epilogue can
/// run into it (kiln/runtime/kernel_program.h): a bias add, then a residual add, then relu,
/// clip, nn.gelu or nn.silu, each optional, each reading the temporary only the step before wrote,
/// so that the function computes the same with the temporaries gone. `constants` are the program's.
void MergeEpilogues(ProgramFunction& func, const std::vector<Tensor>& constants);

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_SRC_KERNELS_CPU_KERNEL_PROGRAM_INTERNAL_H_
