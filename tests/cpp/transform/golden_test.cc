// Golden tests of the passes: every tests/transform/golden/<Pass>/<case>.kiln is an input
// module, then a line `// expected:` and the module the pipeline must produce, or a line
// `// error: <text>` and text the pipeline's error must contain. The pipeline is the folder's
// pass, or the `// pipeline: A,B` line at the top of the file. Each run also checks the IR is
// well-formed after every pass.
#include <kiln/ir/structural_equal.h>
#include <kiln/ir/text_format.h>
#include <kiln/transform/instrument.h>
#include <kiln/transform/pass.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "golden_ops.h"
#include "testing/golden_case.h"

namespace kiln {
namespace transform {
namespace {

namespace fs = std::filesystem;
using test_util::GoldenCase;

std::vector<std::string> CaseFiles() {
  return test_util::GoldenCaseFiles(KILN_PASS_GOLDEN_DIR, ".kiln");
}

class PassGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PassGoldenTest, ProducesTheExpectedModule) {
  testing::RegisterGoldenOps();
  const GoldenCase golden = test_util::ReadGoldenCase(fs::path(KILN_PASS_GOLDEN_DIR) / GetParam());
  ASSERT_TRUE(golden.expected.empty() != golden.expected_error.empty())
      << GetParam() << " needs exactly one of `// expected:` and `// error:`";
  const ir::IRModule input = ir::ParseModule(golden.input);
  PassContext ctx = PassContext::Create().SetOptLevel(3);
  ctx.AddInstrument(WellFormedInstrument::Create());
  if (!golden.expected_error.empty()) {
    try {
      ParsePipeline(golden.pipeline)(input, ctx);
      FAIL() << "expected an error containing: " << golden.expected_error;
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(golden.expected_error), std::string::npos)
          << error.what();
    }
    return;
  }
  const ir::IRModule actual = ParsePipeline(golden.pipeline)(input, ctx);
  const ir::IRModule expected = ir::ParseModule(golden.expected);
  EXPECT_TRUE(ir::StructuralEqual(actual, expected)) << "got:\n"
                                                     << ir::AsText(actual) << "expected:\n"
                                                     << ir::AsText(expected);
}

INSTANTIATE_TEST_SUITE_P(Golden, PassGoldenTest, ::testing::ValuesIn(CaseFiles()),
                         test_util::GoldenTestName);

}  // namespace
}  // namespace transform
}  // namespace kiln
