#include <kiln/ir/module.h>
#include <gtest/gtest.h>

namespace kiln {
namespace ir {
namespace {

Function Identity() {
  const Var x("x");
  return Function({x}, x);
}

TEST(IRModuleTest, AddThenLookupByName) {
  IRModule module = IRModule::Create({{"executor", String("graph")}});
  const GlobalVar main("main");
  const Function func = Identity();
  module.Add(main, func);
  EXPECT_TRUE(module.Lookup("main").same_as(func));
  EXPECT_TRUE(module.GetGlobalVar("main").same_as(main));
  EXPECT_TRUE(module.Contains("main"));
  EXPECT_EQ(module->attrs().at("executor").cast<String>(), "graph");
  EXPECT_EQ(module->functions().size(), 1);
}

TEST(IRModuleTest, DuplicateNameIsAKeyErrorEvenWithAnotherGlobalVar) {
  IRModule module = IRModule::Create();
  module.Add(GlobalVar("main"), Identity());
  try {
    module.Add(GlobalVar("main"), Identity());
    FAIL() << "expected a KeyError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "KeyError");
    EXPECT_NE(error.message().find("already has a function named @main"), std::string::npos);
  }
  EXPECT_EQ(module->functions().size(), 1);
}

TEST(IRModuleTest, UnknownNameListsTheFunctions) {
  IRModule module = IRModule::Create();
  module.Add(GlobalVar("main"), Identity());
  module.Add(GlobalVar("helper"), Identity());
  try {
    module.Lookup("mian");
    FAIL() << "expected a KeyError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "KeyError");
    EXPECT_NE(error.message().find("(it has: @helper, @main)"), std::string::npos);
  }
}

TEST(IRModuleTest, AddNeverChangesAModuleAnotherHandleReads) {
  IRModule original = IRModule::Create();
  original.Add(GlobalVar("main"), Identity());
  IRModule extended = original;
  extended.Add(GlobalVar("helper"), Identity());
  EXPECT_FALSE(original.Contains("helper"));
  EXPECT_TRUE(extended.Contains("helper"));
  EXPECT_TRUE(extended.Contains("main"));
}

}  // namespace
}  // namespace ir
}  // namespace kiln
