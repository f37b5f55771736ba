#include <kiln/transform/passes.h>
#include <gtest/gtest.h>

#include "transform_test_util.h"

namespace kiln {
namespace transform {
namespace {

TEST(DeadCodeEliminationTest, RemovesUnreachableFunctionAndKeepsReachableOnes) {
  const ir::IRModule mod = testing::ModuleWithUnusedFunction();
  const ir::IRModule out = DeadCodeElimination()(mod);
  EXPECT_TRUE(out.Contains("main"));
  EXPECT_TRUE(out.Contains("helper"));
  EXPECT_FALSE(out.Contains("unused"));
  EXPECT_TRUE(out.Lookup("helper").same_as(mod.Lookup("helper")));
  EXPECT_TRUE(mod.Contains("unused"));  // the input is unchanged
}

TEST(DeadCodeEliminationTest, GlobalSymbolFunctionsAreEntriesAndReachTransitively) {
  ir::IRModule mod = ir::IRModule::Create();
  const ir::GlobalVar leaf("leaf");
  const ir::Var a("a");
  mod.Add(leaf, ir::Function({a}, a));
  const ir::GlobalVar middle("middle");
  const ir::Var b("b");
  mod.Add(middle, ir::Function({b}, ir::Call(leaf, {b})));
  const ir::Var c("c");
  mod.Add(ir::GlobalVar("exported"), ir::Function({c}, ir::Call(middle, {c}))
                                         .WithAttr(ir::attr::kGlobalSymbol, String("exported")));
  const ir::Var d("d");
  mod.Add(ir::GlobalVar("dead"), ir::Function({d}, ir::Call(leaf, {d})));
  const ir::IRModule out = DeadCodeElimination()(mod);
  EXPECT_TRUE(out.Contains("exported"));
  EXPECT_TRUE(out.Contains("middle"));
  EXPECT_TRUE(out.Contains("leaf"));
  EXPECT_FALSE(out.Contains("dead"));
}

TEST(DeadCodeEliminationTest, ModuleWithoutEntriesIsUnchanged) {
  ir::IRModule mod = ir::IRModule::Create();
  const ir::Var a("a");
  mod.Add(ir::GlobalVar("f"), ir::Function({a}, a));
  EXPECT_TRUE(DeadCodeElimination()(mod).same_as(mod));
}

TEST(DeadCodeEliminationTest, IsRegisteredAndSkippedAtOptLevelZero) {
  const Pass pass = Function::GetGlobalRequired("transform.DeadCodeElimination")().cast<Pass>();
  EXPECT_EQ(pass.info().name, "transform.DeadCodeElimination");
  const ir::IRModule mod = testing::ModuleWithUnusedFunction();
  EXPECT_TRUE(pass(mod, PassContext::Create().SetOptLevel(0)).same_as(mod));
}

}  // namespace
}  // namespace transform
}  // namespace kiln
