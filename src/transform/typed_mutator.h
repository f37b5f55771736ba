// A mutator whose every result carries a checked type, for passes whose rewrite rules read
// the types of the (already rewritten) operands.
#ifndef KILN_SRC_TRANSFORM_TYPED_MUTATOR_H_
#define KILN_SRC_TRANSFORM_TYPED_MUTATOR_H_

#include <kiln/ir/expr_functor.h>
#include <kiln/transform/infer_type.h>

namespace kiln {
namespace transform {

/// Types the input once (InferExprType), then types each rebuilt node from its operands as the
/// walk goes (InferNodeType), so a subclass's VisitCall may read `post`'s and its arguments'
/// checked types. Subclasses override RewriteCall instead of VisitCall.
class TypedMutator : public ir::ExprMutator {
 public:
  explicit TypedMutator(ir::IRModule mod) : mod_(std::move(mod)) {}

  /// `func` rewritten (the same object when nothing changed), with its result type kept.
  ir::Function RewriteFunction(const ir::Function& func) {
    InferExprType(func, mod_);
    const ir::Expr body = Mutate(func->body());
    if (body.same_as(func->body())) return func;
    return ir::Function(func->params(), body, func->ret_type(), func->attrs());
  }

 protected:
  /// The replacement of `call` (typed, operands rewritten and typed); `pre` is the node of the
  /// input it was rebuilt from, for facts about the input graph such as use counts.
  virtual ir::Expr RewriteCall(const ir::Call& pre, const ir::Call& call) = 0;
  /// The replacement of `item` (typed, operands rewritten and typed).
  virtual ir::Expr RewriteTupleGetItem(const ir::TupleGetItem& item) { return item; }
  /// The replacement of `node` (typed, its condition and branches rewritten and typed).
  virtual ir::Expr RewriteIf(const ir::If& node) { return node; }

  /// `expr` with its checked type (set from its typed operands when missing).
  ir::Expr Typed(ir::Expr expr) const {
    if (!expr->checked_type().defined()) InferNodeType(expr, mod_);
    return expr;
  }

  const ir::IRModule& mod() const { return mod_; }

 private:
  ir::Expr VisitCall(const ir::Call& pre, const ir::Call& post) final {
    return Typed(RewriteCall(pre, Downcast<ir::Call>(Typed(post))));
  }
  ir::Expr VisitTuple(const ir::Tuple& /*pre*/, const ir::Tuple& post) final { return Typed(post); }
  ir::Expr VisitTupleGetItem(const ir::TupleGetItem& /*pre*/, const ir::TupleGetItem& post) final {
    return Typed(RewriteTupleGetItem(Downcast<ir::TupleGetItem>(Typed(post))));
  }
  ir::Expr VisitIf(const ir::If& /*pre*/, const ir::If& post) final {
    return Typed(RewriteIf(Downcast<ir::If>(Typed(post))));
  }

  ir::IRModule mod_;
};

}  // namespace transform
}  // namespace kiln

#endif  // KILN_SRC_TRANSFORM_TYPED_MUTATOR_H_
