/// Control flow in the graph IR: If and Loop (docs/design.md §32).
///
/// Their bodies are Functions. A body reads outer values directly, as any nested function may
/// (a free reference to an expression of the enclosing function); a node reachable from the
/// enclosing function only through a body belongs to that body and runs only when the body
/// runs. ONNX's Scan imports as a Loop, so these two kinds are all there is.
///
///   If(cond, then_branch, else_branch, sizes)
///       the value of then_branch() when cond holds, else of else_branch(); both take no
///       parameters. Where the branches' types disagree in an extent (ONNX allows it: one branch
///       may return an empty tensor), the If's type has the next size variable of `sizes`
///       there, a size the run defines (docs/design.md §22).
///   Loop(trip_count, condition, initial, body, iterations)
///       carried = initial; i = 0
///       while i < trip_count and condition:
///         (condition, carried..., scanned...) = body(i, condition, carried...)
///         append each scanned value to its scan output; i += 1
///     Its value is the tuple (carried..., scan outputs...), each scan output its values
///     stacked along a new leading axis of extent `iterations`: a size expression, the trip
///     count when the loop cannot stop early, else a size variable of its own that the run
///     defines (as a data-dependent size, docs/design.md §22). ONNX's "no trip count" is the
///     largest int64 and its "no condition" is true.
#ifndef KILN_IR_CONTROL_FLOW_H_
#define KILN_IR_CONTROL_FLOW_H_

#include <kiln/arith/size_expr.h>
#include <kiln/ir/function.h>

#include <vector>

namespace kiln {
namespace ir {

class IfObj : public ExprObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.If";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(IfObj, ExprObj);

  IfObj(Expr cond, Function then_branch, Function else_branch, Array<arith::SizeExpr> sizes)
      : cond_(std::move(cond)),
        then_branch_(std::move(then_branch)),
        else_branch_(std::move(else_branch)),
        sizes_(std::move(sizes)) {}
  KILN_API ~IfObj();
  /// A boolean tensor of one element.
  const Expr& cond() const { return cond_; }
  const Function& then_branch() const { return then_branch_; }
  const Function& else_branch() const { return else_branch_; }
  /// The extents of the result where the branches disagree, in order; usually empty.
  const Array<arith::SizeExpr>& sizes() const { return sizes_; }

 private:
  Expr cond_;
  Function then_branch_;
  Function else_branch_;
  Array<arith::SizeExpr> sizes_;
};

class If : public Expr {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(If, Expr, IfObj);
  /// ValueError when an argument is null or a branch has parameters.
  KILN_API If(Expr cond, Function then_branch, Function else_branch,
              Array<arith::SizeExpr> sizes = Array<arith::SizeExpr>());
};

class LoopObj : public ExprObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.Loop";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(LoopObj, ExprObj);

  LoopObj(Expr trip_count, Expr condition, Array<Expr> initial, Function body,
          arith::SizeExpr iterations)
      : trip_count_(std::move(trip_count)),
        condition_(std::move(condition)),
        initial_(std::move(initial)),
        body_(std::move(body)),
        iterations_(std::move(iterations)) {}
  KILN_API ~LoopObj();
  /// An int64 tensor of one element: the most iterations.
  const Expr& trip_count() const { return trip_count_; }
  /// A boolean tensor of one element: whether the first iteration runs.
  const Expr& condition() const { return condition_; }
  /// The carried values before the first iteration.
  const Array<Expr>& initial() const { return initial_; }
  /// (iteration, condition, carried...) -> (condition, carried..., scanned...). A carried
  /// parameter may be annotated more generally than its initial value (a size variable where
  /// the value's extent changes between iterations): the loop's result then has that type,
  /// its extents the run's.
  const Function& body() const { return body_; }
  /// How many iterations run: the leading extent of every scan output.
  const arith::SizeExpr& iterations() const { return iterations_; }
  /// How many values the body returns besides the condition and the carried ones; -1 until the
  /// body's result type is known (annotated or inferred).
  KILN_API int64_t num_scan_outputs() const;

 private:
  Expr trip_count_;
  Expr condition_;
  Array<Expr> initial_;
  Function body_;
  arith::SizeExpr iterations_;
};

class Loop : public Expr {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Loop, Expr, LoopObj);
  /// ValueError when an argument is null or the body does not take 2 + initial.size()
  /// parameters.
  KILN_API Loop(Expr trip_count, Expr condition, Array<Expr> initial, Function body,
                arith::SizeExpr iterations);
};

/// The operands of an If or a Loop that are computed where the node is, not in its bodies: an
/// If's condition; a Loop's trip count, condition and initial values. Empty for other kinds.
KILN_API std::vector<Expr> OuterOperands(const Expr& node);

}  // namespace ir
}  // namespace kiln

#endif  // KILN_IR_CONTROL_FLOW_H_
