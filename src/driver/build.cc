// kiln::Build (kiln/driver/build.h): the compile pipeline in one place, readable top to bottom.
#include <kiln/codegen/graph_lowering.h>
#include <kiln/driver/build.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/function.h>
#include <kiln/runtime/graph_executor.h>
#include <kiln/transform/passes.h>

#include <string>
#include <unordered_map>
#include <utility>

namespace kiln {
namespace {

/// Replaces the parameters of @main named in `params` with constants.
class ParamBinder : public ir::ExprMutator {
 public:
  explicit ParamBinder(std::unordered_map<const Object*, ir::Constant> values)
      : values_(std::move(values)) {}

 protected:
  ir::Expr VisitVar(const ir::Var& var) override {
    auto it = values_.find(var.get());
    return it == values_.end() ? ir::Expr(var) : ir::Expr(it->second);
  }

 private:
  std::unordered_map<const Object*, ir::Constant> values_;
};

ir::IRModule BindParams(const ir::IRModule& mod, const Map<String, Tensor>& params) {
  if (params.empty()) return mod;
  const ir::Function main = mod.Lookup("main");
  std::unordered_map<const Object*, ir::Constant> values;
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
  const ir::Expr body = ParamBinder(std::move(values)).Mutate(main->body());
  ir::IRModule bound = ir::IRModule::Create();
  for (const auto& [gvar, func] : mod->functions()) {
    bound.Add(gvar, gvar->name_hint() == "main"
                        ? ir::Function(remaining, body, main->ret_type(), main->attrs())
                        : func);
  }
  return bound;
}

}  // namespace

transform::Pass DefaultPipeline() {
  using namespace transform;  // NOLINT(google-build-using-namespace): the list reads as a recipe
  return Sequential({InferType(), SimplifyExpr(), FoldConstant(), CanonicalizeBatchNorm(),
                     FoldConstant(), FuseOps(), InferType()},
                    "DefaultPipeline");
}

Executable Build(const ir::IRModule& mod, const BuildOptions& options) {
  KILN_CHECK(options.target == "cpu", ValueError)
      << "unknown build target '" << options.target << "' (known targets: cpu)";
  const transform::Pass pipeline =
      options.pipeline.empty() ? DefaultPipeline() : transform::ParsePipeline(options.pipeline);
  ir::IRModule optimized = pipeline(BindParams(mod, options.params), options.pass_context);
  // Lowering reads checked types; a custom pipeline may end with a pass that leaves none.
  if (!options.pipeline.empty())
    optimized = transform::InferType()(optimized, options.pass_context);
  const codegen::LoweredGraph lowered = codegen::LowerToGraph(optimized);
  return Executable(
      runtime::GraphExecutorCreate(lowered.graph_json, lowered.program, DLDevice{kDLCPU, 0}));
}

KILN_REGISTER_GLOBAL("driver.Build")
    .set_body_typed([](const ir::IRModule& mod, const String& target,
                       const Map<String, Tensor>& params, const Any& pass_context,
                       const String& pipeline) {
      BuildOptions options;
      options.target = target.str();
      options.params = params;
      // None, a PassContext, or the settings map transform.RunPipeline takes.
      if (std::optional<Map<String, Any>> settings = pass_context.as<Map<String, Any>>()) {
        options.pass_context = transform::PassContext::FromMap(*settings);
      } else if (!pass_context.is_none()) {
        options.pass_context = pass_context.cast<transform::PassContext>();
      }
      options.pipeline = pipeline.str();
      return Build(mod, options).module();
    });

KILN_REGISTER_GLOBAL("driver.DefaultPipeline").set_body_typed([]() { return DefaultPipeline(); });

}  // namespace kiln
