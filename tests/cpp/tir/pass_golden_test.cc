// Golden tests of the loop-level passes: every tests/tir/passes/<pass>/<case>.tir is an input
// prim_func, then a line `// expected:` and the function the passes must produce (written by
// hand), or a line `// error: <text>`. The passes are the folder's name, or the `// pipeline:`
// line's. Each run also checks, after every pass, that the function prints and parses back
// (WellFormedInstrument), and that the expected text is a fixed point of printing.
#include <kiln/tir/node.h>
#include <kiln/tir/passes.h>
#include <kiln/transform/instrument.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "testing/golden_case.h"

namespace kiln {
namespace tir {
namespace {

class LoopPassGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LoopPassGoldenTest, ProducesTheExpectedFunction) {
  const test_util::GoldenCase golden = test_util::ReadGoldenCase(
      std::filesystem::path(KILN_TIR_PASS_GOLDEN_DIR) / GetParam(), /*skip_comments=*/true);
  ASSERT_TRUE(golden.expected.empty() != golden.expected_error.empty())
      << GetParam() << " needs exactly one of `// expected:` and `// error:`";
  const Node input = ParseText(golden.input);
  transform::PassContext context = transform::PassContext::Create();
  context.AddInstrument(transform::WellFormedInstrument::Create());
  if (!golden.expected_error.empty()) {
    try {
      RunPasses(input, golden.pipeline, context);
      FAIL() << "expected an error containing: " << golden.expected_error;
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(golden.expected_error), std::string::npos)
          << error.what();
    }
    return;
  }
  const Node actual = RunPasses(input, golden.pipeline, context);
  const Node expected = ParseText(golden.expected);
  EXPECT_TRUE(StructuralEqual(actual, expected)) << "got:\n"
                                                 << AsText(actual) << "\nexpected:\n"
                                                 << AsText(expected);
}

INSTANTIATE_TEST_SUITE_P(Golden, LoopPassGoldenTest,
                         ::testing::ValuesIn(test_util::GoldenCaseFiles(KILN_TIR_PASS_GOLDEN_DIR,
                                                                        ".tir")),
                         test_util::GoldenTestName);

}  // namespace
}  // namespace tir
}  // namespace kiln
