#include <kiln/ffi/registry.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace kiln {
namespace {

KILN_REGISTER_GLOBAL("registry_test.static").set_body_typed([](int64_t x) { return x * 3; });

TEST(RegistryTest, StaticRegistrationIsCallableByName) {
  EXPECT_EQ(Function::GetGlobalRequired("registry_test.static")(5).cast<int64_t>(), 15);
  const char* owner = nullptr;
  ASSERT_EQ(kiln_func_get_global_owner("registry_test.static", &owner), 0);
  EXPECT_NE(std::string(owner).find("kiln_ffi_tests"), std::string::npos) << owner;
}

TEST(RegistryTest, SetGetListRemove) {
  Function f = Function::FromTyped([]() { return 1; });
  Function::SetGlobal("registry_test.temp", f);
  EXPECT_TRUE(Function::GetGlobal("registry_test.temp").has_value());
  std::vector<std::string> names = Function::ListGlobalNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "registry_test.temp"), names.end());
  Function::RemoveGlobal("registry_test.temp");
  EXPECT_FALSE(Function::GetGlobal("registry_test.temp").has_value());
  EXPECT_THROW(Function::RemoveGlobal("registry_test.temp"), Error);
}

TEST(RegistryTest, DuplicateNameNamesBothOwnersAndKeepsTheFirst) {
  Function first = Function::FromTyped([]() { return 1; });
  Function second = Function::FromTyped([]() { return 2; });
  ASSERT_EQ(kiln_func_set_global("registry_test.dup", detail::ObjectUnsafe::Header(first.get()), 0,
                                 "owner-one.so"),
            0);
  EXPECT_EQ(kiln_func_set_global("registry_test.dup", detail::ObjectUnsafe::Header(second.get()), 0,
                                 "owner-two.so"),
            -1);
  Error error = detail::TakeRaised();
  EXPECT_EQ(error.kind(), "KeyError");
  EXPECT_NE(error.message().find("owner-one.so"), std::string::npos) << error.message();
  EXPECT_NE(error.message().find("owner-two.so"), std::string::npos) << error.message();
  EXPECT_EQ(Function::GetGlobalRequired("registry_test.dup")().cast<int>(), 1);
  Function::SetGlobal("registry_test.dup", second, /*allow_override=*/true);
  EXPECT_EQ(Function::GetGlobalRequired("registry_test.dup")().cast<int>(), 2);
  Function::RemoveGlobal("registry_test.dup");
}

TEST(RegistryTest, UnknownNameSuggestsCloseNames) {
  try {
    Function::GetGlobalRequired("registry_test.statc");
    FAIL() << "expected a KeyError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "KeyError");
    EXPECT_NE(error.message().find("did you mean 'registry_test.static'"), std::string::npos)
        << error.message();
  }
}

TEST(RegistryTest, ConcurrentRegistrationAndLookupAreSafe) {
  constexpr int kThreads = 4;
  constexpr int kNamesPerThread = 200;
  std::atomic<int> found{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &found] {
      for (int i = 0; i < kNamesPerThread; ++i) {
        const std::string name =
            "registry_test.thread" + std::to_string(t) + "." + std::to_string(i);
        Function::SetGlobal(name.c_str(), Function::FromTyped([i]() { return i; }));
        if (Function::GetGlobalRequired(name.c_str())().cast<int>() == i) ++found;
        Function::GetGlobal("registry_test.static");  // readers alongside writers
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(found.load(), kThreads * kNamesPerThread);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kNamesPerThread; ++i) {
      const std::string name = "registry_test.thread" + std::to_string(t) + "." + std::to_string(i);
      Function::RemoveGlobal(name.c_str());
    }
  }
}

TEST(RegistryTest, RegisteringANonFunctionIsATypeError) {
  String not_a_function("x");
  EXPECT_EQ(kiln_func_set_global("registry_test.bad",
                                 detail::ObjectUnsafe::Header(not_a_function.get()), 0, nullptr),
            -1);
  EXPECT_EQ(detail::TakeRaised().kind(), "TypeError");
}

}  // namespace
}  // namespace kiln
