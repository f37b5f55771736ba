/// From the graph IR to the loop IR: a fused group (FuseOps' primitive function) whose ops all
/// have compute rules (kiln/tir/compute.h) becomes one prim_func, one loop nest per output with
/// the intermediates inlined as values, not written to temporaries (docs/design.md §24).
///
/// A reduction whose result other ops of the group read is computed first into a buffer of its
/// own (allocated in the function); reductions are loops over an accumulator. Every load of the
/// result is checked against its buffer's extents: an access the analyzer proves out of bounds
/// (a wrong compute rule) is a ValueError naming the op; one it cannot prove in bounds declines.
#ifndef KILN_TIR_LOWER_H_
#define KILN_TIR_LOWER_H_

#include <kiln/ir/function.h>
#include <kiln/ir/op.h>
#include <kiln/tir/node.h>

#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace tir {

/// A fused group as a prim_func, or why it stays with the kernels.
struct LoweredGroup {
  /// The prim_func: one buffer per argument in `arguments`, then one per output. Null when the
  /// group is declined.
  Node func;
  /// The call's arguments the function takes, by position: scalar constants are inlined.
  std::vector<size_t> arguments;
  /// Why the group was declined (an op without a compute rule, a dtype, ...); empty otherwise.
  std::string declined;
  /// The global function that scheduled it (ScheduleGroup): "tir.schedule.default.elemwise".
  std::string schedule;
};

/// The lowering's loops are serial; a group's schedule makes them fast. `ops` are the group's
/// ops, its anchor first (the lowering orders them by pattern, highest first, then later ops
/// first). The schedule is the global function `tir.schedule.for_op.<op>` of the first of them
/// that has one, else `tir.schedule.default.<pattern>` of the anchor's pattern (elemwise,
/// broadcast, injective, reduce), each prim_func -> prim_func. Kiln registers the defaults
/// (DefaultSchedule, for every pattern); a plugin schedules the groups holding its op by
/// registering `tir.schedule.for_op.<its op>`, and a plugin or Python (`override=True`) may
/// replace a default. Returns the scheduled function and the schedule's name. A schedule that
/// fails or returns something else than a prim_func is an error naming it.
KILN_API std::pair<Node, std::string> ScheduleGroup(const Node& func,
                                                    const std::vector<ir::Op>& ops);

/// Kiln's default schedule: in each loop nest of the function's body, the outermost loop of
/// more than one iteration runs in parallel (Kiln's thread pool, in the C target).
KILN_API Node DefaultSchedule(const Node& func);

/// Lowers the call of the fused function `func` with `args` (constants among them are bound)
/// to a prim_func named `name`. Declines what it cannot lower (LoweredGroup::declined); throws
/// only for a compute rule that is wrong (reads out of bounds, returns a mistyped value).
KILN_API LoweredGroup LowerFusedGroup(const ir::Function& func, const Array<ir::Expr>& args,
                                      const std::string& name);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_TIR_LOWER_H_
