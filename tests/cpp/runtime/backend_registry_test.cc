#include <kiln/ffi/plugin.h>
#include <kiln/runtime/backend.h>
#include <kiln/runtime/device_api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace kiln {
namespace runtime {
namespace {

namespace fs = std::filesystem;

/// Discovery runs once per process, and ctest runs each test in its own process, so each test
/// sets KILN_RUNTIME_PATH before anything discovers.
class BackendRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln-backends-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Deploy(const char* file, const std::string& as) {
    fs::copy_file(file, dir_ / as, fs::copy_options::overwrite_existing);
  }

  static std::map<std::string, BackendInfo> Discover(const fs::path& path) {
    ::setenv("KILN_RUNTIME_PATH", path.c_str(), 1);
    std::map<std::string, BackendInfo> by_file;
    for (const BackendInfo& info : DiscoverBackends()) {
      by_file[fs::path(info.at("path").cast<String>().str()).filename().string() + ":" +
              info.at("status").cast<String>().str()] = info;
    }
    return by_file;
  }

  fs::path dir_;
};

TEST_F(BackendRegistryTest, ListsBuiltinLoadedFailedAndShadowedWithReasons) {
  Deploy(KILN_NEEDS_MISSING_BACKEND, "libkiln_runtime_needs_missing.so");
  Deploy(KILN_BAD_ABI_PLUGIN, "libkiln_runtime_bad_abi.so");
  Deploy(KILN_OPENCL_BACKEND, "libkiln_runtime_opencl.so");  // also next to libkiln_runtime.so
  auto found = Discover(dir_);

  ASSERT_EQ(found.count("libkiln_runtime.so:builtin"), 1u);
  EXPECT_EQ(found["libkiln_runtime.so:builtin"].at("name").cast<String>(), "cpu");
  ASSERT_EQ(found.count("libkiln_runtime_opencl.so:loaded"), 1u);
  EXPECT_EQ(found.count("libkiln_runtime_opencl.so:shadowed"), 1u);

  ASSERT_EQ(found.count("libkiln_runtime_needs_missing.so:failed"), 1u);
  const std::string missing =
      found["libkiln_runtime_needs_missing.so:failed"].at("reason").cast<String>().str();
  EXPECT_NE(missing.find("libfake_vendor_runtime.so"), std::string::npos) << missing;

  ASSERT_EQ(found.count("libkiln_runtime_bad_abi.so:failed"), 1u);
  const std::string abi =
      found["libkiln_runtime_bad_abi.so:failed"].at("reason").cast<String>().str();
  EXPECT_NE(abi.find("built for Kiln ABI"), std::string::npos) << abi;

  // Absent backends are not listed, and their devices simply do not exist.
  for (const auto& [key, info] : found) EXPECT_NE(info.at("name").cast<String>(), "vulkan");
  EXPECT_FALSE(DeviceExists({kDLVulkan, 0}));
}

TEST_F(BackendRegistryTest, LoadingAMissingLibrarySaysWhereItLooked) {
  Discover(dir_);
  const std::string text =
      LoadRuntimeLibrary("libkiln_runtime_vulkan.so").value_or("(loaded: not expected)");
  EXPECT_NE(text.find("was not found"), std::string::npos) << text;
  EXPECT_NE(text.find(dir_.string()), std::string::npos) << text;
}

TEST_F(BackendRegistryTest, LoadingABrokenBackendSaysWhy) {
  Deploy(KILN_NEEDS_MISSING_BACKEND, "libkiln_runtime_needs_missing.so");
  Discover(dir_);
  const std::string text =
      LoadRuntimeLibrary("libkiln_runtime_needs_missing.so").value_or("(loaded: not expected)");
  EXPECT_NE(text.find("failed to load"), std::string::npos) << text;
}

}  // namespace
}  // namespace runtime
}  // namespace kiln
