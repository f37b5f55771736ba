// The compiler side of the my_ext codegen (BYOC, docs/byoc.md): which calls it takes, the one
// fused pattern it knows, and the codegen that hands each partitioned region to the runtime
// side (runtime/my_ext_runtime.cc), where simple loops run it.
//
//   kiln.build(mod, plugins=["my_ext"])   # MergeComposite, AnnotateTarget, ... then
//   kiln.ext.my_ext
#include <kiln/codegen/json_graph.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/op.h>
#include <kiln/transform/byoc.h>
#include <kiln/transform/pattern.h>

#include <string>
#include <vector>

namespace my_ext {
namespace {

namespace ir = kiln::ir;
namespace transform = kiln::transform;
using kiln::Any;
using kiln::Array;
using kiln::Map;
using kiln::String;

/// Why my_ext does not take `call`, or "" when it does: every argument and the result are
/// float32 tensors of one static shape (the runtime's loops do not broadcast).
std::string DeclineReason(const ir::Call& call) {
  std::string reason;
  const auto result = transform::StaticFloat32Shape(call->checked_type(), "the result", &reason);
  if (!result.has_value()) return reason;
  for (int64_t i = 0; i < call->args().size(); ++i) {
    const std::string what = "argument " + std::to_string(i);
    const auto arg = transform::StaticFloat32Shape(call->args()[i]->checked_type(), what, &reason);
    if (!arg.has_value()) return reason;
    if (*arg != *result) return what + " is broadcast; my_ext takes operands of one shape";
  }
  return "";
}

/// `target.my_ext`, asked by AnnotateTarget: true, or the reason the placement report prints.
Any TakesCall(const ir::Call& call) {
  const std::string reason = DeclineReason(call);
  if (reason.empty()) return true;
  return String(reason);
}

[[maybe_unused]] const bool kPredicatesRegistered = [] {
  for (const char* op : {"add", "multiply", "nn.relu"}) {
    ir::OpRegisterer::Extend(op).set_attr("target.my_ext",
                                          kiln::Function::FromTyped(TakesCall, "target.my_ext"));
  }
  return true;
}();

/// my_ext.add_relu: relu(add(a, b)) as one loop. Its check applies the predicate to both
/// calls, since MergeComposite makes the composite before any predicate is asked.
bool AddReluTakes(const ir::Call& relu) {
  const auto add = kiln::Downcast<ir::Call>(relu->args()[0]);
  return DeclineReason(relu).empty() && DeclineReason(add).empty();
}

KILN_REGISTER_GLOBAL("kiln.ext.my_ext.pattern_table").set_body_typed([] {
  const transform::Pattern add =
      transform::IsOp("add")({transform::Wildcard(), transform::Wildcard()});
  return Array<transform::PatternEntry>{
      transform::PatternEntry("my_ext.add_relu", transform::IsOp("nn.relu")({add}),
                              kiln::Function::FromTyped(AddReluTakes, "my_ext.add_relu check"))};
});

/// Each region becomes a module of kind "my_ext_json", made by the creator the runtime side
/// registers (KILN_REGISTER_JSON_RUNTIME); Kiln loads libkiln_runtime_my_ext.so for it.
KILN_REGISTER_GLOBAL("kiln.ext.my_ext")
    .set_body_typed([](const Array<ir::Function>& functions, const Map<String, Any>& /*options*/) {
      return kiln::codegen::CreateJsonModules(functions, "my_ext");
    });

}  // namespace
}  // namespace my_ext
