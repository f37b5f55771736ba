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
#include <kiln/tir/node.h>

#include <string>
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
};

/// Lowers the call of the fused function `func` with `args` (constants among them are bound)
/// to a prim_func named `name`. Declines what it cannot lower (LoweredGroup::declined); throws
/// only for a compute rule that is wrong (reads out of bounds, returns a mistyped value).
KILN_API LoweredGroup LowerFusedGroup(const ir::Function& func, const Array<ir::Expr>& args,
                                      const std::string& name);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_TIR_LOWER_H_
