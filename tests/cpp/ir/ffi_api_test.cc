#include <kiln/ffi/function.h>
#include <kiln/ir/module.h>
#include <gtest/gtest.h>

#include "ir_test_util.h"

namespace kiln {
namespace ir {
namespace {

Any CallGlobal(const char* name, const std::vector<AnyView>& args) {
  return ::kiln::Function::GetGlobalRequired(name).CallPacked(args.data(),
                                                              static_cast<int32_t>(args.size()));
}

TEST(IrGlobalFunctionsTest, ConstructorsAndNodeFieldRoundTrip) {
  const Any type = CallGlobal("ir.TensorType", {Array<Dim>{IntDim(2)}, testing::Float32()});
  const Any x = CallGlobal("ir.Var", {"x", type});
  const Any none_typed = CallGlobal("ir.Var", {"y", nullptr});
  const Any call = CallGlobal(
      "ir.Call", {CallGlobal("ir.GlobalVar", {"f"}), Array<Any>{x}, Map<String, Any>{{"axis", 1}}});
  EXPECT_EQ(CallGlobal("ir.NodeField", {x, "name_hint"}).cast<String>(), "x");
  EXPECT_TRUE(CallGlobal("ir.NodeField", {none_typed, "type_annotation"}).is_none());
  EXPECT_EQ(CallGlobal("ir.NodeField", {call, "args"}).cast<Array<Expr>>().size(), 1);
  const Array<Dim> shape = CallGlobal("ir.NodeField", {type, "shape"}).cast<Array<Dim>>();
  EXPECT_EQ(shape[0].as_static(), 2);
}

TEST(IrGlobalFunctionsTest, UnknownFieldListsTheFields) {
  const Any x = CallGlobal("ir.Var", {"x", nullptr});
  try {
    CallGlobal("ir.NodeField", {x, "nmae_hint"});
    FAIL() << "expected a KeyError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "KeyError");
    EXPECT_NE(error.message().find("(fields: name_hint type_annotation)"), std::string::npos);
  }
}

TEST(IrGlobalFunctionsTest, ModuleAddReturnsANewHandle) {
  const Any x = CallGlobal("ir.Var", {"x", nullptr});
  const Any func = CallGlobal("ir.Function", {Array<Any>{x}, x, nullptr, Map<String, Any>()});
  const Any empty = CallGlobal("ir.IRModule", {Map<String, Any>()});
  const Any module =
      CallGlobal("ir.IRModuleAdd", {empty, CallGlobal("ir.GlobalVar", {"main"}), func});
  EXPECT_FALSE(empty.cast<IRModule>().Contains("main"));
  EXPECT_TRUE(CallGlobal("ir.IRModuleLookup", {module, "main"})
                  .cast<Function>()
                  .same_as(func.cast<Function>()));
  EXPECT_TRUE(CallGlobal("ir.StructuralEqual", {func, func, false}).cast<bool>());
}

}  // namespace
}  // namespace ir
}  // namespace kiln
