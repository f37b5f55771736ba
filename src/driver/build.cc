// kiln::Build (kiln/driver/build.h): the compile pipeline in one place, readable top to bottom.
#include <kiln/codegen/external_codegen.h>
#include <kiln/codegen/graph_lowering.h>
#include <kiln/driver/build.h>
#include <kiln/driver/measured_placement.h>
#include <kiln/driver/placement.h>
#include <kiln/ffi/plugin.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/function.h>
#include <kiln/runtime/graph_executor.h>
#include <kiln/tir/codegen_c.h>
#include <kiln/transform/byoc.h>
#include <kiln/transform/instrument.h>
#include <kiln/transform/passes.h>
#include <kiln/transform/pattern.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "control_flow_internal.h"

namespace kiln {
namespace {

ir::IRModule BindParams(const ir::IRModule& mod, const Map<String, Tensor>& params) {
  if (params.empty()) return mod;
  const ir::Function main = mod.Lookup("main");
  std::unordered_map<const Object*, ir::Expr> values;
  Array<ir::Var> remaining;
  std::string names;
  for (const ir::Var& param : main->params()) {
    names += (names.empty() ? "" : ", ") + param->name_hint().str();
    if (std::optional<Tensor> value = params.Get(param->name_hint())) {
      values.emplace(param.get(), ir::Constant(*value));
    } else {
      remaining.push_back(param);
    }
  }
  // Every name given must be used: a misspelt one would silently leave an input unbound.
  KILN_CHECK(values.size() == static_cast<size_t>(params.size()), ValueError) << [&] {
    std::string unknown;
    for (const auto& item : params) {
      const bool known =
          std::any_of(main->params().begin(), main->params().end(),
                      [&](const ir::Var& param) { return param->name_hint() == item.first; });
      if (!known) unknown += (unknown.empty() ? "'" : ", '") + item.first.str() + "'";
    }
    return "params: @main has no parameter " + unknown + " (its parameters: " + names + ")";
  }();
  const ir::Expr body = ir::SubstituteVars(main->body(), values);
  ir::IRModule bound = ir::IRModule::Create();
  for (const auto& [gvar, func] : mod->functions()) {
    bound.Add(gvar, gvar->name_hint() == "main"
                        ? ir::Function(remaining, body, main->ret_type(), main->attrs())
                        : func);
  }
  return bound;
}

/// "dnnl, blas", for messages.
std::string JoinNames(const std::vector<std::string>& names) {
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : ", ") + name;
  return joined;
}

/// ValueError listing the ops of `mod` that run on Kiln's CPU path (as the placement report
/// places them), if there are any.
void CheckNoFallback(const ir::IRModule& mod, const std::vector<std::string>& compilers) {
  std::map<std::string, int64_t> host_ops;
  for (const OpPlacement& placement : ReportPlacement(mod, compilers).ops) {
    if (placement.target == kHostTarget) ++host_ops[placement.op];
  }
  if (host_ops.empty()) return;
  std::string listed;
  for (const auto& [op, count] : host_ops) {
    listed += (listed.empty() ? "" : ", ") + op + (count > 1 ? " x" + std::to_string(count) : "");
  }
  KILN_THROW(ValueError) << "fallback is disabled, but no compiler among [" << JoinNames(compilers)
                         << "] takes these ops: " << listed
                         << " (the placement report says why each compiler declined)";
}

}  // namespace

transform::Pass DefaultPipeline(const std::vector<std::string>& compilers) {
  BuildOptions options;
  options.compilers = compilers;
  return DefaultPipeline(options);
}

