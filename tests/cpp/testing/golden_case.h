// Golden test files shared by the graph passes' and the loop-level passes' golden tests: an
// input, then a line `// expected:` and the expected output, or a line `// error: <text>` and
// text the error must contain. A line `// pipeline: A,B` at the top names the passes (else the
// folder's name does); other lines starting with `// ` describe the case and are skipped when
// `skip_comments` is set (for text formats without comments).
#ifndef KILN_TESTS_CPP_TESTING_GOLDEN_CASE_H_
#define KILN_TESTS_CPP_TESTING_GOLDEN_CASE_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kiln {
namespace test_util {

struct GoldenCase {
  std::string pipeline;
  std::string input;
  std::string expected;        // the expected output, or empty
  std::string expected_error;  // text the error contains, or empty
};

inline std::string AfterPrefix(const std::string& line, const std::string& prefix) {
  return line.compare(0, prefix.size(), prefix) == 0 ? line.substr(prefix.size()) : "";
}

inline GoldenCase ReadGoldenCase(const std::filesystem::path& path, bool skip_comments = false) {
  GoldenCase golden;
  golden.pipeline = path.parent_path().filename().string();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::istringstream lines(text.str());
  std::string line;
  std::string* section = &golden.input;
  while (std::getline(lines, line)) {
    if (std::string pipeline = AfterPrefix(line, "// pipeline: "); !pipeline.empty()) {
      golden.pipeline = pipeline;
    } else if (line == "// expected:") {
      section = &golden.expected;
    } else if (std::string error = AfterPrefix(line, "// error: "); !error.empty()) {
      golden.expected_error = error;
    } else if (!(skip_comments && line.rfind("// ", 0) == 0)) {
      *section += line + "\n";
    }
  }
  return golden;
}

/// The files under `dir` ending in `extension`, relative to it, sorted.
inline std::vector<std::string> GoldenCaseFiles(const std::string& dir,
                                                const std::string& extension) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() == extension) {
      files.push_back(std::filesystem::relative(entry.path(), dir).string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// A test name from a case's path: every character that is not alphanumeric becomes '_'.
inline std::string GoldenTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

}  // namespace test_util
}  // namespace kiln

#endif  // KILN_TESTS_CPP_TESTING_GOLDEN_CASE_H_
