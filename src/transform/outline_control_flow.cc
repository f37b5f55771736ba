// OutlineControlFlow (kiln/transform/passes.h, docs/design.md §32): each If and Loop that @main
// computes becomes a call of a closed function tagged Compiler="control_flow", whose arguments
// are the node's operands and every value its bodies read from @main. Bodies read outer values
// directly, which passes that regroup @main's dataflow (FuseOps, the BYOC passes) do not see as
// uses; as arguments they are ordinary operands, which every pass keeps pointing at the value
// it computes.
#include <kiln/codegen/graph_lowering.h>
#include <kiln/ir/control_flow.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/function.h>
#include <kiln/ir/structural_equal.h>
#include <kiln/transform/infer_type.h>
#include <kiln/transform/passes.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace kiln {
namespace transform {
namespace {

using ir::Expr;
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

/// The size variables that are an extent of a value of `type` (a tensor, or a tuple's); with
/// `within_extents`, also those inside an extent (n and m of n + m).
std::vector<std::string> ExtentVars(const ir::Type& type, bool within_extents = false) {
  std::vector<std::string> vars;
  if (const auto* tuple = type.as<ir::TupleTypeObj>()) {
    for (const ir::Type& field : tuple->fields()) {
      for (std::string& var : ExtentVars(field, within_extents)) vars.push_back(std::move(var));
    }
  } else if (const auto* tensor = type.as<ir::TensorTypeObj>()) {
    for (const ir::Dim& dim : tensor->shape()) {
      const arith::SizeExpr extent = dim.AsSizeExpr();
      if (within_extents) {
        for (const std::string& var : arith::FreeSizeVars(extent)) vars.push_back(var);
      } else if (const auto* var = extent.as<arith::SizeVarObj>()) {
        vars.push_back(var->name().str());
      }
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

/// The nodes of a loop body that compute the same value in every iteration: op calls, tuples
/// and fields whose operands are all @main's values, constants or such nodes. Not a
/// define_sizes (the size it defines is the body's), nor anything that calls a function or
/// holds a body.
NodeSet LoopInvariants(const ir::Function& body, const OuterValues& outer) {
  NodeSet invariant;
  auto all_invariant = [&invariant](const std::vector<Expr>& operands) {
    return std::all_of(operands.begin(), operands.end(),
                       [&invariant](const Expr& e) { return invariant.count(e.get()) != 0; });
  };
  for (const Expr& expr : ir::DataflowPostOrder(body->body())) {
    bool holds = outer.nodes.count(expr.get()) != 0 || expr.as<ir::ConstantObj>() != nullptr;
    if (const auto* call = expr.as<ir::CallObj>()) {
      const auto* op = call->op().as<ir::OpObj>();
      holds = op != nullptr && op->name() != "define_sizes" && all_invariant(LocalOperands(expr));
    } else if (expr.as<ir::TupleObj>() != nullptr || expr.as<ir::TupleGetItemObj>() != nullptr) {
      holds = all_invariant(LocalOperands(expr));
    }
    if (holds) invariant.insert(expr.get());
  }
  return invariant;
}

/// The values `body` reads from @main, in the order a walk first meets them: nodes @main
/// computes, variables that no function inside the body binds, and a carrier for each size of
/// @main that the body's types use but neither defines nor receives as another capture's
/// extent. With `hoisted` (a loop body's LoopInvariants), a tensor the body computes from those
/// alone is captured too: @main computes it once rather than every iteration.
std::vector<Expr> Captures(const ir::Function& body, const OuterValues& outer,
                           const NodeSet& hoisted = {}) {
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
    const bool hoist = hoisted.count(expr.get()) != 0 && expr.as<ir::ConstantObj>() == nullptr &&
                       expr->checked_type().as<ir::TensorTypeObj>() != nullptr;
    if (outer.nodes.count(expr.get()) != 0 || hoist) {
      captures.push_back(expr);
      continue;
    }
    if (expr->checked_type().defined()) {
      for (const std::string& var : ExtentVars(expr->checked_type(), /*within_extents=*/true)) {
        sizes_used.insert(var);
      }
    }
    NoteSizesDefined(expr, defined_inside);
    if (expr.as<ir::VarObj>() != nullptr) free_vars.push_back(expr);
    if (const auto* function = expr.as<ir::FunctionObj>()) {
      for (const ir::Var& param : function->params()) {
        bound.insert(param.get());
        // A parameter's bare extents are given by what it is called with (a carried value
        // whose extent changes has a size of its own).
        if (param->checked_type().defined()) {
          for (const std::string& var : ExtentVars(param->checked_type())) {
            defined_inside.insert(var);
          }
        }
      }
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

/// A parameter for `value` in a body's module: a variable keeps its name, unless `taken`
/// (the names of the module's other parameters, which a graph's inputs must not repeat) holds
/// it; the name is added to `taken`.
ir::Var ParamFor(const Expr& value, size_t index, std::set<std::string>& taken) {
  const auto* var = value.as<ir::VarObj>();
  const std::string base =
      var != nullptr ? var->name_hint().str() : "captured_" + std::to_string(index);
  std::string name = base;
  for (int suffix = 1; !taken.insert(name).second; ++suffix) {
    name = base + "_" + std::to_string(suffix);
  }
  return ir::Var(name, value->checked_type());
}

/// Replaces each If and Loop that @main computes with a call of a closed control_flow
/// function holding it.
class ControlFlowOutliner : public NodeRewriter {
 public:
  ControlFlowOutliner(OuterValues outer, int64_t first_index)
      : outer_(std::move(outer)), next_index_(first_index) {}

 protected:
  Expr Replacement(const Expr& pre, const Expr& post) override {
    if (outer_.nodes.count(pre.get()) == 0) return post;
    if (const auto* branch = pre.as<ir::IfObj>()) return OutlineIf(pre, *branch, post);
    if (const auto* loop = pre.as<ir::LoopObj>()) return OutlineLoop(pre, *loop, post);
    return post;
  }

 private:
  Expr OutlineIf(const Expr& pre, const ir::IfObj& node, const Expr& post) {
    std::vector<Expr> captures = Captures(node.then_branch(), outer_);
    for (const Expr& value : Captures(node.else_branch(), outer_)) {
      if (std::find(captures.begin(), captures.end(), value) == captures.end()) {
        captures.push_back(value);
      }
    }
    const ir::Var cond("cond", node.cond()->checked_type());
    std::set<std::string> taken;
    Closure closure = Close(captures, taken);
    const ir::If closed(cond, Rebind(node.then_branch(), {}, {}, closure),
                        Rebind(node.else_branch(), {}, {}, closure), node.sizes());
    // Outputs whose extents depend on the branch taken are allocated by the branch, returned.
    const int64_t returns = node.sizes().empty() ? 0 : NumTensors(pre->checked_type());
    return CallOf("kiln_if_", pre, {post.as<ir::IfObj>()->cond()}, {cond}, closed, closure,
                  returns);
  }

  Expr OutlineLoop(const Expr& pre, const ir::LoopObj& loop, const Expr& post) {
    const ir::Function& body = loop.body();
    // The body's own iteration and condition, typed as the runtime passes them.
    std::vector<ir::Var> leading{ir::Var("iteration", ir::TensorType::Static({}, kInt64)),
                                 ir::Var("condition", ir::TensorType::Static({}, kBool))};
    std::vector<Expr> old_leading(body->params().begin(), body->params().end());
    std::set<std::string> taken{"iteration", "condition"};
    for (size_t i = 2; i < old_leading.size(); ++i) {
      leading.push_back(ParamFor(old_leading[i], i, taken));
    }
    Closure closure = Close(Captures(body, outer_, LoopInvariants(body, outer_)), taken);
    const auto* rewritten = post.as<ir::LoopObj>();
    std::vector<Expr> operands{rewritten->trip_count(), rewritten->condition()};
    operands.insert(operands.end(), rewritten->initial().begin(), rewritten->initial().end());
    std::vector<ir::Var> params{ir::Var("trip_count", loop.trip_count()->checked_type()),
                                ir::Var("cond", loop.condition()->checked_type())};
    Array<Expr> initial;
    std::set<std::string> own_names{"trip_count", "cond"};  // the closed function's parameters
    for (int64_t i = 0; i < loop.initial().size(); ++i) {
      params.push_back(ParamFor(loop.initial()[i], static_cast<size_t>(2 + i), own_names));
      initial.push_back(params.back());
    }
    const ir::Loop closed(params[0], params[1], initial,
                          Rebind(body, leading, old_leading, closure), loop.iterations());
    // Scan outputs of a length only the run decides are allocated by the loop and returned.
    // So are carried values whose extents the run decides (the body takes them more generally
    // than they enter), and with them everything after: all the outputs.
    const int64_t scans = loop.num_scan_outputs();
    const int64_t carried = loop.initial().size();
    bool grows = false;
    for (int64_t i = 0; i < carried; ++i) {
      grows = grows || !ir::StructuralEqual(body->params()[i + 2]->checked_type(),
                                            loop.initial()[i]->checked_type());
    }
    const bool returns_scans = scans > 0 && !loop.iterations().as_int().has_value();
    const int64_t returns = grows ? carried + scans : returns_scans ? scans : 0;
    return CallOf("kiln_loop_", pre, operands, params, closed, closure, returns);
  }

  /// The closed function's parameters for `captures` (a captured tuple comes field by field,
  /// as a graph passes tensors), and what each capture becomes inside.
  struct Closure {
    std::vector<Expr> arguments;  ///< the rewritten captures' tensors, for the call
    std::vector<ir::Var> params;
    std::unordered_map<const Object*, Expr> replacements;
  };

  /// `taken`: the names of the body's other parameters.
  Closure Close(const std::vector<Expr>& captures, std::set<std::string>& taken) {
    Closure closure;
    for (const Expr& capture : captures) {
      const Expr rewritten = Mutate(capture);  // typed only where nothing under it changed
      const std::vector<Expr> typed_fields = TensorsOf(capture);
      Array<Expr> fields;
      for (size_t i = 0; i < typed_fields.size(); ++i) {
        closure.arguments.push_back(IsTuple(capture)
                                        ? Expr(ir::TupleGetItem(rewritten, static_cast<int64_t>(i)))
                                        : rewritten);
        closure.params.push_back(ParamFor(typed_fields[i], closure.params.size(), taken));
        fields.push_back(closure.params.back());
      }
      closure.replacements.emplace(capture.get(),
                                   IsTuple(capture) ? Expr(ir::Tuple(fields)) : fields[0]);
    }
    return closure;
  }

  /// `body` reading the closure's parameters instead of @main's values, and taking `leading`
  /// instead of `old_leading`.
  static ir::Function Rebind(const ir::Function& body, const std::vector<ir::Var>& leading,
                             const std::vector<Expr>& old_leading, const Closure& closure) {
    std::unordered_map<const Object*, Expr> replacements = closure.replacements;
    for (size_t i = 0; i < leading.size(); ++i)
      replacements.emplace(old_leading[i].get(), leading[i]);
    Array<ir::Var> params = body->params();
    if (!leading.empty()) params = Array<ir::Var>(leading.begin(), leading.end());
    return ir::Function(params, Substituter(std::move(replacements)).Mutate(body->body()));
  }

  /// A call, typed as `pre`, of a closed function tagged Compiler="control_flow" that computes
  /// `node` from `params` (standing for `operands`) and the closure's parameters.
  Expr CallOf(const std::string& prefix, const Expr& pre, const std::vector<Expr>& operands,
              const std::vector<ir::Var>& params, const Expr& node, const Closure& closure,
              int64_t returns) {
    Array<Expr> args(operands.begin(), operands.end());
    Array<ir::Var> all_params(params.begin(), params.end());
    for (size_t i = 0; i < closure.params.size(); ++i) {
      args.push_back(closure.arguments[i]);
      all_params.push_back(closure.params[i]);
    }
    Map<String, Any> attrs{
        {ir::attr::kCompiler, String(kControlFlowCompiler)},
        {ir::attr::kGlobalSymbol, String(prefix + std::to_string(next_index_++))}};
    if (returns > 0) attrs.Set(codegen::kReturnsOutputsAttr, returns);
    ir::Call call(ir::Function(all_params, node, pre->checked_type(), attrs), args);
    call->set_checked_type(pre->checked_type());
    return call;
  }

  OuterValues outer_;
  int64_t next_index_;
};

/// How many control_flow functions @main calls already: the next one's number.
int64_t CountOutlined(const ir::Function& main) {
  int64_t count = 0;
  ir::PostOrderVisit(main->body(), [&count](const Expr& expr) {
    const auto* call = expr.as<ir::CallObj>();
    const auto* callee = call == nullptr ? nullptr : call->op().as<ir::FunctionObj>();
    if (callee == nullptr) return;
    const std::optional<String> compiler =
        Downcast<ir::Function>(call->op()).GetAttr<String>(ir::attr::kCompiler);
    if (compiler.has_value() && compiler->str() == kControlFlowCompiler) ++count;
  });
  return count;
}

/// Whether @main computes an If or a Loop itself (not inside a function it calls).
bool ComputesControlFlow(const ir::Function& main) {
  const std::vector<Expr> nodes = ir::DataflowPostOrder(main->body());
  return std::any_of(nodes.begin(), nodes.end(), [](const Expr& node) {
    return node.as<ir::IfObj>() != nullptr || node.as<ir::LoopObj>() != nullptr;
  });
}

ir::IRModule OutlineControlFlowOf(const ir::IRModule& mod) {
  const ir::Function main = mod.Lookup("main");
  // Most models have none: they pay one walk, not type inference and a rewrite (building
  // runs this pass a second time).
  if (!ComputesControlFlow(main)) return mod;
  InferExprType(main, mod);
  ControlFlowOutliner outliner(OuterValues(main), CountOutlined(main));
  const Expr body = outliner.Mutate(main->body());
  if (body.same_as(main->body())) return mod;
  ir::IRModule result = ir::IRModule::Create(mod->attrs());
  const ir::Function outlined(main->params(), body, main->ret_type(), main->attrs());
  for (const auto& [gvar, func] : mod->functions()) {
    result.Add(gvar, gvar->name_hint() == "main" ? outlined : func);
  }
  InferExprType(outlined, result);  // the nodes rebuilt around the calls
  return result;
}

}  // namespace

Pass OutlineControlFlow() {
  return CreateModulePass(
      [](const ir::IRModule& mod, const PassContext&) { return OutlineControlFlowOf(mod); },
      PassInfo{"transform.OutlineControlFlow", 0, true});
}

KILN_REGISTER_PASS(OutlineControlFlow);

}  // namespace transform
}  // namespace kiln
