// Iterative post-order drivers behind ExprVisitor, ExprMutator and PostOrderVisit.
#include <kiln/ir/expr_functor.h>

#include <unordered_set>
#include <utility>
#include <vector>

namespace kiln {
namespace ir {
namespace {

/// The data-flow children of `expr`, in the order they are finished.
std::vector<Expr> Children(const Expr& expr) {
  std::vector<Expr> children;
  if (expr->IsInstance<CallObj>()) {
    const auto* call = static_cast<const CallObj*>(expr.get());
    children.push_back(call->op());
    for (const Expr& arg : call->args()) children.push_back(arg);
  } else if (expr->IsInstance<TupleObj>()) {
    for (const Expr& field : static_cast<const TupleObj*>(expr.get())->fields()) {
      children.push_back(field);
    }
  } else if (expr->IsInstance<TupleGetItemObj>()) {
    children.push_back(static_cast<const TupleGetItemObj*>(expr.get())->tuple());
  } else if (expr->IsInstance<FunctionObj>()) {
    const auto* function = static_cast<const FunctionObj*>(expr.get());
    for (const Var& param : function->params()) children.push_back(param);
    children.push_back(function->body());
  } else if (expr->IsInstance<IfObj>()) {
    const auto* node = static_cast<const IfObj*>(expr.get());
    children = {node->cond(), node->then_branch(), node->else_branch()};
  } else if (expr->IsInstance<LoopObj>()) {
    const auto* loop = static_cast<const LoopObj*>(expr.get());
    children = {loop->trip_count(), loop->condition()};
    children.insert(children.end(), loop->initial().begin(), loop->initial().end());
    children.push_back(loop->body());
  }
  return children;
}

/// Runs `finish` on every node reachable from `root` for which `done` is false, children first.
/// A frame is expanded (its children pushed) on first sight and finished on second, so the
/// depth of the graph costs heap, not stack.
template <typename Done, typename Finish>
void WalkPostOrder(const Expr& root, const Done& done, const Finish& finish) {
  std::vector<std::pair<Expr, bool>> stack;
  if (!done(root)) stack.emplace_back(root, false);
  while (!stack.empty()) {
    if (stack.back().second) {
      const Expr node = std::move(stack.back().first);
      stack.pop_back();
      if (!done(node)) finish(node);  // a node shared by two pending parents is pushed twice
      continue;
    }
    stack.back().second = true;
    const std::vector<Expr> children = Children(stack.back().first);
    // Pushed in reverse so that siblings finish left to right.
    for (auto it = children.rbegin(); it != children.rend(); ++it) {
      if (!done(*it)) stack.emplace_back(*it, false);
    }
  }
}

/// A control-flow body as rewritten: a mutator may change what it computes, not replace it with
/// something that is not a function.
Function AsBody(const Expr& rewritten, const char* what) {
  KILN_CHECK(rewritten->IsInstance<FunctionObj>(), TypeError)
      << "ExprMutator: " << what << " was rewritten to a " << rewritten->GetTypeKey()
      << ", expected a kiln.ir.Function";
  return Downcast<Function>(rewritten);
}

}  // namespace

// ----------------------------------------------------------------------------------------------
// ExprVisitor
// ----------------------------------------------------------------------------------------------

ExprVisitor::~ExprVisitor() = default;

void ExprVisitor::VisitExpr(const Expr& expr) {
  WalkPostOrder(
      expr, [this](const Expr& node) { return visited_.count(node) > 0; },
      [this](const Expr& node) {
        visited_.insert(node);
        Dispatch(node);
      });
}

void ExprVisitor::Dispatch(const Expr& expr) {
  const Object* node = expr.get();
  if (node->IsInstance<VarObj>()) {
    VisitVar(Downcast<Var>(expr));
  } else if (node->IsInstance<ConstantObj>()) {
    VisitConstant(Downcast<Constant>(expr));
  } else if (node->IsInstance<CallObj>()) {
    VisitCall(Downcast<Call>(expr));
  } else if (node->IsInstance<TupleObj>()) {
    VisitTuple(Downcast<Tuple>(expr));
  } else if (node->IsInstance<TupleGetItemObj>()) {
    VisitTupleGetItem(Downcast<TupleGetItem>(expr));
  } else if (node->IsInstance<FunctionObj>()) {
    VisitFunction(Downcast<Function>(expr));
  } else if (node->IsInstance<GlobalVarObj>()) {
    VisitGlobalVar(Downcast<GlobalVar>(expr));
  } else if (node->IsInstance<OpObj>()) {
    VisitOp(Downcast<Op>(expr));
  } else if (node->IsInstance<IfObj>()) {
    VisitIf(Downcast<If>(expr));
  } else if (node->IsInstance<LoopObj>()) {
    VisitLoop(Downcast<Loop>(expr));
  } else {
    KILN_THROW(TypeError) << "ExprVisitor: unsupported expression " << node->GetTypeKey();
  }
}

void ExprVisitor::VisitVar(const Var&) {}
void ExprVisitor::VisitConstant(const Constant&) {}
void ExprVisitor::VisitCall(const Call&) {}
void ExprVisitor::VisitTuple(const Tuple&) {}
void ExprVisitor::VisitTupleGetItem(const TupleGetItem&) {}
void ExprVisitor::VisitFunction(const Function&) {}
void ExprVisitor::VisitGlobalVar(const GlobalVar&) {}
void ExprVisitor::VisitOp(const Op&) {}
void ExprVisitor::VisitIf(const If&) {}
void ExprVisitor::VisitLoop(const Loop&) {}

// ----------------------------------------------------------------------------------------------
// ExprMutator
// ----------------------------------------------------------------------------------------------

ExprMutator::~ExprMutator() = default;

Expr ExprMutator::Mutate(const Expr& expr) {
  WalkPostOrder(
      expr, [this](const Expr& node) { return memo_.count(node) > 0; },
      [this](const Expr& node) { memo_.emplace(node, Rewrite(node)); });
  return memo_.at(expr);
}

const Expr& ExprMutator::Rewritten(const Expr& child) const { return memo_.at(child); }

Expr ExprMutator::Rewrite(const Expr& expr) {
  const Object* node = expr.get();
  if (node->IsInstance<VarObj>()) return VisitVar(Downcast<Var>(expr));
  if (node->IsInstance<ConstantObj>()) return VisitConstant(Downcast<Constant>(expr));
  if (node->IsInstance<GlobalVarObj>()) return VisitGlobalVar(Downcast<GlobalVar>(expr));
  if (node->IsInstance<OpObj>()) return VisitOp(Downcast<Op>(expr));
  const Expr post = Rebuild(expr);
  if (node->IsInstance<CallObj>()) return VisitCall(Downcast<Call>(expr), Downcast<Call>(post));
  if (node->IsInstance<TupleObj>()) return VisitTuple(Downcast<Tuple>(expr), Downcast<Tuple>(post));
  if (node->IsInstance<TupleGetItemObj>()) {
    return VisitTupleGetItem(Downcast<TupleGetItem>(expr), Downcast<TupleGetItem>(post));
  }
  if (node->IsInstance<IfObj>()) return VisitIf(Downcast<If>(expr), Downcast<If>(post));
  if (node->IsInstance<LoopObj>()) return VisitLoop(Downcast<Loop>(expr), Downcast<Loop>(post));
  return VisitFunction(Downcast<Function>(expr), Downcast<Function>(post));
}

Expr ExprMutator::Rebuild(const Expr& expr) {
  const std::vector<Expr> children = Children(expr);
  std::vector<Expr> rewritten;
  bool changed = false;
  for (const Expr& child : children) {
    rewritten.push_back(Rewritten(child));
    changed = changed || !rewritten.back().same_as(child);
  }
  if (!changed) return expr;  // sharing and checked types survive untouched subgraphs
  const Object* node = expr.get();
  if (node->IsInstance<CallObj>()) {
    return Call(rewritten[0], Array<Expr>(rewritten.begin() + 1, rewritten.end()),
                static_cast<const CallObj*>(node)->attrs());
  }
  if (node->IsInstance<TupleObj>()) return Tuple(Array<Expr>(rewritten));
  if (node->IsInstance<TupleGetItemObj>()) {
    return TupleGetItem(rewritten[0], static_cast<const TupleGetItemObj*>(node)->index());
  }
  if (node->IsInstance<IfObj>()) {
    return If(rewritten[0], AsBody(rewritten[1], "the then branch of an If"),
              AsBody(rewritten[2], "the else branch of an If"),
              static_cast<const IfObj*>(node)->sizes());
  }
  if (node->IsInstance<LoopObj>()) {
    return Loop(rewritten[0], rewritten[1], Array<Expr>(rewritten.begin() + 2, rewritten.end() - 1),
                AsBody(rewritten.back(), "the body of a Loop"),
                static_cast<const LoopObj*>(node)->iterations());
  }
  KILN_CHECK(node->IsInstance<FunctionObj>(), TypeError)
      << "ExprMutator: unsupported expression " << node->GetTypeKey();
  const auto* function = static_cast<const FunctionObj*>(node);
  Array<Var> params;
  for (size_t i = 0; i + 1 < rewritten.size(); ++i) {
    KILN_CHECK(rewritten[i]->IsInstance<VarObj>(), TypeError)
        << "ExprMutator: parameter " << i << " of a function was rewritten to a "
        << rewritten[i]->GetTypeKey() << ", expected a kiln.ir.Var";
    params.push_back(Downcast<Var>(rewritten[i]));
  }
  return Function(params, rewritten.back(), function->ret_type(), function->attrs());
}

Expr ExprMutator::VisitVar(const Var& var) { return var; }
Expr ExprMutator::VisitConstant(const Constant& constant) { return constant; }
Expr ExprMutator::VisitCall(const Call&, const Call& post) { return post; }
Expr ExprMutator::VisitTuple(const Tuple&, const Tuple& post) { return post; }
Expr ExprMutator::VisitTupleGetItem(const TupleGetItem&, const TupleGetItem& post) { return post; }
Expr ExprMutator::VisitFunction(const Function&, const Function& post) { return post; }
Expr ExprMutator::VisitGlobalVar(const GlobalVar& gvar) { return gvar; }
Expr ExprMutator::VisitOp(const Op& op) { return op; }
Expr ExprMutator::VisitIf(const If&, const If& post) { return post; }
Expr ExprMutator::VisitLoop(const Loop&, const Loop& post) { return post; }

// ----------------------------------------------------------------------------------------------
// PostOrderVisit
// ----------------------------------------------------------------------------------------------

void PostOrderVisit(const Expr& expr, const std::function<void(const Expr&)>& fn) {
  std::unordered_set<Expr, ObjectRefIdentityHash> visited;
  WalkPostOrder(
      expr, [&visited](const Expr& node) { return visited.count(node) > 0; },
      [&](const Expr& node) {
        visited.insert(node);
        fn(node);
      });
}

std::vector<Expr> DataflowPostOrder(const Expr& expr, const ExtraOperands& extra) {
  auto operands_of = [&extra](const Expr& node) {
    std::vector<Expr> operands;
    if (const auto* call = node.as<CallObj>()) {
      operands.assign(call->args().begin(), call->args().end());
    } else if (const auto* tuple = node.as<TupleObj>()) {
      operands.assign(tuple->fields().begin(), tuple->fields().end());
    } else if (const auto* item = node.as<TupleGetItemObj>()) {
      operands.push_back(item->tuple());
    } else {
      operands = OuterOperands(node);
    }
    if (extra) {
      for (Expr& operand : extra(node)) operands.push_back(std::move(operand));
    }
    return operands;
  };
  std::vector<Expr> order;
  std::unordered_set<const Object*> done;
  std::unordered_set<const Object*> entered;  // on the current path, not yet done
  std::vector<std::pair<Expr, bool>> stack{{expr, false}};
  while (!stack.empty()) {
    const Expr node = std::move(stack.back().first);
    const bool expanded = stack.back().second;
    stack.pop_back();
    if (done.count(node.get()) != 0) continue;
    if (expanded) {
      done.insert(node.get());
      entered.erase(node.get());
      order.push_back(node);
      continue;
    }
    if (!entered.insert(node.get()).second) continue;
    stack.emplace_back(node, true);
    for (const Expr& operand : operands_of(node)) {
      if (done.count(operand.get()) == 0) stack.emplace_back(operand, false);
    }
  }
  return order;
}

namespace {

class VarSubstituter : public ExprMutator {
 public:
  explicit VarSubstituter(const std::unordered_map<const Object*, Expr>& values)
      : values_(values) {}

 protected:
  Expr VisitVar(const Var& var) override {
    auto it = values_.find(var.get());
    return it == values_.end() ? Expr(var) : it->second;
  }

 private:
  const std::unordered_map<const Object*, Expr>& values_;
};

}  // namespace

Expr SubstituteVars(const Expr& expr, const std::unordered_map<const Object*, Expr>& values) {
  return VarSubstituter(values).Mutate(expr);
}

}  // namespace ir
}  // namespace kiln
