#include <kiln/transform/pass.h>
#include <gtest/gtest.h>

#include "transform_test_util.h"

namespace kiln {
namespace transform {
namespace {

using testing::LoggingPass;
using testing::ModuleWithUnusedFunction;

KILN_REGISTER_OP("test.transform.relu");

TEST(SequentialTest, RunsPassesInOrderAndComposesTheirResults) {
  std::vector<std::string> log;
  const Pass add_function = CreateModulePass(
      [](const ir::IRModule& mod, const PassContext& /*ctx*/) {
        ir::IRModule result = mod;
        const ir::Var v("v");
        result.Add(ir::GlobalVar("added"), ir::Function({v}, v));
        return result;
      },
      PassInfo{"test.transform.AddFunction", 0, false});
  const Pass seq = Sequential({LoggingPass("a", &log), add_function, LoggingPass("b", &log)});
  const ir::IRModule input = ModuleWithUnusedFunction();
  const ir::IRModule output = seq(input);
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(output.Contains("added"));
  EXPECT_FALSE(input.Contains("added"));
  EXPECT_EQ(seq.PipelineString(), "a,test.transform.AddFunction,b");
}

TEST(SequentialTest, NestedSequentialsFlattenInThePipelineString) {
  std::vector<std::string> log;
  const Pass inner = Sequential({LoggingPass("b", &log), LoggingPass("c", &log)});
  const Pass outer = Sequential({LoggingPass("a", &log), inner});
  outer(ModuleWithUnusedFunction());
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(outer.PipelineString(), "a,b,c");
}

TEST(PassContextSkipTest, OptLevelAboveTheContextsIsSkippedUnlessRequired) {
  std::vector<std::string> log;
  const Pass seq =
      Sequential({LoggingPass("transform.Low", &log, 1), LoggingPass("transform.High", &log, 3),
                  LoggingPass("transform.HighButRequired", &log, 3, true)});
  seq(ModuleWithUnusedFunction(), PassContext::Create().SetOptLevel(2));
  EXPECT_EQ(log, (std::vector<std::string>{"transform.Low", "transform.HighButRequired"}));
}

TEST(PassContextSkipTest, DisabledPassesAreSkippedWithOrWithoutThePrefix) {
  std::vector<std::string> log;
  const Pass seq = Sequential({LoggingPass("transform.A", &log), LoggingPass("transform.B", &log),
                               LoggingPass("transform.C", &log)});
  seq(ModuleWithUnusedFunction(), PassContext::Create().Disable("transform.A").Disable("B"));
  EXPECT_EQ(log, (std::vector<std::string>{"transform.C"}));
}

TEST(PassContextSkipTest, ContextRequiredPassRunsEvenWhenDisabledOrAboveOptLevel) {
  std::vector<std::string> log;
  const Pass seq =
      Sequential({LoggingPass("transform.A", &log, 4), LoggingPass("transform.B", &log)});
  seq(ModuleWithUnusedFunction(),
      PassContext::Create().SetOptLevel(0).Require("A").Disable("transform.A").Disable("B"));
  EXPECT_EQ(log, (std::vector<std::string>{"transform.A"}));
}

Pass FailingFunctionPass() {
  return CreateFunctionPass(
      [](const ir::Function& func, const ir::IRModule& /*mod*/,
         const PassContext& /*ctx*/) -> ir::Function {
        KILN_CHECK(func->params().size() != 1 || func->params()[0]->name_hint() != "y", ValueError)
            << "cannot handle y";
        return func;
      },
      PassInfo{"transform.Fails", 0, false});
}

TEST(PassErrorTest, FunctionPassErrorNamesThePassAndTheFunction) {
  try {
    FailingFunctionPass()(ModuleWithUnusedFunction());
    FAIL() << "expected a ValueError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "ValueError");
    EXPECT_NE(error.message().find("cannot handle y"), std::string::npos);
    EXPECT_NE(error.context().find("while running transform.Fails on @helper"), std::string::npos)
        << error.what();
    EXPECT_EQ(error.context().find("on the module"), std::string::npos) << error.what();
  }
}

TEST(PassErrorTest, ModulePassErrorSaysOnTheModule) {
  const Pass fails = CreateModulePass(
      [](const ir::IRModule& mod, const PassContext& /*ctx*/) -> ir::IRModule {
        KILN_THROW(RuntimeError) << "boom";
      },
      PassInfo{"transform.Boom", 0, false});
  try {
    Sequential({fails})(ModuleWithUnusedFunction());
    FAIL() << "expected a RuntimeError";
  } catch (const Error& error) {
    EXPECT_NE(error.context().find("while running transform.Boom on the module"), std::string::npos)
        << error.what();
  }
}

TEST(PassErrorTest, DumpOnErrorWritesTheFailingInputAndThePipeline) {
  const std::string dir = testing::FreshDir("dump_on_error");
  std::vector<std::string> log;
  const Pass seq = Sequential({LoggingPass("transform.First", &log), FailingFunctionPass()});
  try {
    seq(ModuleWithUnusedFunction(), PassContext::Create().SetDumpOnErrorDir(dir));
    FAIL() << "expected a ValueError";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find(dir), std::string::npos) << error.what();
  }
  const std::filesystem::path input = std::filesystem::path(dir) / "transform.Fails_input.kiln";
  ASSERT_TRUE(std::filesystem::exists(input));
  EXPECT_FALSE(testing::ReadFile(input).empty());
  EXPECT_EQ(testing::ReadFile(std::filesystem::path(dir) / "pipeline.txt"),
            "transform.First,transform.Fails\n");
  std::filesystem::remove_all(dir);
}

TEST(FunctionPassTest, SkipsExternalFunctionsUnlessAsked) {
  ir::IRModule mod = ir::IRModule::Create();
  const ir::Var a("a");
  mod.Add(ir::GlobalVar("ext"), ir::Function({a}, a).WithAttr(ir::attr::kCompiler, String("dnnl")));
  const ir::Var b("b");
  mod.Add(ir::GlobalVar("main"), ir::Function({b}, b));
  std::vector<std::string> seen;
  auto record = [&seen](const ir::Function& func, const ir::IRModule& /*mod*/,
                        const PassContext& /*ctx*/) {
    seen.push_back(func->params()[0]->name_hint().str());
    return func;
  };
  const ir::IRModule out = CreateFunctionPass(record, PassInfo{"transform.Record", 0, false})(mod);
  EXPECT_EQ(seen, (std::vector<std::string>{"b"}));
  EXPECT_TRUE(out.same_as(mod));  // nothing changed
  seen.clear();
  CreateFunctionPass(record, PassInfo{"transform.Record", 0, false}, true)(mod);
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b"}));
}

TEST(FunctionPassTest, KeepsGlobalVarsOfRewrittenFunctions) {
  const ir::IRModule mod = ModuleWithUnusedFunction();
  const Pass rename_params = CreateFunctionPass(
      [](const ir::Function& func, const ir::IRModule& /*mod*/, const PassContext& /*ctx*/) {
        const ir::Var fresh("fresh");
        return ir::Function({fresh}, fresh);
      },
      PassInfo{"transform.Replace", 0, false});
  const ir::IRModule out = rename_params(mod);
  EXPECT_FALSE(out.same_as(mod));
  EXPECT_TRUE(out.GetGlobalVar("main").same_as(mod.GetGlobalVar("main")));
  EXPECT_EQ(out.Lookup("helper")->params()[0]->name_hint(), "fresh");
}

}  // namespace
}  // namespace transform
}  // namespace kiln
