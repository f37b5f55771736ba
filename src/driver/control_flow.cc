// LowerControlFlow (control_flow_internal.h): each If and Loop of @main becomes a call of a
// "control_flow" module function, its bodies compiled as Executables of their own.
#include <kiln/codegen/graph_lowering.h>
#include <kiln/ir/control_flow.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/function.h>
#include <kiln/transform/infer_type.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "control_flow_internal.h"

namespace kiln {
namespace driver {
namespace {

using ir::Expr;
using Json = nlohmann::json;
using NodeSet = std::unordered_set<const Object*>;

constexpr DLDataType kInt64{kDLInt, 64, 1};
constexpr DLDataType kBool{kDLUInt, 1, 1};

/// The operands of `expr` that are computed where `expr` is: a call's arguments (its callee, a
/// fused function, is not a value), a tuple's fields, and a control-flow node's condition,
/// trip count and initial values, not its bodies.
std::vector<Expr> LocalOperands(const Expr& expr) {
  if (const auto* call = expr.as<ir::CallObj>()) return {call->args().begin(), call->args().end()};
  if (const auto* tuple = expr.as<ir::TupleObj>()) {
    return {tuple->fields().begin(), tuple->fields().end()};
  }
  if (const auto* item = expr.as<ir::TupleGetItemObj>()) return {item->tuple()};
  return ir::OuterOperands(expr);
}

/// Every child of `expr`, bodies and callees included.
std::vector<Expr> AllChildren(const Expr& expr) {
  std::vector<Expr> children;
  if (const auto* call = expr.as<ir::CallObj>()) children.push_back(call->op());
  if (const auto* function = expr.as<ir::FunctionObj>()) return {function->body()};
  if (const auto* branch = expr.as<ir::IfObj>()) {
    return {branch->cond(), branch->then_branch(), branch->else_branch()};
  }
  if (const auto* loop = expr.as<ir::LoopObj>()) {
    std::vector<Expr> operands = LocalOperands(expr);
    operands.push_back(loop->body());
    return operands;
  }
  for (const Expr& operand : LocalOperands(expr)) children.push_back(operand);
  return children;
}

/// The size variables that are an extent of a value of `type` (a tensor, or a tuple's).
std::vector<std::string> ExtentVars(const ir::Type& type) {
  std::vector<std::string> vars;
  if (const auto* tuple = type.as<ir::TupleTypeObj>()) {
    for (const ir::Type& field : tuple->fields()) {
      for (std::string& var : ExtentVars(field)) vars.push_back(std::move(var));
    }
  } else if (const auto* tensor = type.as<ir::TensorTypeObj>()) {
    for (const ir::Dim& dim : tensor->shape()) {
      if (const auto* var = dim.AsSizeExpr().as<arith::SizeVarObj>())
        vars.push_back(var->name().str());
    }
  }
  return vars;
}

/// What @main computes itself, its parameters included: a body reads these as captures. A
/// size @main knows reaches a body only as an extent of a tensor it captures, so each size
/// has a carrier, the first of these values that has it as an extent.
struct OuterValues {
  NodeSet nodes;
  std::map<std::string, Expr> carrier_of_size;

