// libkiln_ext_op.so, the compiler half of a plugin op as an out-of-tree extension writes one:
// the op ext_op.swish (x * sigmoid(alpha * x), elementwise so FuseOps fuses it) whose CPU kernel
// kernel.cpu.ext_op.swish lives in the runtime half (ext_op_runtime.cc), and the converter of
// the ONNX op com.kiln.ext_op.Swish. Never installed.
#include <kiln/frontend/onnx_converter.h>
#include <kiln/ir/op.h>
#include <kiln/ir/type_relation.h>

namespace kiln {
namespace ext_op {
namespace {

ir::Type SwishRelation(const ir::TypeRelationContext& ctx) {
  ctx.CheckNumArgs(1);
  return ctx.arg_type(0);
}

KILN_REGISTER_OP("ext_op.swish")
    .add_input("data")
    .add_attr("alpha", ir::AttrKind::kFloat, 1.0)
    .set_pattern(ir::OpPattern::kElemWise)
    .set_type_relation(SwishRelation)
    .set_attr(ir::op_attr::kFKernel, ir::CpuKernelOf("ext_op.swish"));

KILN_REGISTER_ONNX_CONVERTER(
    "com.kiln.ext_op", "Swish",
    [](const Array<ir::Expr>& inputs, const Map<String, Any>& attrs, int64_t opset) -> ir::Expr {
      KILN_CHECK(opset == 1, NotImplementedError)
          << "com.kiln.ext_op.Swish has opset 1 only, the model imports " << opset;
      const double alpha = attrs.Get(String("alpha")).value_or(Any(1.0)).cast<double>();
      return ir::Call(ir::Op::Get("ext_op.swish"), {inputs[0]}, {{"alpha", alpha}});
    });

}  // namespace
}  // namespace ext_op
}  // namespace kiln
