/// The kernel program: the module kind that runs a compiled model's fused functions on the CPU,
/// each as a short sequence of calls to the CPU kernels `kernel.cpu.<op>`. `kiln::Build` makes
/// one and the graph executor calls its functions; it is implemented by libkiln_kernels_cpu.so,
/// which an artifact's loader finds next to libkiln_runtime.so (design §16).
///
/// A kernel program is made from a description (JSON, format version 1) and its constants:
///
///   {
///     "version": 1,
///     "constants": [{"shape": [64, 3, 7, 7], "dtype": "float32"}],
///     "functions": [{
///       "name": "fused_nn_conv2d_add_nn_relu_0",
///       "num_inputs": 1, "num_outputs": 1,
///       "inputs": [{"shape": [1, 3, 224, 224], "dtype": "float32"}],
///       "outputs": [{"shape": [1, 64, 112, 112], "dtype": "float32"}],
///       "temps": [{"shape": [1, 64, 112, 112], "dtype": "float32"}],
///       "steps": [
///         {"kernel": "nn.conv2d", "attrs": {"strides": {"ints": [2, 2]}, ...},
///          "inputs": ["i0", "c0"], "outputs": ["t0"]},
///         {"kernel": "add", "attrs": {}, "inputs": ["t0", "c1"], "outputs": ["o0"]},
///         {"copy": "c2", "to": "o1"}
///       ]
///     }]
///   }
///
/// - A function is called as the graph executor calls node functions: one DLTensor* per input,
///   then one per output (compact CPU tensors of any shape the steps accept).
/// - "inputs" and "outputs" (optional: descriptions written before them lack them) give the
///   shapes the function is called with; a call with other shapes is a ValueError. Merging a
///   residual add into the step before it (below) needs them. An extent of an input, output or
///   temporary may be the text of a size expression ("batch", "seq * 64"): each call reads the
///   sizes from the arguments (kiln/runtime/shape_signature.h) and sizes the temporaries with
///   them; a temporary whose size no argument gives is refused at load. Constants are static.
/// - Each step either calls the global function `kernel.cpu.<kernel>(inputs, outputs, attrs)`
///   (the FKernel signature, see kiln/ir/op.h) or copies one tensor into another ("copy").
///   A reshape, squeeze or unsqueeze step that writes a temporary does not call its kernel: the
///   temporary is a view of its input (the same bytes; nothing writes a tensor twice).
///   Tensors are named by a letter and an index: "i" the function's inputs, "o" its outputs,
///   "c" the program's constants, "t" the function's temporaries (allocated per call from the
///   caching allocator, so a program may serve several executors at once).
/// - Attribute values are tagged so that their kind survives JSON: {"int": 3},
///   {"float": 0.5} (or "inf", "-inf", "nan"), {"bool": true}, {"str": "linear"},
///   {"ints": [1, 1]}, {"floats": [0.5]}, or null for None.
///
/// Every kernel a program names is looked up when the program is made or loaded; a missing
/// kernel `<ns>.<op>` of a namespace without any kernel loads libkiln_runtime_<ns>.so, a plugin's
/// runtime half, from the backend search path first (docs/kernels.md, "Kernels of plugin ops").
/// The error lists all kernels still missing, each with the library looked for and where.
///
/// When a program is made or loaded, each step input that is a constant is offered to the
/// global function `kernel_prepack.cpu.<kernel>(index, constant, attrs)` when one is
/// registered; a Tensor it returns (the constant packed for the kernel, say a GEMM's weights)
/// is passed to every call of that step as attribute "__packed_<index>". The description and
/// the serialized form do not change: what is packed depends on the CPU that loads it.
///
/// Before that, a conv2d, matmul or nn.dense step followed by a bias add, a residual add,
/// and relu, clip, nn.gelu or nn.silu (any prefix of that chain, each reading the one temporary
/// the step before wrote) becomes one step, with the kEpilogue* attributes below; so does a
/// concatenate along the channels of an (N, C, H, W) tensor followed by a multiplication and an
/// addition by a constant per channel and relu or clip (each optional).
///
/// Serialized (SaveToBytes): the description's length as 8 little-endian bytes, the
/// description, then each constant's compact bytes in order.
///
/// Functions of the module besides the program's own: none. Global functions:
///   runtime.KernelProgramCreate(description: str, constants: Array<Tensor>) -> Module
///   runtime.KernelProgramDescription(Module) -> str    the description (kilnc inspect)
///   runtime.module.load_bytes.kernel_program(bytes) -> Module
///   runtime.WhyNoCpuKernel(kernel: str) -> str or None   None once kernel.cpu.<kernel> is
///       registered (its plugin's runtime library loaded as a program would), else why not
#ifndef KILN_RUNTIME_KERNEL_PROGRAM_H_
#define KILN_RUNTIME_KERNEL_PROGRAM_H_

#include <cstdint>

namespace kiln {
namespace runtime {

/// The module kind, and the suffix of its loader's name.
constexpr const char* kKernelProgramKind = "kernel_program";
/// The description format version this runtime reads and the compiler writes.
constexpr int64_t kKernelProgramFormatVersion = 1;
/// The attribute a step's prepacked constant input i is passed as: this prefix, then i.
constexpr const char* kPrepackedAttrPrefix = "__packed_";
/// The attribute a step's prepack hook finds its first output's shape in, where the program
/// describes it, each extent that is symbolic as -1: how a kernel lays out its packed weights
/// may depend on the output (conv2d's GEMM orientation on the pixel count). Set for the hook
/// only, not kept on the step.
constexpr const char* kPrepackOutputShapeAttr = "__prepack_output_shape";
/// The attributes of a conv2d, matmul or nn.dense step that the program merged with the
/// elementwise steps after it (a bias add, then a residual add, then relu, clip, nn.gelu or
/// nn.silu), so that they run while the product is in cache: the index of the step input
/// holding the bias (per channel for conv2d, per column otherwise) and of the one holding the
/// residual (shaped as the output), the clamp bounds, and whether GELU or SiLU follows.
constexpr const char* kEpilogueBiasAttr = "__epilogue_bias";
/// The index of the step input holding a merged concatenate's scale per channel.
constexpr const char* kEpilogueScaleAttr = "__epilogue_scale";
constexpr const char* kEpilogueResidualAttr = "__epilogue_residual";
constexpr const char* kEpilogueMinAttr = "__epilogue_min";
constexpr const char* kEpilogueMaxAttr = "__epilogue_max";
constexpr const char* kEpilogueGeluAttr = "__epilogue_gelu";
constexpr const char* kEpilogueSiluAttr = "__epilogue_silu";
constexpr const char* kEpilogueHardSwishAttr = "__epilogue_hardswish";
/// The library implementing the kind, named when an artifact needs it and it is missing.
constexpr const char* kKernelProgramLibrary = "libkiln_kernels_cpu.so";

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_KERNEL_PROGRAM_H_