  explicit OuterValues(const ir::Function& main) {
    std::vector<Expr> stack{main->body()};
    for (const ir::Var& param : main->params()) stack.push_back(param);
    while (!stack.empty()) {
      const Expr expr = std::move(stack.back());
      stack.pop_back();
      if (!nodes.insert(expr.get()).second) continue;
      if (expr->checked_type().as<ir::TensorTypeObj>() != nullptr) {
        for (const std::string& var : ExtentVars(expr->checked_type())) {
          carrier_of_size.emplace(var, expr);
        }
      }
      for (const Expr& operand : LocalOperands(expr)) stack.push_back(operand);
    }
  }
};

/// Adds to `defined` the sizes `expr` defines from what it computes: define_sizes' (the
/// importer's data-dependent sizes), a loop's iteration count, an If's disagreeing extents.
void NoteSizesDefined(const Expr& expr, std::set<std::string>& defined) {
  std::vector<arith::SizeExpr> sizes;
  if (const auto* call = expr.as<ir::CallObj>()) {
    const auto* op = call->op().as<ir::OpObj>();
    if (op == nullptr || op->name().str() != "define_sizes") return;
    for (const Any& size : call->attrs().at(String("sizes")).cast<Array<Any>>()) {
      if (std::optional<arith::SizeExpr> extent = size.as<arith::SizeExpr>())
        sizes.push_back(*extent);
    }
  } else if (const auto* loop = expr.as<ir::LoopObj>()) {
    sizes.push_back(loop->iterations());
  } else if (const auto* branch = expr.as<ir::IfObj>()) {
    sizes.assign(branch->sizes().begin(), branch->sizes().end());
  }
  for (const arith::SizeExpr& size : sizes) {
    for (const std::string& var : arith::FreeSizeVars(size)) defined.insert(var);
  }
}

/// The values `body` reads from @main, in the order a walk first meets them: nodes @main
/// computes, variables that no function inside the body binds, and a carrier for each size of
/// @main that the body's types use but neither defines nor receives as another capture's
/// extent.
std::vector<Expr> Captures(const ir::Function& body, const OuterValues& outer) {
  std::vector<Expr> captures;
  std::vector<Expr> free_vars;
  std::set<std::string> sizes_used;
  std::set<std::string> defined_inside;
  NodeSet seen;
  NodeSet bound;
  std::vector<Expr> stack{body};
  while (!stack.empty()) {
    const Expr expr = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(expr.get()).second) continue;
    if (outer.nodes.count(expr.get()) != 0) {
      captures.push_back(expr);
      continue;
    }
    if (expr->checked_type().defined()) {
      for (const std::string& var : ExtentVars(expr->checked_type())) sizes_used.insert(var);
    }
    NoteSizesDefined(expr, defined_inside);
    if (expr.as<ir::VarObj>() != nullptr) free_vars.push_back(expr);
    if (const auto* function = expr.as<ir::FunctionObj>()) {
      for (const ir::Var& param : function->params()) bound.insert(param.get());
    }
    const std::vector<Expr> children = AllChildren(expr);
    stack.insert(stack.end(), children.rbegin(), children.rend());
  }
  for (const Expr& var : free_vars) {
    if (bound.count(var.get()) == 0) captures.push_back(var);
  }
  for (const Expr& capture : captures) {
    for (const std::string& var : ExtentVars(capture->checked_type())) sizes_used.erase(var);
  }
  for (const std::string& var : defined_inside) sizes_used.erase(var);
  for (const std::string& var : sizes_used) {
    auto carrier = outer.carrier_of_size.find(var);
    if (carrier == outer.carrier_of_size.end()) continue;  // a size the body defines itself
    if (std::find(captures.begin(), captures.end(), carrier->second) == captures.end()) {
      captures.push_back(carrier->second);
    }
  }
  return captures;
}

/// A mutator that gives each node to Replacement after its operands are rewritten.
class NodeRewriter : public ir::ExprMutator {
 protected:
  virtual Expr Replacement(const Expr& pre, const Expr& post) = 0;

  Expr VisitVar(const ir::Var& var) override { return Replacement(var, var); }
  Expr VisitConstant(const ir::Constant& constant) override {
    return Replacement(constant, constant);
  }
  Expr VisitCall(const ir::Call& pre, const ir::Call& post) override {
    return Replacement(pre, post);
  }
  Expr VisitTuple(const ir::Tuple& pre, const ir::Tuple& post) override {
    return Replacement(pre, post);
  }
  Expr VisitTupleGetItem(const ir::TupleGetItem& pre, const ir::TupleGetItem& post) override {
    return Replacement(pre, post);
  }
  Expr VisitIf(const ir::If& pre, const ir::If& post) override { return Replacement(pre, post); }
  Expr VisitLoop(const ir::Loop& pre, const ir::Loop& post) override {
    return Replacement(pre, post);
  }
};

/// Replaces the nodes of a map, by identity.
class Substituter : public NodeRewriter {
 public:
  explicit Substituter(std::unordered_map<const Object*, Expr> replacements)
      : replacements_(std::move(replacements)) {}

 protected:
  Expr Replacement(const Expr& pre, const Expr& post) override {
    auto it = replacements_.find(pre.get());
    return it == replacements_.end() ? post : it->second;
  }