transform::Pass DefaultPipeline(const BuildOptions& options) {
  using namespace transform;  // NOLINT(google-build-using-namespace): the list reads as a recipe
  const std::vector<std::string>& compilers = options.compilers;
  // SiLU and hard-swish are recognized before partitioning: a plugin that runs them takes one
  // eltwise op, and one that does not leaves no gate on Kiln's path between two of its regions
  // (MobileNetV3's hard-swish split every SSDlite layer into two placements that way).
  std::vector<Pass> passes = {
      InferType(),    SimplifyExpr(),       FoldConstant(), CanonicalizeBatchNorm(),
      FoldConstant(), OutlineControlFlow(), RecognizeSilu()};
  if (!compilers.empty()) {
    const Array<String> names(compilers.begin(), compilers.end());
    passes.insert(passes.end(), {MergeComposite(names), AnnotateTarget(compilers),
                                 MergeCompilerRegions(), PartitionGraph(), InferType()});
    if (options.placement == "measured") {
      passes.push_back(MeasuredPlacement(compilers, options.codegen_options));
    }
  }
  // After partitioning: external compilers see GELU (dnnl has a pattern) and attention as
  // exporters spell them.
  passes.push_back(RecognizeGelu());
  passes.push_back(RecognizeAttention());
  passes.push_back(BlockChannels());
  passes.push_back(FuseOps());
  passes.push_back(InferType());
  return Sequential(std::move(passes), "DefaultPipeline");
}

ir::IRModule Optimize(const ir::IRModule& mod, const BuildOptions& options) {
  EnsurePluginsDiscovered();
  KILN_CHECK(options.target == "cpu", ValueError)
      << "unknown build target '" << options.target << "' (known targets: cpu)";
  KILN_CHECK(options.placement == "greedy" || options.placement == "measured", ValueError)
      << "unknown placement '" << options.placement << "' (known: greedy, measured)";
  // Loads each compiler's plugin now: its predicates and patterns must be registered before
  // the partitioning passes ask them, and a missing plugin should fail before any work.
  for (const std::string& compiler : options.compilers) codegen::FindExternalCodegen(compiler);
  const transform::Pass pipeline = options.pipeline.empty()
                                       ? DefaultPipeline(options)
                                       : transform::ParsePipeline(options.pipeline);
  ir::IRModule optimized = pipeline(BindParams(mod, options.params), options.pass_context);
  // Lowering reads checked types; a custom pipeline may end with a pass that leaves none.
  if (!options.pipeline.empty())
    optimized = transform::InferType()(optimized, options.pass_context);
  return optimized;
}

namespace {

void WriteDumpFile(const std::filesystem::path& path, const std::string& text) {
  std::error_code ignored;
  std::filesystem::create_directories(path.parent_path(), ignored);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  KILN_CHECK(out.good(), RuntimeError) << "cannot write IR dump file '" << path.string() << "'";
}

/// With a DumpIRInstrument in the pass context, the loop-level stage beside the graph's: each
/// generated function as `tir/<name>.tir` and their C as `tir/generated.c`.
void DumpLoopLevel(const codegen::LoweredGraph& lowered, const transform::PassContext& context) {
  if (lowered.prim_funcs.empty()) return;
  for (const transform::PassInstrument& instrument : context->instruments) {
    if (!instrument->IsInstance<transform::DumpIRInstrumentObj>()) continue;
    const auto* dump = static_cast<const transform::DumpIRInstrumentObj*>(instrument.get());
    const std::filesystem::path dir = std::filesystem::path(dump->dir()) / "tir";
    for (const tir::Node& func : lowered.prim_funcs) {
      WriteDumpFile(dir / (func.field_as<String>("name").str() + ".tir"), tir::AsText(func) + "\n");
    }
    WriteDumpFile(dir / "generated.c", tir::GenerateC(lowered.prim_funcs));
  }
}

}  // namespace

