// my_ext.swish(x, beta=1.0) = x * sigmoid(beta * x): an op of the plugin's own, with the three
// things the compiler needs to know about it:
//   - its schema (one input, a float attribute with a default), checked when a Call is built;
//   - its shape rule, which InferType calls: the result has the input's type;
//   - its pattern kind, elementwise, so FuseOps fuses it with its neighbours on the CPU path;
//   - its FKernel, which FoldConstant runs on constant inputs: CpuKernelOf forwards to the
//     global `kernel.cpu.my_ext.swish`, as the core ops' FKernels do.
// That kernel is NOT here: it lives in the runtime side (runtime/swish_kernel.cc,
// libkiln_runtime_my_ext.so), so a deployed model runs the op without this compiler plugin.
// Lowering names the kernel after the op; Kiln loads libkiln_runtime_<namespace>.so, found
// next to libkiln_runtime.so or on KILN_RUNTIME_PATH, the first time one is missing.
#include <kiln/ir/op.h>
#include <kiln/ir/type_relation.h>

namespace my_ext {
namespace {

namespace ir = kiln::ir;

/// The kernel computes in float32 only, so the rule refuses anything else at compile time,
/// with a message naming the op and the argument (TypeRelationContext::Describe).
ir::Type SwishRelation(const ir::TypeRelationContext& ctx) {
  ctx.CheckNumArgs(1);
  const ir::TensorTypeObj* x = ctx.Tensor(0);  // TypeError naming 'x' for a non-tensor
  KILN_CHECK(kiln::DataTypeEqual(x->dtype(), DLDataType{kDLFloat, 32, 1}), TypeError)
      << ctx.Describe(ctx.ArgName(0) + " must be float32, not " +
                      kiln::DataTypeToString(x->dtype()));
  return ctx.arg_type(0);
}

KILN_REGISTER_OP("my_ext.swish")
    .add_input("x")
    .add_attr("beta", ir::AttrKind::kFloat, 1.0)
    .set_pattern(ir::OpPattern::kElemWise)
    .set_type_relation(SwishRelation)
    .set_attr(ir::op_attr::kFKernel, ir::CpuKernelOf("my_ext.swish"));

}  // namespace
}  // namespace my_ext
