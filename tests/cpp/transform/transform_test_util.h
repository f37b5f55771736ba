// Small modules and helpers shared by the transform tests.
#ifndef KILN_TESTS_CPP_TRANSFORM_TRANSFORM_TEST_UTIL_H_
#define KILN_TESTS_CPP_TRANSFORM_TRANSFORM_TEST_UTIL_H_

#include <unistd.h>
#include <kiln/ir/module.h>
#include <kiln/ir/op.h>
#include <kiln/transform/pass.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kiln {
namespace transform {
namespace testing {

/// The op registered by the transform tests (see pass_test.cc).
inline ir::Op TestRelu() { return ir::Op::Get("test.transform.relu"); }

/// @main(x) = relu(@helper(x)); @helper(y) = relu(y); @unused(z) = z.
inline ir::IRModule ModuleWithUnusedFunction() {
  ir::IRModule mod = ir::IRModule::Create();
  const ir::GlobalVar helper("helper");
  const ir::Var y("y");
  mod.Add(helper, ir::Function({y}, ir::Call(TestRelu(), {y})));
  const ir::Var z("z");
  mod.Add(ir::GlobalVar("unused"), ir::Function({z}, z));
  const ir::Var x("x");
  mod.Add(ir::GlobalVar("main"), ir::Function({x}, ir::Call(TestRelu(), {ir::Call(helper, {x})})));
  return mod;
}

/// A fresh, empty folder under the system temp folder.
inline std::string FreshDir(const std::string& tag) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("kiln_transform_test_" + tag + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A module pass named `name` that appends `name` to `*log` and returns the module unchanged.
inline Pass LoggingPass(const std::string& name, std::vector<std::string>* log,
                        int64_t opt_level = 0, bool required = false) {
  return CreateModulePass(
      [name, log](const ir::IRModule& mod, const PassContext& /*ctx*/) {
        log->push_back(name);
        return mod;
      },
      PassInfo{name, opt_level, required});
}

}  // namespace testing
}  // namespace transform
}  // namespace kiln

#endif  // KILN_TESTS_CPP_TRANSFORM_TRANSFORM_TEST_UTIL_H_
