#include <kiln/ffi/plugin.h>
#include <kiln/runtime/artifact.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

namespace kiln {
namespace runtime {
namespace {

namespace fs = std::filesystem;

constexpr const char* kAddOneSource = R"(
#include <kiln/ffi/c_api.h>
int add_one(void* self, const KilnAny* args, int32_t num_args, KilnAny* result) {
  if (num_args != 1 || args[0].type_index != kKilnTypeInt) {
    return kiln_error_set_raised_from_cstr("TypeError", "add_one takes one int");
  }
  result->type_index = kKilnTypeInt;
  result->v_int64 = args[0].v_int64 + 1;
  return 0;
}
)";

class ArtifactTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kiln-artifact-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// A host library importing a testing_blob module (whose loader is in libkiln_testing.so).
  Module MixedTree() {
    LoadPlugin(KILN_TESTING_PLUGIN);
    Module root = CSourceModuleCreate(kAddOneSource, {"add_one"});
    root.Import(Function::GetGlobalRequired("testing.BlobModuleCreate")("hello").cast<Module>());
    return root;
  }

  /// Runs kiln_run_artifact in a fresh process; returns its exit code and output.
  static std::pair<int, std::string> RunFresh(const std::string& args) {
    const std::string command = std::string(KILN_RUN_ARTIFACT) + " " + args + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    std::string output;
    std::array<char, 256> chunk{};
    while (fgets(chunk.data(), chunk.size(), pipe) != nullptr) output += chunk.data();
    const int status = pclose(pipe);
    return {WEXITSTATUS(status), output};
  }

  fs::path dir_;
};

TEST_F(ArtifactTest, ExportsAndReloadsInThisProcess) {
  const fs::path path = dir_ / "mixed.so";
  ExportLibrary(MixedTree(), path.string());
  Module loaded = LoadModule(path.string());
  EXPECT_EQ(loaded->kind(), "host_library");
  EXPECT_EQ(loaded.GetFunctionRequired("add_one")(41).cast<int64_t>(), 42);
  EXPECT_EQ(loaded.GetFunctionRequired("get")().cast<std::string>(), "hello");
  ASSERT_EQ(loaded.imports().size(), 1u);
  EXPECT_EQ(loaded.imports()[0]->kind(), "testing_blob");
  try {
    loaded.GetFunctionRequired("add_one")("not an int");
    FAIL() << "expected a TypeError from the generated code";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "TypeError");
  }
}

TEST_F(ArtifactTest, ReloadsInAFreshProcessWithTheRuntimeOnly) {
  const fs::path path = dir_ / "mixed.so";
  ExportLibrary(MixedTree(), path.string());
  const std::string plugin = std::string("--plugin ") + KILN_TESTING_PLUGIN + " ";
  EXPECT_EQ(RunFresh(plugin + path.string() + " add_one 9"),
            std::make_pair(0, std::string("10\n")));
  EXPECT_EQ(RunFresh(plugin + path.string() + " get"), std::make_pair(0, std::string("hello\n")));
}

TEST_F(ArtifactTest, MissingLoaderNamesTheLibraryToInstall) {
  const fs::path path = dir_ / "mixed.so";
  ExportLibrary(MixedTree(), path.string());
  auto [code, output] = RunFresh(path.string() + " add_one 1");  // no testing plugin loaded
  EXPECT_EQ(code, 1);
  EXPECT_NE(output.find("module of kind 'testing_blob'"), std::string::npos) << output;
  EXPECT_NE(output.find("libkiln_testing.so was not found"), std::string::npos) << output;
}

TEST_F(ArtifactTest, CorruptAndTruncatedFilesAreRejected) {
  const fs::path path = dir_ / "mixed.so";
  ExportLibrary(MixedTree(), path.string());
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  // A byte of the embedded data flipped: the checksum catches it.
  const size_t magic = bytes.find(std::string("KILNART\0", 8));
  ASSERT_NE(magic, std::string::npos);
  std::string flipped = bytes;
  flipped[magic + 40] ^= 0x5a;
  std::ofstream(dir_ / "flipped.so", std::ios::binary) << flipped;
  auto [flipped_code, flipped_output] = RunFresh((dir_ / "flipped.so").string() + " add_one 1");
  EXPECT_EQ(flipped_code, 1);
  EXPECT_NE(flipped_output.find("corrupt artifact"), std::string::npos) << flipped_output;

  // Half a file: not even a loadable library.
  std::ofstream(dir_ / "half.so", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto [half_code, half_output] = RunFresh((dir_ / "half.so").string() + " add_one 1");
  EXPECT_EQ(half_code, 1);
  EXPECT_NE(half_output.find("cannot load artifact"), std::string::npos) << half_output;
}

TEST_F(ArtifactTest, FailedExportLeavesNothingBehind) {
  const fs::path path = dir_ / "broken.so";
  Module bad = CSourceModuleCreate("this is not C", {"f"});
  try {
    ExportLibrary(bad, path.string());
    FAIL() << "expected the compiler to fail";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("failed"), std::string::npos) << error.message();
  }
  EXPECT_TRUE(fs::is_empty(dir_)) << "a partial file was left in " << dir_;
}

TEST_F(ArtifactTest, CSourceRunsBeforeExportAndItsFunctionsOutliveTheModule) {
  std::optional<Function> add_one;
  {
    Module module = CSourceModuleCreate(kAddOneSource, {"add_one"});
    add_one = module.GetFunction("add_one");
    ASSERT_TRUE(add_one.has_value());
    EXPECT_FALSE(module.GetFunction("missing").has_value());
  }
  // The module is gone; the function keeps the compiled library loaded.
  EXPECT_EQ((*add_one)(int64_t{41}).cast<int64_t>(), 42);
}

TEST_F(ArtifactTest, CSourceCompileErrorBeforeExportShowsTheCompilerOutput) {
  Module bad = CSourceModuleCreate("int f(void) { return undeclared_name; }", {"f"});
  try {
    bad.GetFunction("f");
    FAIL() << "expected the compiler to fail";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "RuntimeError");
    EXPECT_NE(error.message().find("c_source module (f): the C compiler"), std::string::npos)
        << error.message();
    EXPECT_NE(error.message().find("undeclared_name"), std::string::npos) << error.message();
  }
}

TEST_F(ArtifactTest, ModuleWithoutSerializedFormCannotBeExported) {
  LoadPlugin(KILN_TESTING_PLUGIN);
  // A host library loaded from an artifact has no SaveToBytes: re-exporting it is an error.
  const fs::path path = dir_ / "once.so";
  ExportLibrary(CSourceModuleCreate(kAddOneSource, {"add_one"}), path.string());
  Module loaded = LoadModule(path.string());
  EXPECT_THROW(ExportLibrary(loaded, (dir_ / "twice.so").string()), Error);
}

}  // namespace
}  // namespace runtime
}  // namespace kiln
