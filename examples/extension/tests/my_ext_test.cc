// Loads libkiln_my_ext.so the way any Kiln host does and calls its functions by name.
#include <kiln/ffi/plugin.h>

#include <gtest/gtest.h>

#include <cstdint>

namespace {

class MyExtTest : public ::testing::Test {
 protected:
  // Loading the same file again is a no-op, so every test may load it.
  void SetUp() override { kiln::LoadPlugin(MY_EXT_PLUGIN); }
};

TEST_F(MyExtTest, AddOneAddsOne) {
  EXPECT_EQ(kiln::Function::GetGlobalRequired("my_ext.add_one")(41).cast<int64_t>(), 42);
}

TEST_F(MyExtTest, GreetGreetsByName) {
  kiln::String greeting =
      kiln::Function::GetGlobalRequired("my_ext.greet")("Kiln").cast<kiln::String>();
  EXPECT_EQ(greeting, "Hello, Kiln!");
}

TEST_F(MyExtTest, LoadReportsTheRegisteredFunctions) {
  kiln::PluginInfo info = kiln::LoadPlugin(MY_EXT_PLUGIN);
  EXPECT_EQ(info.at("name").cast<kiln::String>(), "my_ext");
  EXPECT_EQ(info.at("status").cast<kiln::String>(), "loaded");
}

TEST_F(MyExtTest, WrongArgumentTypeIsATypeError) {
  try {
    kiln::Function::GetGlobalRequired("my_ext.add_one")("not a number");
    FAIL() << "expected a TypeError";
  } catch (const kiln::Error& error) {
    EXPECT_EQ(error.kind(), "TypeError");
    EXPECT_NE(error.message().find("my_ext.add_one"), std::string::npos) << error.message();
  }
}

}  // namespace
