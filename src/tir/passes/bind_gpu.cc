// The loop-level pass `bind_gpu` (global "tir.pass.bind_gpu"): the default GPU schedule for a
// generated function. Each outermost loop nest (its directly nested loops) is fused into one
// loop, split into blocks of kThreadsPerBlock threads, and bound to block_x and thread_x, so
// that each thread computes one output element; what lies below the nest (a reduction's loops)
// runs in that thread. Run it before GenerateCuda.
#include <kiln/ffi/registry.h>
#include <kiln/tir/schedule.h>

#include <string>
#include <vector>

namespace kiln {
namespace tir {
namespace {

constexpr int64_t kThreadsPerBlock = 256;

std::string LoopVar(const Node& loop) { return loop.field_as<String>("var").str(); }

/// The variables of the outermost loops of `func`, each with the loops directly nested in it.
std::vector<std::vector<std::string>> OutermostNests(const Node& func) {
  std::vector<std::vector<std::string>> nests;
  Visit(func, [&](const Node& node) {
    if (!node.is("for")) return true;
    std::vector<std::string> nest{LoopVar(node)};
    for (Node body = node.field_as<Node>("body"); body.is("for");
         body = body.field_as<Node>("body")) {
      nest.push_back(LoopVar(body));
    }
    nests.push_back(nest);
    return false;
  });
  return nests;
}

Node BindGpu(const Node& func) {
  Node result = func;
  for (const std::vector<std::string>& nest : OutermostNests(func)) {
    std::string fused = nest[0];
    for (size_t i = 1; i < nest.size(); ++i) {
      const std::string name = fused + "_" + nest[i];
      result = Fuse(result, fused, nest[i], name);
      fused = name;
    }
    result = Split(result, fused, kThreadsPerBlock, fused + "_block", fused + "_thread");
    result = Bind(result, fused + "_block", "block_x");
    result = Bind(result, fused + "_thread", "thread_x");
  }
  return result;
}

KILN_REGISTER_GLOBAL("tir.pass.bind_gpu").set_body_typed(BindGpu);

}  // namespace
}  // namespace tir
}  // namespace kiln
