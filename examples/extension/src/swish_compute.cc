// The compute rule of my_ext.swish (swish_op.cc): one output element, x * sigmoid(beta * x), as
// tensor-level IR values. With it, a fused group holding the plugin's op is lowered to one
// generated loop like the core ops' groups (kiln.build(..., generated_kernels=True)); without
// it, such a group keeps the hand-written kernels. A rule is the global function
// `tir.compute.<op>` (kiln/tir/compute.h).
#include <kiln/ffi/registry.h>
#include <kiln/tir/compute.h>

#include <vector>

namespace my_ext {
namespace {

namespace tir = kiln::tir;

tir::Node SwishElement(const kiln::Array<tir::Node>& inputs, const tir::Node& output,
                       const kiln::Array<kiln::Any>& indices,
                       const kiln::Map<kiln::String, kiln::Any>& attrs) {
  std::vector<kiln::arith::SizeExpr> at;
  for (const kiln::Any& index : indices) at.push_back(index.cast<kiln::arith::SizeExpr>());
  const tir::ComputeContext ctx({inputs.begin(), inputs.end()}, output, at, attrs);
  const tir::Node x = ctx.Input(0);
  const tir::Node beta = ctx.Constant(ctx.Attr("beta").cast<double>());
  const tir::Node exp = tir::Call(
      "exp", {tir::Binary("mul", tir::Binary("mul", x, beta), ctx.Constant(-1.0))}, ctx.dtype());
  return tir::Binary("div", x, tir::Binary("add", ctx.Constant(1.0), exp));
}

KILN_REGISTER_GLOBAL("tir.compute.my_ext.swish").set_body_typed(SwishElement);

}  // namespace
}  // namespace my_ext
