// Private to the schedule primitives (schedule.cc: loops; schedule_stages.cc: stages): finding
// loops by variable and replacing them, with errors that name the function and the primitive.
#ifndef KILN_SRC_TIR_SCHEDULE_INTERNAL_H_
#define KILN_SRC_TIR_SCHEDULE_INTERNAL_H_

#include <kiln/tir/node.h>

#include <string>

namespace kiln {
namespace tir {
namespace internal {

/// The function's name; a ValueError when `func` is not a prim_func.
std::string FuncName(const Node& func);
std::string LoopVar(const Node& loop);
/// The loop of variable `var` in `func`; a ValueError listing its loops when there is none.
Node FindLoop(const Node& func, const std::string& var, const std::string& primitive);
/// ValueError when `name` is already a loop variable of `func`.
void CheckNewName(const Node& func, const std::string& name, const std::string& primitive);
/// `func` with `loop` (found by identity) replaced by `replacement`.
Node Replace(const Node& func, const Node& loop, const Node& replacement);
/// The loop `inner`, which must be the whole body of loop `outer`.
Node DirectlyInside(const Node& func, const Node& outer, const std::string& inner,
                    const std::string& primitive);

}  // namespace internal
}  // namespace tir
}  // namespace kiln

#endif  // KILN_SRC_TIR_SCHEDULE_INTERNAL_H_
