// If and Loop: construction, validation and iterative release.
#include <kiln/ir/control_flow.h>

#include "validate_internal.h"

namespace kiln {
namespace ir {

IfObj::~IfObj() {
  detail::ReleaseIteratively(std::move(cond_));
  detail::ReleaseIteratively(std::move(then_branch_));
  detail::ReleaseIteratively(std::move(else_branch_));
}

If::If(Expr cond, Function then_branch, Function else_branch, Array<arith::SizeExpr> sizes) {
  KILN_CHECK(cond.defined(), ValueError) << "If: the condition is null";
  KILN_CHECK(then_branch.defined() && else_branch.defined(), ValueError) << "If: a branch is null";
  KILN_CHECK(then_branch->params().empty() && else_branch->params().empty(), ValueError)
      << "If: a branch takes no parameters (it reads outer values directly), but the "
      << (then_branch->params().empty() ? "else" : "then") << " branch takes "
      << (then_branch->params().empty() ? else_branch : then_branch)->params().size();
  CheckNoNullElement(sizes, "If", "size");
  data_ = make_object<IfObj>(std::move(cond), std::move(then_branch), std::move(else_branch),
                             std::move(sizes));
}

LoopObj::~LoopObj() {
  detail::ReleaseIteratively(std::move(trip_count_));
  detail::ReleaseIteratively(std::move(condition_));
  detail::ReleaseIteratively(std::move(initial_));
  detail::ReleaseIteratively(std::move(body_));
}

int64_t LoopObj::num_scan_outputs() const {
  Type ret = body_->ret_type();
  if (!ret.defined()) {
    const auto* func_type = body_->checked_type().as<FuncTypeObj>();
    if (func_type == nullptr) return -1;
    ret = func_type->ret();
  }
  const auto* tuple = ret.as<TupleTypeObj>();
  if (tuple == nullptr) return -1;
  return tuple->fields().size() - 1 - initial_.size();
}

Loop::Loop(Expr trip_count, Expr condition, Array<Expr> initial, Function body,
           arith::SizeExpr iterations) {
  KILN_CHECK(trip_count.defined(), ValueError) << "Loop: the trip count is null";
  KILN_CHECK(condition.defined(), ValueError) << "Loop: the condition is null";
  KILN_CHECK(body.defined(), ValueError) << "Loop: the body is null";
  KILN_CHECK(iterations.defined(), ValueError) << "Loop: the iteration count is null";
  CheckNoNullElement(initial, "Loop", "initial value");
  KILN_CHECK(body->params().size() == initial.size() + 2, ValueError)
      << "Loop: the body must take the iteration, the condition and the " << initial.size()
      << " carried values (" << initial.size() + 2 << " parameters), but it takes "
      << body->params().size();
  data_ = make_object<LoopObj>(std::move(trip_count), std::move(condition), std::move(initial),
                               std::move(body), std::move(iterations));
}

std::vector<Expr> OuterOperands(const Expr& node) {
  if (const auto* branch = node.as<IfObj>()) return {branch->cond()};
  const auto* loop = node.as<LoopObj>();
  if (loop == nullptr) return {};
  std::vector<Expr> operands{loop->trip_count(), loop->condition()};
  operands.insert(operands.end(), loop->initial().begin(), loop->initial().end());
  return operands;
}

}  // namespace ir
}  // namespace kiln
