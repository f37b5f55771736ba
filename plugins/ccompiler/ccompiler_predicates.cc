// The op predicates `target.ccompiler` (design §17): AnnotateTarget asks them which calls this
// plugin takes. A predicate returns true, or a string that says why not; the placement report
// prints it.
#include <kiln/ir/op.h>
#include <kiln/transform/byoc.h>

#include <string>

#include "ccompiler_ops.h"

namespace kiln {
namespace ccompiler {
namespace {

/// true when every argument and the result are float32 tensors of static shapes; the loops
/// broadcast operands as numpy does, so any shapes the type relation accepted will do.
Any TakesCall(const ir::Call& call) {
  std::string reason;
  for (int64_t i = 0; i < call->args().size(); ++i) {
    const std::string what = "argument " + std::to_string(i);
    if (!transform::StaticFloat32Shape(call->args()[i]->checked_type(), what, &reason))
      return String(reason);
  }
  if (!transform::StaticFloat32Shape(call->checked_type(), "the result", &reason))
    return String(reason);
  return true;
}

/// Sets `target.ccompiler` on every op of the table; each registration runs once the host has
/// accepted the plugin.
[[maybe_unused]] const bool kPredicatesRegistered = [] {
  for (const COp& op : SupportedOps()) {
    ir::OpRegisterer::Extend(op.op).set_attr("target.ccompiler",
                                             Function::FromTyped(TakesCall, "target.ccompiler"));
  }
  return true;
}();

}  // namespace
}  // namespace ccompiler
}  // namespace kiln
