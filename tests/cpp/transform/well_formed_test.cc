#include <kiln/transform/well_formed.h>
#include <gtest/gtest.h>

#include "transform_test_util.h"

namespace kiln {
namespace transform {
namespace {

ir::IRModule ModuleOf(const std::string& name, const ir::Function& func) {
  ir::IRModule mod = ir::IRModule::Create();
  mod.Add(ir::GlobalVar(name), func);
  return mod;
}

std::string Reason(const ir::IRModule& mod) {
  std::string reason;
  EXPECT_FALSE(WellFormed(mod, &reason));
  return reason;
}

TEST(WellFormedTest, AcceptsAModuleWithNestedFunctionsAndSharedNodes) {
  const ir::Var x("x");
  const ir::Var y("y");
  const ir::Expr shared = ir::Call(testing::TestRelu(), {x});
  // The inner function uses its own parameter and the outer one's.
  const ir::Function inner({y}, ir::Tuple({y, shared}));
  const ir::Function outer({x}, ir::Tuple({ir::Call(inner, {shared}), shared}));
  EXPECT_TRUE(WellFormed(ModuleOf("main", outer)));
  EXPECT_TRUE(WellFormed(testing::ModuleWithUnusedFunction()));
}

TEST(WellFormedTest, UnboundVarIsNamedWithItsFunction) {
  const ir::Var x("x");
  const ir::Var stray("stray");
  const std::string reason =
      Reason(ModuleOf("f", ir::Function({x}, ir::Call(testing::TestRelu(), {stray}))));
  EXPECT_NE(reason.find("in @f"), std::string::npos) << reason;
  EXPECT_NE(reason.find("%stray"), std::string::npos) << reason;
  EXPECT_NE(reason.find("not bound"), std::string::npos) << reason;
}

TEST(WellFormedTest, VarOfANestedFunctionIsNotInScopeOutsideIt) {
  const ir::Var x("x");
  const ir::Var y("y");
  const ir::Function inner({y}, y);
  const std::string reason = Reason(ModuleOf("f", ir::Function({x}, ir::Tuple({inner, y}))));
  EXPECT_NE(reason.find("%y"), std::string::npos) << reason;
}

TEST(WellFormedTest, VarBoundTwiceIsAnError) {
  const ir::Var x("x");
  const ir::Function inner({x}, x);
  const std::string reason = Reason(ModuleOf("f", ir::Function({x}, ir::Call(inner, {x}))));
  EXPECT_NE(reason.find("bound twice"), std::string::npos) << reason;
}

TEST(WellFormedTest, TupleGetItemPastAKnownTupleTypeIsAnError) {
  const ir::Var x("x");
  x->set_checked_type(ir::TupleType({ir::TensorType::Static({2}, DLDataType{kDLFloat, 32, 1})}));
  const std::string reason = Reason(ModuleOf("f", ir::Function({x}, ir::TupleGetItem(x, 1))));
  EXPECT_NE(reason.find("index 1 is out of range for a tuple of 1 fields"), std::string::npos)
      << reason;
}

TEST(WellFormedTest, GlobalSymbolMustMatchTheGlobalVar) {
  const ir::Var x("x");
  const ir::Function func = ir::Function({x}, x).WithAttr(ir::attr::kGlobalSymbol, String("other"));
  EXPECT_TRUE(WellFormed(ModuleOf("other", func)));
  const std::string reason = Reason(ModuleOf("f", func));
  EXPECT_NE(reason.find("global_symbol"), std::string::npos) << reason;
  EXPECT_THROW(CheckWellFormed(ModuleOf("f", func)), Error);
}

}  // namespace
}  // namespace transform
}  // namespace kiln