 private:
  std::unordered_map<const Object*, Expr> replacements_;
};

/// How many tensors a value of `type` is: one, or its tuple's, flattened.
int64_t NumTensors(const ir::Type& type) {
  const auto* tuple = type.as<ir::TupleTypeObj>();
  if (tuple == nullptr) return 1;
  int64_t count = 0;
  for (const ir::Type& field : tuple->fields()) count += NumTensors(field);
  return count;
}

bool IsTuple(const Expr& value) { return value->checked_type().as<ir::TupleTypeObj>() != nullptr; }

/// `value` as the tensors a graph passes: itself, or its tuple's fields (typed).
std::vector<Expr> TensorsOf(const Expr& value) {
  const auto* tuple = value->checked_type().as<ir::TupleTypeObj>();
  if (tuple == nullptr) return {value};
  std::vector<Expr> fields;
  for (int64_t i = 0; i < tuple->fields().size(); ++i) {
    KILN_CHECK(tuple->fields()[i].as<ir::TensorTypeObj>() != nullptr, NotImplementedError)
        << "a control-flow body reads a tuple of tuples from outside, which Kiln cannot pass yet";
    const Expr field = ir::TupleGetItem(value, i);
    transform::InferNodeType(field);
    fields.push_back(field);
  }
  return fields;
}

/// A parameter for `value` in a body's module: a variable keeps its name.
ir::Var ParamFor(const Expr& value, size_t index) {
  const auto* var = value.as<ir::VarObj>();
  return ir::Var(var != nullptr ? var->name_hint() : String("captured_" + std::to_string(index)),
                 value->checked_type());
}

/// Replaces each If and Loop that @main computes with a call of a control_flow function.
class ControlFlowOutliner : public NodeRewriter {
 public:
  ControlFlowOutliner(OuterValues outer,
                      const std::function<Executable(const ir::IRModule&)>& build)
      : outer_(std::move(outer)), build_(build) {}

  Json functions = Json::array();
  std::vector<runtime::Module> bodies;

 protected:
  Expr Replacement(const Expr& pre, const Expr& post) override {
    if (outer_.nodes.count(pre.get()) == 0) return post;
    if (const auto* branch = pre.as<ir::IfObj>()) return OutlineIf(pre, *branch, post);
    if (const auto* loop = pre.as<ir::LoopObj>()) return OutlineLoop(pre, *loop, post);
    return post;
  }

 private:
  Expr OutlineIf(const Expr& pre, const ir::IfObj& node, const Expr& post) {
    const std::string name = "kiln_if_" + std::to_string(functions.size());
    std::vector<Expr> captures = Captures(node.then_branch(), outer_);
    for (const Expr& value : Captures(node.else_branch(), outer_)) {
      if (std::find(captures.begin(), captures.end(), value) == captures.end()) {
        captures.push_back(value);
      }
    }
    const size_t then_index =
        AddBody("the then branch of " + name, node.then_branch(), {}, {}, captures);
    const size_t else_index =
        AddBody("the else branch of " + name, node.else_branch(), {}, {}, captures);
    // Outputs whose extents depend on the branch taken are allocated by the branch, returned.
    const bool returns = !node.sizes().empty();
    functions.push_back(Json{{"name", name},
                             {"kind", "if"},
                             {"bodies", {then_index, else_index}},
                             {"returns", returns}});
    return CallOf(name, pre, post, {post.as<ir::IfObj>()->cond()}, captures,
                  returns ? NumTensors(pre->checked_type()) : 0);
  }

  Expr OutlineLoop(const Expr& pre, const ir::LoopObj& loop, const Expr& post) {
    const std::string name = "kiln_loop_" + std::to_string(functions.size());
    const int64_t scans = loop.num_scan_outputs();
    // Scan outputs of a length only the run decides are allocated by the loop and returned.
    const bool returns_scans = scans > 0 && !loop.iterations().as_int().has_value();
    const ir::Function& body = loop.body();
    std::vector<ir::Var> leading{ir::Var("iteration", ir::TensorType::Static({}, kInt64)),
                                 ir::Var("condition", ir::TensorType::Static({}, kBool))};
    std::vector<Expr> old_leading(body->params().begin(), body->params().end());
    for (size_t i = 2; i < old_leading.size(); ++i) leading.push_back(ParamFor(old_leading[i], i));
    const std::vector<Expr> captures = Captures(body, outer_);
    const size_t index = AddBody("the body of " + name, body, leading, old_leading, captures);
    functions.push_back(Json{{"name", name},
                             {"kind", "loop"},
                             {"bodies", {index}},
                             {"carried", loop.initial().size()},
                             {"scans", scans},
                             {"returns_scans", returns_scans}});
    const auto* rewritten = post.as<ir::LoopObj>();
    std::vector<Expr> operands{rewritten->trip_count(), rewritten->condition()};
    operands.insert(operands.end(), rewritten->initial().begin(), rewritten->initial().end());
    return CallOf(name, pre, post, operands, captures, returns_scans ? scans : 0);
  }

