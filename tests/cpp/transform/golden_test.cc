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
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "golden_ops.h"

namespace kiln {
namespace transform {
namespace {

namespace fs = std::filesystem;

struct GoldenCase {
  std::string pipeline;
  std::string input;
  std::string expected;        // the expected module, or empty
  std::string expected_error;  // text the error contains, or empty
};

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string AfterPrefix(const std::string& line, const std::string& prefix) {
  return line.compare(0, prefix.size(), prefix) == 0 ? line.substr(prefix.size()) : "";
}

GoldenCase ReadCase(const fs::path& path) {
  GoldenCase golden;
  golden.pipeline = path.parent_path().filename().string();
  std::istringstream lines(ReadText(path));
  std::string line;
  std::string* section = &golden.input;
  while (std::getline(lines, line)) {
    if (std::string pipeline = AfterPrefix(line, "// pipeline: "); !pipeline.empty()) {
      golden.pipeline = pipeline;
    } else if (line == "// expected:") {
      section = &golden.expected;
    } else if (std::string error = AfterPrefix(line, "// error: "); !error.empty()) {
      golden.expected_error = error;
    } else {
      *section += line + "\n";
    }
  }
  return golden;
}

std::vector<std::string> CaseFiles() {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(KILN_PASS_GOLDEN_DIR)) {
    if (entry.path().extension() == ".kiln") {
      files.push_back(fs::relative(entry.path(), KILN_PASS_GOLDEN_DIR).string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

class PassGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PassGoldenTest, ProducesTheExpectedModule) {
  testing::RegisterGoldenOps();
  const GoldenCase golden = ReadCase(fs::path(KILN_PASS_GOLDEN_DIR) / GetParam());
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
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace transform
}  // namespace kiln
