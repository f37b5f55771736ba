// Test ops with a kernel, for FoldConstant's golden tests, and the BYOC predicates of the
// AnnotateTarget / MergeCompilerRegions / PartitionGraph golden tests.
#include "golden_ops.h"

#include <kiln/ir/type_relation.h>

#include <mutex>
#include <string>

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

/// Sets `target.<compiler>` of `op` to a predicate that always gives `answer` (a bool, or a
/// string: the reason it declines).
void SetPredicate(const char* op, const std::string& compiler, const Any& answer) {
  ir::OpRegisterer::Extend(op).set_attr(
      "target." + compiler,
      kiln::Function::FromTyped([answer](const ir::Call& /*call*/) { return answer; },
                                "target." + compiler + " of " + op));
}

/// test_a takes add, multiply, nn.relu and split, and declines exp with a reason; test_b takes
/// exp, nn.relu, nn.dense, and nn.dense only when its weight has 4 rows.
void RegisterByocPredicates() {
  for (const char* op : {"add", "multiply", "nn.relu", "split"}) SetPredicate(op, "test_a", true);
  SetPredicate("exp", "test_a", String("test_a has no exp"));
  SetPredicate("negative", "test_a", false);
  for (const char* op : {"exp", "nn.relu"}) SetPredicate(op, "test_b", true);
  ir::OpRegisterer::Extend("nn.dense")
      .set_attr("target.test_b", kiln::Function::FromTyped(
                                     [](const ir::Call& call) -> Any {
                                       const auto* weight =
                                           call->args()[1]->checked_type().as<ir::TensorTypeObj>();
                                       if (weight != nullptr && weight->shape().size() == 2 &&
                                           weight->shape()[0].as_static() == 4) {
                                         return true;
                                       }
                                       return String("test_b: nn.dense needs a weight of 4 rows");
                                     },
                                     "target.test_b of nn.dense"));
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
    RegisterByocPredicates();
  });
}

}  // namespace testing
}  // namespace transform
}  // namespace kiln
