// my_ext.unroll_short_loops: a loop-level pass over the tensor-level IR (kiln/tir), the kind of
// pass a project adds for its hardware: every serial loop of at most four iterations is marked
// "unrolled", which the C code generator hands to the compiler as `#pragma GCC unroll`.
//
// A loop-level pass is the global function `tir.pass.<name>`, prim_func -> prim_func; Kiln runs
// it by name (kiln.build(..., tir_passes="my_ext.unroll_short_loops"), tir.RunPasses), and
// Python passes (@kiln.tir.prim_func_pass) compose with it in the same list.
#include <kiln/ffi/registry.h>
#include <kiln/tir/node.h>

#include <optional>

namespace my_ext {
namespace {

namespace tir = kiln::tir;

constexpr int64_t kMaxUnrolled = 4;

tir::Node UnrollShortLoops(const tir::Node& func) {
  return tir::Mutate(func, [](const tir::Node& node) -> std::optional<tir::Node> {
    if (!node.is("for") || node.field_as<kiln::String>("kind").str() != "serial") {
      return std::nullopt;
    }
    const std::optional<int64_t> extent = node.field_as<kiln::arith::SizeExpr>("extent").as_int();
    if (!extent.has_value() || *extent > kMaxUnrolled) return std::nullopt;
    return tir::WithFields(node, {{"kind", kiln::String("unrolled")}});
  });
}

KILN_REGISTER_GLOBAL("tir.pass.my_ext.unroll_short_loops").set_body_typed(UnrollShortLoops);

}  // namespace
}  // namespace my_ext
