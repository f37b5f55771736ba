#include <kiln/transform/pass.h>
#include <kiln/transform/passes.h>
#include <gtest/gtest.h>

#include <atomic>

#include "transform_test_util.h"

namespace kiln {
namespace transform {
namespace {

std::atomic<int64_t> count_runs{0};

/// A plugin-style pass defined outside Kiln: counts its runs.
Pass CountPass() {
  return CreateModulePass(
      [](const ir::IRModule& mod, const PassContext& /*ctx*/) {
        ++count_runs;
        return mod;
      },
      PassInfo{"test.transform.Count", 0, false});
}

KILN_REGISTER_PASS_AS("test.transform.Count", CountPass);

TEST(PipelineTest, TestPassRunsInAPipelineStringWithBuiltIns) {
  count_runs = 0;
  const Pass pipeline = ParsePipeline(
      "test.transform.Count, DeadCodeElimination,transform.DeadCodeElimination ,"
      "test.transform.Count");
  EXPECT_EQ(pipeline.PipelineString(),
            "test.transform.Count,transform.DeadCodeElimination,transform.DeadCodeElimination,"
            "test.transform.Count");
  const ir::IRModule out = pipeline(testing::ModuleWithUnusedFunction());
  EXPECT_EQ(count_runs, 2);
  EXPECT_FALSE(out.Contains("unused"));
}

TEST(PipelineTest, RunPipelineGlobalAppliesSettings) {
  count_runs = 0;
  Map<String, Any> settings;
  settings.Set("disabled_passes", Array<String>{"DeadCodeElimination"});
  const Function run = Function::GetGlobalRequired("transform.RunPipeline");
  const auto out = run(testing::ModuleWithUnusedFunction(),
                       String("test.transform.Count,transform.DeadCodeElimination"), settings)
                       .cast<ir::IRModule>();
  EXPECT_EQ(count_runs, 1);
  EXPECT_TRUE(out.Contains("unused"));
}

TEST(PipelineTest, UnknownNameSuggestsCloseRegisteredNames) {
  try {
    ParsePipeline("transform.DeadCodeEliminaton");
    FAIL() << "expected a KeyError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "KeyError");
    EXPECT_NE(error.message().find("transform.DeadCodeElimination"), std::string::npos)
        << error.what();
    EXPECT_NE(error.context().find("while parsing the pass pipeline"), std::string::npos);
  }
  try {
    ParsePipeline("test.transform.Cont");
    FAIL() << "expected a KeyError";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("test.transform.Count"), std::string::npos) << error.what();
  }
}

TEST(PipelineTest, NameOfANonPassFunctionIsATypeError) {
  try {
    ParsePipeline("transform.RunPipeline");
    FAIL() << "expected a TypeError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "TypeError");
    EXPECT_NE(error.message().find("is not a pass"), std::string::npos) << error.what();
  }
}

TEST(PipelineTest, SequentialGlobalComposesPasses) {
  count_runs = 0;
  const Function sequential = Function::GetGlobalRequired("transform.Sequential");
  const auto seq =
      sequential(Array<Pass>{CountPass(), DeadCodeElimination()}, String("cleanup")).cast<Pass>();
  EXPECT_EQ(seq.info().name, "cleanup");
  EXPECT_EQ(seq.PipelineString(), "test.transform.Count,transform.DeadCodeElimination");
  EXPECT_FALSE(seq(testing::ModuleWithUnusedFunction()).Contains("unused"));
  EXPECT_EQ(count_runs, 1);
}

}  // namespace
}  // namespace transform
}  // namespace kiln
