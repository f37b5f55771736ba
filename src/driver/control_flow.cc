// LowerControlFlow (control_flow_internal.h): each body of the control_flow functions @main
// calls (transform::OutlineControlFlow) is compiled as an Executable of its own, and the
// functions become the functions of one "control_flow" runtime module.
#include <kiln/codegen/graph_lowering.h>
#include <kiln/ir/control_flow.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/function.h>
#include <kiln/transform/passes.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "control_flow_internal.h"

namespace kiln {
namespace driver {
namespace {

using ir::Expr;
using Json = nlohmann::json;

/// The control_flow functions @main calls, in the order of their calls.
std::vector<ir::Function> ControlFlowFunctions(const ir::Function& main) {
  std::vector<ir::Function> functions;
  ir::PostOrderVisit(main->body(), [&functions](const Expr& expr) {
    const auto* call = expr.as<ir::CallObj>();
    if (call == nullptr || call->op().as<ir::FunctionObj>() == nullptr) return;
    const auto callee = Downcast<ir::Function>(call->op());
    const std::optional<String> compiler = callee.GetAttr<String>(ir::attr::kCompiler);
    if (compiler.has_value() && compiler->str() == transform::kControlFlowCompiler) {
      functions.push_back(callee);
    }
  });
  return functions;
}

/// Compiles the bodies of each control_flow function; their modules are the bodies' list.
class BodyCompiler {
 public:
  explicit BodyCompiler(const std::function<Executable(const ir::IRModule&)>& build)
      : build_(build) {}

  Json functions = Json::array();
  std::vector<runtime::Module> bodies;

  /// Adds `function` (an If or a Loop closed over its parameters) to `functions`.
  void Add(const ir::Function& function) {
    const std::string name = function.GetAttr<String>(ir::attr::kGlobalSymbol)->str();
    const int64_t returned = function.GetAttr<int64_t>(codegen::kReturnsOutputsAttr).value_or(0);
    const bool returns = returned > 0;
    const std::vector<ir::Var> params(function->params().begin(), function->params().end());
    if (const auto* branch = function->body().as<ir::IfObj>()) {
      const std::vector<ir::Var> captures(params.begin() + 1, params.end());
      const size_t then_index =
          AddBody("the then branch of " + name, {}, branch->then_branch(), captures);
      const size_t else_index =
          AddBody("the else branch of " + name, {}, branch->else_branch(), captures);
      functions.push_back(Json{{"name", name},
                               {"kind", "if"},
                               {"bodies", {then_index, else_index}},
                               {"returns", returns}});
      return;
    }
    const auto* loop = function->body().as<ir::LoopObj>();
    KILN_CHECK(loop != nullptr, ValueError)
        << "control_flow function '" << name << "' holds a " << function->body()->GetTypeKey()
        << ", not an If or a Loop";
    const ir::Function& body = loop->body();
    const auto captured = static_cast<std::ptrdiff_t>(2 + loop->initial().size());
    const std::vector<ir::Var> captures(params.begin() + captured, params.end());
    const std::vector<ir::Var> leading(body->params().begin(), body->params().end());
    const size_t index = AddBody("the body of " + name, leading, body, captures);
    functions.push_back(Json{{"name", name},
                             {"kind", "loop"},
                             {"bodies", {index}},
                             {"carried", loop->initial().size()},
                             {"scans", loop->num_scan_outputs()},
                             {"returns_scans", returns},
                             {"returns_carried", returned > loop->num_scan_outputs()}});
  }

 private:
  /// Builds `body` (`what`, for errors) as a module whose @main takes `leading`, then the
  /// captures it reads; its index among the bodies.
  size_t AddBody(const std::string& what, const std::vector<ir::Var>& leading,
                 const ir::Function& body, const std::vector<ir::Var>& captures) {
    Array<ir::Var> params(leading.begin(), leading.end());
    for (const ir::Var& capture : captures) params.push_back(capture);
    ir::IRModule module = ir::IRModule::Create();
    module.Add(ir::GlobalVar("main"), ir::Function(params, body->body()));
    try {
      bodies.push_back(build_(module).module());
    } catch (const Error& error) {
      throw error.WithContext("while compiling " + what);
    }
    return bodies.size() - 1;
  }

  const std::function<Executable(const ir::IRModule&)>& build_;
};

}  // namespace

LoweredControlFlow LowerControlFlow(
    const ir::IRModule& optimized,
    const std::function<Executable(const ir::IRModule&)>& build_body) {
  // A custom pipeline may not have outlined them.
  const ir::IRModule outlined = transform::OutlineControlFlow()(optimized);
  const std::vector<ir::Function> functions = ControlFlowFunctions(outlined.Lookup("main"));
  if (functions.empty()) return {outlined, std::nullopt};
  BodyCompiler compiler(build_body);
  for (const ir::Function& function : functions) compiler.Add(function);
  const Json description{{"version", 1}, {"functions", compiler.functions}};
  runtime::Module runtime =
      Function::GetGlobalRequired("runtime.ControlFlowModuleCreate")(String(description.dump()))
          .cast<runtime::Module>();
  for (const runtime::Module& body : compiler.bodies) runtime.Import(body);
  return {outlined, runtime};
}

}  // namespace driver
}  // namespace kiln
