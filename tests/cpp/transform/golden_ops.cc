// Test ops with a kernel, for FoldConstant's golden tests.
#include "golden_ops.h"

#include <kiln/ir/type_relation.h>

#include <mutex>

namespace kiln {
namespace transform {
namespace testing {
namespace {

ir::Type SameAsFirst(const ir::TypeRelationContext& ctx) {
  ctx.Tensor(0);
  return ctx.arg_type(0);
}

void AddKernel(const Array<Tensor>& inputs, const Array<Tensor>& outputs,
               const Map<String, Any>& /*attrs*/) {
  const auto* a = static_cast<const float*>(inputs[0].data());
  const auto* b = static_cast<const float*>(inputs[1].data());
  auto* out = static_cast<float*>(outputs[0].data());
  for (int64_t i = 0; i < outputs[0].NumElements(); ++i) out[i] = a[i] + b[i];
}

}  // namespace

void RegisterGoldenOps() {
  static std::once_flag once;
  std::call_once(once, [] {
    ir::Op::Register("test.golden.add")
        .add_input("lhs")
        .add_input("rhs")
        .set_pattern(ir::OpPattern::kElemWise)
        .set_type_relation(SameAsFirst)
        .set_attr(ir::op_attr::kFKernel,
                  kiln::Function::FromTyped(
                      [](const Array<Tensor>& inputs, const Array<Tensor>& outputs,
                         const Map<String, Any>& attrs) { AddKernel(inputs, outputs, attrs); },
                      "test.golden.add kernel"));
    ir::Op::Register("test.golden.negative_no_kernel")
        .add_input("data")
        .set_pattern(ir::OpPattern::kElemWise)
        .set_type_relation(SameAsFirst);
  });
}

}  // namespace testing
}  // namespace transform
}  // namespace kiln