Executable BuildOptimized(const ir::IRModule& optimized, const BuildOptions& options) {
  EnsurePluginsDiscovered();
  if (!options.fallback) CheckNoFallback(optimized, options.compilers);
  const std::vector<runtime::Module> external =
      codegen::RunExternalCodegen(optimized, options.codegen_options);
  BuildOptions body_options = options;
  body_options.params = {};  // bound in @main already
  const driver::LoweredControlFlow control_flow = driver::LowerControlFlow(
      optimized, [&body_options](const ir::IRModule& body) { return Build(body, body_options); });
  codegen::LoweringOptions lowering;
  lowering.generated_kernels = options.generated_kernels;
  lowering.tir_passes = options.tir_passes;
  lowering.pass_context = options.pass_context;
  const codegen::LoweredGraph lowered = codegen::LowerToGraph(control_flow.module, lowering);
  for (const runtime::Module& module : external) lowered.program.Import(module);
  if (control_flow.runtime.has_value()) lowered.program.Import(*control_flow.runtime);
  if (!lowered.prim_funcs.empty()) lowered.program.Import(tir::BuildC(lowered.prim_funcs));
  DumpLoopLevel(lowered, options.pass_context);
  return Executable(
      runtime::GraphExecutorCreate(lowered.graph_json, lowered.program, DLDevice{kDLCPU, 0}));
}

Executable Build(const ir::IRModule& mod, const BuildOptions& options) {
  return BuildOptimized(Optimize(mod, options), options);
}

namespace {

/// BuildOptions from the map the Python layer passes: keys as the struct's fields, each
/// optional; "pass_context" is a PassContext or the settings map transform.RunPipeline takes.
BuildOptions OptionsFromMap(const Map<String, Any>& map) {
  BuildOptions options;
  for (const auto& [key, value] : map) {
    const std::string name = key.str();
    if (name == "target") {
      options.target = value.cast<String>().str();
    } else if (name == "params") {
      options.params = value.cast<Map<String, Tensor>>();
    } else if (name == "pass_context") {
      if (std::optional<Map<String, Any>> settings = value.as<Map<String, Any>>()) {
        options.pass_context = transform::PassContext::FromMap(*settings);
      } else if (!value.is_none()) {
        options.pass_context = value.cast<transform::PassContext>();
      }
    } else if (name == "pipeline") {
      options.pipeline = value.cast<String>().str();
    } else if (name == "compilers") {
      for (const String& compiler : value.cast<Array<String>>()) {
        options.compilers.push_back(compiler.str());
      }
    } else if (name == "fallback") {
      options.fallback = value.cast<bool>();
    } else if (name == "codegen_options") {
      options.codegen_options = value.cast<Map<String, Any>>();
    } else if (name == "generated_kernels") {
      options.generated_kernels = value.cast<bool>();
    } else if (name == "tir_passes") {
      options.tir_passes = value.cast<String>().str();
    } else if (name == "placement") {
      options.placement = value.cast<String>().str();
    } else {
      KILN_THROW(KeyError)
          << "unknown build option '" << name
          << "' (known: target, params, pass_context, pipeline, compilers, "
             "fallback, codegen_options, generated_kernels, tir_passes, placement)";
    }
  }
  return options;
}

}  // namespace

KILN_REGISTER_GLOBAL("driver.Optimize")
    .set_body_typed([](const ir::IRModule& mod, const Map<String, Any>& options) {
      return Optimize(mod, OptionsFromMap(options));
    });

KILN_REGISTER_GLOBAL("driver.BuildOptimized")
    .set_body_typed([](const ir::IRModule& optimized, const Map<String, Any>& options) {
      return BuildOptimized(optimized, OptionsFromMap(options)).module();
    });

KILN_REGISTER_GLOBAL("driver.Build")
    .set_body_typed([](const ir::IRModule& mod, const Map<String, Any>& options) {
      return Build(mod, OptionsFromMap(options)).module();
    });

KILN_REGISTER_GLOBAL("driver.DefaultPipeline").set_body_typed([](const Array<String>& compilers) {
  return DefaultPipeline(std::vector<std::string>(compilers.begin(), compilers.end()));
});

}  // namespace kiln
