/// ExprVisitor, ExprMutator and PostOrderVisit: walks over the data flow of an expression.
///
/// Graphs of 100,000 chained nodes are common after import, so no walk recurses along the data
/// flow. Each keeps an explicit stack and runs post-order: every child (Call: op then args;
/// Tuple: fields; TupleGetItem: tuple; Function: params then body; If: condition, then and else
/// branches; Loop: trip count, condition, initial values, body) is finished before its parent. A
/// subclass customises the walk by overriding the per-node hooks below; the hooks are called by the
/// driver, never call each other, and must not start a nested walk of their own children (the
/// driver already did it). Each node is handled once per visitor or mutator, even when it is shared
/// by several parents (a DAG), and the memo persists across calls on the same instance.
#ifndef KILN_IR_EXPR_FUNCTOR_H_
#define KILN_IR_EXPR_FUNCTOR_H_

#include <kiln/ir/control_flow.h>
#include <kiln/ir/function.h>
#include <kiln/ir/op.h>

#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace kiln {
namespace ir {

/// Hashes an ObjectRef by identity, for memo tables that also keep the node alive.
struct ObjectRefIdentityHash {
  size_t operator()(const ObjectRef& ref) const { return std::hash<const Object*>()(ref.get()); }
};

/// Read-only post-order walk. Override the Visit* hooks for the node kinds of interest; each is
/// called once per distinct node, after the hooks of all its children. Not thread-safe.
class KILN_API ExprVisitor {
 public:
  virtual ~ExprVisitor();
  /// Visits every node reachable from `expr` that this visitor has not visited yet.
  void VisitExpr(const Expr& expr);

 protected:
  virtual void VisitVar(const Var& var);
  virtual void VisitConstant(const Constant& constant);
  virtual void VisitCall(const Call& call);
  virtual void VisitTuple(const Tuple& tuple);
  virtual void VisitTupleGetItem(const TupleGetItem& item);
  virtual void VisitFunction(const Function& function);
  virtual void VisitGlobalVar(const GlobalVar& gvar);
  virtual void VisitOp(const Op& op);
  virtual void VisitIf(const If& node);
  virtual void VisitLoop(const Loop& loop);

 private:
  void Dispatch(const Expr& expr);
  std::unordered_set<Expr, ObjectRefIdentityHash> visited_;
};

/// Post-order rewrite that preserves sharing. For each distinct node the driver first rewrites
/// its children, then builds `post`: the node itself when no child changed (so an untouched
/// graph comes back as the same object, checked types included), otherwise a copy with the new
/// children. The hook for the node's kind receives the original (`pre`, still carrying its
/// checked type) and `post`, and returns the replacement; the defaults return `post`. A node
/// shared by several parents is rewritten once and the result is shared the same way.
/// Not thread-safe.
class KILN_API ExprMutator {
 public:
  virtual ~ExprMutator();
  /// The rewritten `expr`.
  Expr Mutate(const Expr& expr);

 protected:
  virtual Expr VisitVar(const Var& var);
  virtual Expr VisitConstant(const Constant& constant);
  virtual Expr VisitCall(const Call& pre, const Call& post);
  virtual Expr VisitTuple(const Tuple& pre, const Tuple& post);
  virtual Expr VisitTupleGetItem(const TupleGetItem& pre, const TupleGetItem& post);
  /// TypeError when a parameter was rewritten to something other than a Var.
  virtual Expr VisitFunction(const Function& pre, const Function& post);
  virtual Expr VisitGlobalVar(const GlobalVar& gvar);
  virtual Expr VisitOp(const Op& op);
  virtual Expr VisitIf(const If& pre, const If& post);
  virtual Expr VisitLoop(const Loop& pre, const Loop& post);

 private:
  Expr Rewrite(const Expr& expr);
  Expr Rebuild(const Expr& expr);
  const Expr& Rewritten(const Expr& child) const;
  std::unordered_map<Expr, Expr, ObjectRefIdentityHash> memo_;
};

/// Calls `fn` once on every node reachable from `expr`, children before parents.
KILN_API void PostOrderVisit(const Expr& expr, const std::function<void(const Expr&)>& fn);

/// More operands of a node that a walk must finish before it (DataflowPostOrder).
using ExtraOperands = std::function<std::vector<Expr>(const Expr&)>;

/// The nodes that `expr`'s function computes to produce it, children before parents, each once:
/// a call's arguments, a tuple's fields, a field's tuple, an If's or a Loop's OuterOperands,
/// but not callees or bodies, which are other functions. `extra` adds operands of a node; one
/// that would close a cycle (it depends on the node waiting for it) is left out.
KILN_API std::vector<Expr> DataflowPostOrder(const Expr& expr,
                                             const ExtraOperands& extra = nullptr);

/// `expr` with the variables in `values` (keyed by their object) replaced: a function's
/// parameters by a call's arguments, or by constants.
KILN_API Expr SubstituteVars(const Expr& expr,
                             const std::unordered_map<const Object*, Expr>& values);

}  // namespace ir
}  // namespace kiln

#endif  // KILN_IR_EXPR_FUNCTOR_H_