  /// Builds `body` (`what`, for errors) as a module whose @main takes `leading` (standing for
  /// `old_leading`) then the captures; its index among the bodies.
  size_t AddBody(const std::string& what, const ir::Function& body,
                 const std::vector<ir::Var>& leading, const std::vector<Expr>& old_leading,
                 const std::vector<Expr>& captures) {
    std::unordered_map<const Object*, Expr> replacements;
    Array<ir::Var> params;
    for (size_t i = 0; i < leading.size(); ++i) {
      replacements.emplace(old_leading[i].get(), leading[i]);
      params.push_back(leading[i]);
    }
    for (size_t i = 0; i < captures.size(); ++i) {
      // A graph passes tensors: a captured tuple comes field by field, put back together inside.
      Array<Expr> fields;
      for (const Expr& field : TensorsOf(captures[i])) {
        const ir::Var param = ParamFor(field, params.size());
        fields.push_back(param);
        params.push_back(param);
      }
      replacements.emplace(captures[i].get(),
                           IsTuple(captures[i]) ? Expr(ir::Tuple(fields)) : fields[0]);
    }
    ir::IRModule module = ir::IRModule::Create();
    module.Add(ir::GlobalVar("main"),
               ir::Function(params, Substituter(std::move(replacements)).Mutate(body->body())));
    try {
      bodies.push_back(build_(module).module());
    } catch (const Error& error) {
      throw error.WithContext("while compiling " + what);
    }
    return bodies.size() - 1;
  }

  /// A call of control_flow function `name` on `operands` and the rewritten captures, typed as
  /// `pre`, whose callee carries the node it stands for.
  Expr CallOf(const std::string& name, const Expr& pre, const Expr& post,
              const std::vector<Expr>& operands, const std::vector<Expr>& captures,
              int64_t returns = 0) {
    Array<Expr> args(operands.begin(), operands.end());
    for (const Expr& capture : captures) {
      for (const Expr& field : TensorsOf(Mutate(capture))) args.push_back(field);  // rewritten
    }
    Array<ir::Var> params;
    for (int64_t i = 0; i < args.size(); ++i) {
      params.push_back(ir::Var("arg" + std::to_string(i), args[i]->checked_type()));
    }
    Map<String, Any> attrs{{ir::attr::kCompiler, String("control_flow")},
                           {ir::attr::kGlobalSymbol, String(name)}};
    if (returns > 0) attrs.Set(codegen::kReturnsOutputsAttr, returns);
    ir::Call call(ir::Function(params, post, pre->checked_type(), attrs), args);
    call->set_checked_type(pre->checked_type());
    return call;
  }

  OuterValues outer_;
  const std::function<Executable(const ir::IRModule&)>& build_;
};

}  // namespace

LoweredControlFlow LowerControlFlow(
    const ir::IRModule& optimized,
    const std::function<Executable(const ir::IRModule&)>& build_body) {
  const ir::Function main = optimized.Lookup("main");
  ControlFlowOutliner outliner(OuterValues(main), build_body);
  const Expr body = outliner.Mutate(main->body());
  if (outliner.bodies.empty()) return {optimized, std::nullopt};
  ir::IRModule module = ir::IRModule::Create(optimized->attrs());
  const ir::Function lowered(main->params(), body, main->ret_type(), main->attrs());
  for (const auto& [gvar, func] : optimized->functions()) {
    module.Add(gvar, gvar->name_hint() == "main" ? lowered : func);
  }
  transform::InferExprType(lowered, module);  // the nodes rebuilt around the calls
  const Json description{{"version", 1}, {"functions", outliner.functions}};
  runtime::Module runtime =
      Function::GetGlobalRequired("runtime.ControlFlowModuleCreate")(String(description.dump()))
          .cast<runtime::Module>();
  for (const runtime::Module& module_body : outliner.bodies) runtime.Import(module_body);
  return {module, runtime};
}

}  // namespace driver
}  // namespace kiln
