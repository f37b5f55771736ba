#include <kiln/transform/pass.h>
#include <kiln/transform/passes.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

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

std::vector<std::string> last_args;

/// A pass factory that takes arguments: its pass records them when it runs.
KILN_REGISTER_GLOBAL("test.transform.RecordArgs").set_body_typed([](const Array<String>& args) {
  return CreateModulePass(
      [args](const ir::IRModule& mod, const PassContext& /*ctx*/) {
        last_args.assign(args.begin(), args.end());
        return mod;
      },
      PassInfo{"test.transform.RecordArgs", 0, false});
});

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

TEST(PipelineTest, ArgumentsInParenthesesReachTheFactory) {
  last_args.clear();
  const Pass pipeline = ParsePipeline(
      "test.transform.Count, test.transform.RecordArgs( dnnl, blas ),"
      "test.transform.Count");
  pipeline(testing::ModuleWithUnusedFunction());
  EXPECT_EQ(last_args, (std::vector<std::string>{"dnnl", "blas"}));
  ParsePipeline("test.transform.RecordArgs()")(testing::ModuleWithUnusedFunction());
  EXPECT_TRUE(last_args.empty());
}

TEST(PipelineTest, MalformedArgumentsAreValueErrors) {
  for (const char* pipeline : {"test.transform.RecordArgs(dnnl", "test.transform.Count)",
                               "test.transform.RecordArgs(dnnl) x"}) {
    try {
      ParsePipeline(pipeline);
      FAIL() << "expected a ValueError for " << pipeline;
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), "ValueError") << pipeline;
      EXPECT_NE(error.context().find(pipeline), std::string::npos) << error.what();
    }
  }
}

TEST(PipelineTest, ArgumentsToAFactoryWithoutParametersAreATypeError) {
  try {
    ParsePipeline("test.transform.Count(x)");
    FAIL() << "expected a TypeError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "TypeError");
    EXPECT_NE(error.message().find("array of strings"), std::string::npos) << error.what();
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
