#include <kiln/ffi/plugin.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

namespace kiln {
namespace {

std::string LoadErrorOf(const std::string& path) {
  try {
    LoadPlugin(path);
  } catch (const Error& error) {
    return error.message() + "\n" + error.context();
  }
  return "<loaded>";
}

TEST(PluginTest, LoadRegistersFunctionsAndReportsThem) {
  EXPECT_FALSE(Function::GetGlobal("testing.add").has_value());
  PluginInfo info = LoadPlugin(KILN_TESTING_PLUGIN);
  EXPECT_EQ(info.at("status").cast<String>(), "loaded");
  EXPECT_EQ(info.at("name").cast<String>(), "testing");
  EXPECT_EQ(info.at("abi_major").cast<int>(), KILN_ABI_VERSION_MAJOR);
  EXPECT_EQ(Function::GetGlobalRequired("testing.add")(2, 3).cast<int64_t>(), 5);
  Array<String> functions = info.at("functions").cast<Array<String>>();
  EXPECT_GT(functions.size(), 5);
  const char* owner = nullptr;
  ASSERT_EQ(kiln_func_get_global_owner("testing.add", &owner), 0);
  EXPECT_EQ(std::filesystem::path(owner), std::filesystem::canonical(KILN_TESTING_PLUGIN));
}

TEST(PluginTest, SecondLoadIsANoOp) {
  PluginInfo first = LoadPlugin(KILN_TESTING_PLUGIN);
  PluginInfo second = LoadPlugin(KILN_TESTING_PLUGIN);
  EXPECT_TRUE(first.same_as(second));
  EXPECT_EQ(ListPlugins().size(), 1);
}

TEST(PluginTest, MismatchedAbiIsRefusedBeforeItRegisters) {
  const std::string message = LoadErrorOf(KILN_BAD_ABI_PLUGIN);
  EXPECT_NE(message.find("libkiln_bad_abi.so"), std::string::npos) << message;
  EXPECT_NE(message.find("built for Kiln ABI " + std::to_string(KILN_ABI_VERSION_MAJOR + 1)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("this Kiln has ABI " + std::to_string(KILN_ABI_VERSION_MAJOR)),
            std::string::npos)
      << message;
  EXPECT_FALSE(Function::GetGlobal("bad_abi.never_registered").has_value());
  EXPECT_EQ(ListPlugins()[0].at("status").cast<String>(), "failed");
}

TEST(PluginTest, FailingInitializationIsRolledBack) {
  const std::string message = LoadErrorOf(KILN_THROWING_PLUGIN);
  EXPECT_NE(message.find("failed to initialize on purpose"), std::string::npos) << message;
  EXPECT_NE(message.find("rolled back"), std::string::npos) << message;
  EXPECT_FALSE(Function::GetGlobal("throwing.registered_before_failure").has_value());
  // The process keeps working: another plugin still loads.
  LoadPlugin(KILN_TESTING_PLUGIN);
  EXPECT_EQ(Function::GetGlobalRequired("testing.add")(1, 1).cast<int64_t>(), 2);
}

TEST(PluginTest, DuplicateNameAcrossPluginsNamesBothFiles) {
  LoadPlugin(KILN_TESTING_PLUGIN);
  const std::string message = LoadErrorOf(KILN_DUPLICATE_PLUGIN);
  EXPECT_NE(message.find("libkiln_testing.so"), std::string::npos) << message;
  EXPECT_NE(message.find("libkiln_duplicate.so"), std::string::npos) << message;
  EXPECT_FALSE(Function::GetGlobal("duplicate.registered_first").has_value());
  EXPECT_EQ(Function::GetGlobalRequired("testing.add")(5, 3).cast<int64_t>(), 8);
}

TEST(PluginTest, MissingFileAndNonPluginLibraryAreClearErrors) {
  EXPECT_NE(LoadErrorOf("/no/such/libkiln_x.so").find("/no/such/libkiln_x.so"), std::string::npos);
  const std::string message = LoadErrorOf(KILN_RUNTIME_LIBRARY);
  EXPECT_NE(message.find("is not a Kiln plugin"), std::string::npos) << message;
}

TEST(PluginTest, DiscoveryLoadsPluginPathAndRecordsFailures) {
  const std::string dir = std::filesystem::path(KILN_TESTING_PLUGIN).parent_path().string();
  ::setenv("KILN_PLUGIN_PATH", dir.c_str(), 1);
  Array<PluginInfo> found = DiscoverPlugins();
  ::unsetenv("KILN_PLUGIN_PATH");
  int loaded = 0;
  int failed = 0;
  for (const PluginInfo& info : found) {
    (info.at("status").cast<String>() == "loaded" ? loaded : failed) += 1;
  }
  // testing loads; bad_abi, throwing, duplicate and (when built) throwing_op fail, each with its
  // reason kept.
  EXPECT_EQ(loaded, 1);
  EXPECT_EQ(failed, 3 + KILN_HAVE_THROWING_OP_PLUGIN);
  EXPECT_TRUE(Function::GetGlobal("testing.add").has_value());
  for (const PluginInfo& info : found) {
    if (info.at("status").cast<String>() == "failed") {
      EXPECT_FALSE(info.at("reason").cast<String>().empty());
    }
  }
}

TEST(PluginTest, EnsureDiscoversOnceFromManyThreads) {
  ::setenv("KILN_PLUGIN_PATH", KILN_TESTING_PLUGIN, 1);
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i) threads.emplace_back([] { EnsurePluginsDiscovered(); });
  for (std::thread& thread : threads) thread.join();
  // Every thread returned after the one scan: the testing plugin is there for all of them.
  EXPECT_TRUE(Function::GetGlobal("testing.add").has_value());
  const int64_t after_first = ListPlugins().size();
  // A later call does not scan again: a plugin put on the path now is not loaded.
  ::setenv("KILN_PLUGIN_PATH", KILN_DUPLICATE_PLUGIN, 1);
  EnsurePluginsDiscovered();
  EXPECT_EQ(ListPlugins().size(), after_first);
  // An explicit discovery does, and records the duplicate plugin's refusal.
  DiscoverPlugins();
  ::unsetenv("KILN_PLUGIN_PATH");
  EXPECT_EQ(ListPlugins().size(), after_first + 1);
}

}  // namespace
}  // namespace kiln
