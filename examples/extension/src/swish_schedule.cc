// The schedule of the fused groups that hold my_ext.swish (kiln/tir/lower.h): a group's
// schedule is the global `tir.schedule.for_op.<op>` of one of its ops, else Kiln's default for
// its pattern. This one keeps the default (the outermost loop parallel) and splits each
// innermost loop into vectors of 8, whose tail loop_partition moves out of the loop.
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>
#include <kiln/tir/lower.h>
#include <kiln/tir/passes.h>
#include <kiln/tir/schedule.h>

#include <string>
#include <vector>

namespace my_ext {
namespace {

namespace tir = kiln::tir;

/// The variables of the loops that hold no other loop.
std::vector<std::string> InnermostLoops(const tir::Node& func) {
  std::vector<std::string> innermost;
  tir::Visit(func, [&](const tir::Node& node) {
    if (!node.is("for")) return true;
    bool nested = false;
    tir::Visit(node.field_as<tir::Node>("body"), [&](const tir::Node& inner) {
      nested = nested || inner.is("for");
      return !nested;
    });
    if (!nested) innermost.push_back(node.field_as<kiln::String>("var").str());
    return true;
  });
  return innermost;
}

tir::Node VectorizeBy8(const tir::Node& func) {
  tir::Node scheduled = tir::DefaultSchedule(func);
  int count = 0;
  for (const std::string& loop : InnermostLoops(scheduled)) {
    const std::string outer = "swish_o" + std::to_string(count);
    const std::string inner = "swish_v" + std::to_string(count++);
    scheduled = tir::Vectorize(tir::Split(scheduled, loop, 8, outer, inner), inner);
  }
  return tir::RunPasses(scheduled, "loop_partition");
}

KILN_REGISTER_GLOBAL("tir.schedule.for_op.my_ext.swish").set_body_typed(VectorizeBy8);

}  // namespace
}  // namespace my_ext
