/// kiln::Build: from an IRModule (an imported ONNX model, say) to an Executable.
///
///   kiln::ir::IRModule mod = kiln::frontend::ImportOnnxFile("model.onnx");
///   kiln::Executable model = kiln::Build(mod);
///   model.export_library("model.so");
///
/// The steps, in one function (src/driver/build.cc): bind `params`, run the optimization
/// pipeline (DefaultPipeline, or `pipeline`), which partitions the model among `compilers`
/// when there are any (design §17), run each compiler's codegen
/// (kiln/codegen/external_codegen.h), lower @main to a graph executor over a kernel program
/// (kiln/codegen/graph_lowering.h) with its memory planned and the compilers' modules as
/// imports, and make the executor.
#ifndef KILN_DRIVER_BUILD_H_
#define KILN_DRIVER_BUILD_H_

#include <kiln/ir/module.h>
#include <kiln/runtime/executable.h>
#include <kiln/transform/pass.h>
#include <kiln/transform/pass_context.h>

#include <string>
#include <vector>

namespace kiln {

struct BuildOptions {
  /// Where the model runs; "cpu" is the only target today.
  std::string target = "cpu";
  /// Values for parameters of @main, by name: each becomes a constant (weights given apart from
  /// the model). An unknown name is a ValueError listing the parameters.
  Map<String, Tensor> params;
  /// Opt level, disabled passes, instruments (timing, IR dumps), config for the pipeline.
  transform::PassContext pass_context = transform::PassContext::Create();
  /// Comma-separated pass names replacing DefaultPipeline (kiln/transform/pass.h's
  /// ParsePipeline); empty for the default. FuseOps need not be in it: unfused op calls are
  /// lowered one kernel each.
  std::string pipeline;
  /// External compilers (BYOC) in priority order, e.g. {"dnnl", "blas"}: each op goes to the
  /// first that takes it, the rest to Kiln's CPU path. A compiler's plugin (libkiln_<name>.so)
  /// is loaded by name when it is not loaded yet.
  std::vector<std::string> compilers;
  /// When false, an op that no compiler takes is an error listing every such op.
  bool fallback = true;
  /// Passed to each compiler's codegen `kiln.ext.<name>(functions, options)`.
  Map<String, Any> codegen_options;
  /// Fused groups whose ops all have compute rules run as one generated C function each
  /// (kiln/tir/lower.h) rather than a kernel per op (codegen::LoweringOptions).
  bool generated_kernels = false;
  /// Loop-level passes for each generated function (codegen::LoweringOptions::tir_passes).
  std::string tir_passes;
  /// How regions go to `compilers`: "greedy" (each region the predicates give a compiler goes to
  /// it) or "measured" (only where it runs faster there than on Kiln's CPU path, by the
  /// compiler's estimate or a cached measurement: kiln/driver/measured_placement.h).
  std::string placement = "greedy";
};

/// InferType, SimplifyExpr, FoldConstant, CanonicalizeBatchNorm, FoldConstant, then, when
/// `compilers` is not empty, MergeComposite, AnnotateTarget, MergeCompilerRegions,
/// PartitionGraph and InferType for them (and MeasuredPlacement when `options.placement` is
/// "measured"), then FuseOps, InferType: the passes Build runs by default.
KILN_API transform::Pass DefaultPipeline(const std::vector<std::string>& compilers = {});
KILN_API transform::Pass DefaultPipeline(const BuildOptions& options);

/// Compiles @main of `mod` for `options.target`: BuildOptimized(Optimize(mod, options)).
/// Errors name what failed: an unknown target, a pass (with its name), an op without a kernel
/// (all such ops at once), a compiler's codegen.
KILN_API Executable Build(const ir::IRModule& mod, const BuildOptions& options = BuildOptions());

/// Build's first half: binds the params and runs the pipeline; the result is typed,
/// partitioned and fused, what kiln/driver/placement.h reports on.
KILN_API ir::IRModule Optimize(const ir::IRModule& mod, const BuildOptions& options);

/// Build's second half on Optimize's result: the fallback check, each compiler's codegen,
/// lowering, the executor.
KILN_API Executable BuildOptimized(const ir::IRModule& optimized, const BuildOptions& options);

}  // namespace kiln

#endif  // KILN_DRIVER_BUILD_H_
