/// Lowering a fused, typed IRModule to what the CPU runtime executes: a graph for the graph
/// executor (kiln/runtime/graph_executor.h) whose nodes call the functions of a kernel program
/// (kiln/runtime/kernel_program.h).
///
/// Each call in @main becomes one graph node and one program function: a primitive function
/// (FuseOps' output) becomes the sequence of its op calls, each through the op's CPU kernel
/// `kernel.cpu.<op>`; an op called directly in @main becomes a function of one step. Constant
/// arguments are bound inside the program (the graph sees only activations); @main's
/// parameters become the graph's inputs, its result (a tensor or a tuple of them) its outputs.
/// The graph's tensors are placed by PlanMemory (kiln/runtime/memory_plan.h).
#ifndef KILN_CODEGEN_GRAPH_LOWERING_H_
#define KILN_CODEGEN_GRAPH_LOWERING_H_

#include <kiln/ir/module.h>
#include <kiln/runtime/module.h>
#include <kiln/tir/node.h>
#include <kiln/transform/pass_context.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace codegen {

/// Int attribute of a function taken by an external compiler: its module function allocates
/// and returns its last that many outputs (an Array<Tensor>) instead of writing into them, for
/// outputs whose extents only the call decides (a loop's scan outputs); each extent of theirs
/// that is a size variable is defined by their shapes for the rest of the graph.
constexpr const char* kReturnsOutputsAttr = "ReturnsOutputs";

struct LoweringOptions {
  /// Fused groups whose ops all have compute rules (kiln/tir/compute.h) become one generated C
  /// function each (kiln/tir/lower.h) instead of a kernel program function calling one kernel
  /// per op. Off by default until bench/ shows it never slower.
  bool generated_kernels = false;
  /// Loop-level passes run on each generated function after the lowering's own simplification
  /// (kiln/tir/passes.h: "my_ext.unroll_short_loops,simplify"); empty for none.
  std::string tir_passes;
  /// The context those passes run under: its instruments time and dump them.
  transform::PassContext pass_context = transform::PassContext::Create();
};

struct LoweredGraph {
  /// The graph executor's JSON.
  std::string graph_json;
  /// The "kernel_program" module whose functions the graph's nodes call.
  runtime::Module program;
  /// Bytes of the constants bound into the program.
  int64_t constant_bytes = 0;
  /// The generated functions (prim_funcs) some of the graph's nodes call, in the order of the
  /// nodes; import tir::BuildC(prim_funcs) into the program when there are any.
  std::vector<tir::Node> prim_funcs;
  /// With LoweringOptions::generated_kernels, "function: why" for each fused group that stayed
  /// with the kernels.
  std::vector<std::string> declined;
};

/// Lowers @main of `mod`, which must be typed (InferType) with static shapes. ValueError for
/// what the CPU runtime cannot run (a parameter or result that is not a tensor, a call of
/// something other than an op or a function); one NotImplementedError lists every op without a
/// CPU kernel.
KILN_API LoweredGraph LowerToGraph(const ir::IRModule& mod,
                                   const LoweringOptions& options = LoweringOptions());

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_CODEGEN_GRAPH_LOWERING_H_
