// The loop-level pass `unroll` (the global "tir.pass.unroll"): each loop of kind `unrolled` whose
// extent is a constant of at most kMaxUnrolledIterations becomes its iterations in sequence, the
// variable replaced by each value and the copies simplified (so `a[i * 4 + 1]` of iteration 2 is
// `a[9]`). Other `unrolled` loops stay loops, which the C target hands to the compiler with
// `#pragma GCC unroll`.
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>

#include <optional>
#include <string>
#include <vector>

#include "simplify.h"

namespace kiln {
namespace tir {
namespace {

/// Beyond this, copies of the body cost more in code size and compile time than the loop does.
constexpr int64_t kMaxUnrolledIterations = 64;

std::optional<Node> Unroll(const Node& loop) {
  if (loop.field_as<String>("kind").str() != "unrolled") return std::nullopt;
  const std::optional<int64_t> extent = loop.field_as<arith::SizeExpr>("extent").as_int();
  if (!extent.has_value() || *extent > kMaxUnrolledIterations) return std::nullopt;
  const std::string var = loop.field_as<String>("var").str();
  const auto body = loop.field_as<Node>("body");
  std::vector<Node> iterations;
  for (int64_t i = 0; i < *extent; ++i) {
    iterations.push_back(SubstituteIndices(body, {{var, arith::IntImm(i)}}));
  }
  return Seq(iterations);
}

Node UnrollLoops(const Node& func) {
  return Simplify(Mutate(func, [](const Node& node) -> std::optional<Node> {
    return node.is("for") ? Unroll(node) : std::nullopt;
  }));
}

}  // namespace

KILN_REGISTER_GLOBAL("tir.pass.unroll").set_body_typed(UnrollLoops);

}  // namespace tir
}  // namespace kiln
