// my_ext.rsqrt(value): a value node of the plugin's own in the tensor-level IR, as a project
// would add a hardware intrinsic or a number format, and `my_ext.lower_rsqrt`, the loop-level
// pass that lowers it to built-in nodes (1 / sqrt(value)) before code generation.
//
// Registering the kind is all it takes for the node to print and parse in the text format,
// compare and hash structurally, and be visited and mutated like a built-in one; no Kiln code
// knows it. The C code generator does not: a function still holding one is a
// NotImplementedError that says to lower it first.
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>

#include <optional>
#include <vector>

namespace my_ext {
namespace {

namespace tir = kiln::tir;

[[maybe_unused]] const bool kRegistered = [] {
  tir::RegisterNode({"my_ext.rsqrt",
                     tir::NodeRole::kValue,
                     {{"value", tir::FieldKind::kValue}},
                     [](const std::vector<kiln::Any>& fields) {
                       const DLDataType dtype = fields[0].cast<tir::Node>()->dtype();
                       KILN_CHECK(dtype.code == kDLFloat, TypeError)
                           << "my_ext.rsqrt takes a float value, got "
                           << kiln::DataTypeToString(dtype);
                       return dtype;
                     }});
  return true;
}();

tir::Node LowerRsqrt(const tir::Node& func) {
  return tir::Mutate(func, [](const tir::Node& node) -> std::optional<tir::Node> {
    if (!node.is("my_ext.rsqrt")) return std::nullopt;
    const tir::Node value = node.field_as<tir::Node>("value");
    return tir::Binary("div", tir::FloatImm(1.0, value->dtype()),
                       tir::Call("sqrt", {value}, value->dtype()));
  });
}

KILN_REGISTER_GLOBAL("tir.pass.my_ext.lower_rsqrt").set_body_typed(LowerRsqrt);

}  // namespace
}  // namespace my_ext
