#include <kiln/ffi/plugin.h>
#include <kiln/ir/op.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "../testing/expect_error.h"

namespace kiln {
namespace ir {
namespace {

KILN_REGISTER_OP("test.ir.relu").set_attr("pattern_kind", 0);
KILN_REGISTER_OP("test.ir.conv2d");

TEST(OpRegistryTest, GetReturnsOneObjectPerName) {
  const Op relu = Op::Get("test.ir.relu");
  EXPECT_TRUE(relu.same_as(Op::Get("test.ir.relu")));
  EXPECT_EQ(relu->name(), "test.ir.relu");
  EXPECT_EQ(relu->GetTypeKey(), "kiln.ir.Op");
  EXPECT_EQ(relu.GetAttr<int64_t>("pattern_kind"), 0);
}

TEST(OpRegistryTest, UnknownOpSuggestsCloseNames) {
  try {
    Op::Get("test.ir.rellu");
    FAIL() << "expected a KeyError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "KeyError");
    EXPECT_NE(error.message().find("unknown op 'test.ir.rellu'"), std::string::npos);
    EXPECT_NE(error.message().find("did you mean: 'test.ir.relu'"), std::string::npos);
  }
  // The same last dotted part is a suggestion too, whatever the namespace.
  try {
    Op::Get("mylib.conv2d");
    FAIL() << "expected a KeyError";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("'test.ir.conv2d'"), std::string::npos);
  }
}

TEST(OpRegistryTest, DuplicateRegistrationIsAKeyError) {
  try {
    Op::Register("test.ir.relu");
    FAIL() << "expected a KeyError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "KeyError");
    EXPECT_NE(error.message().find("already registered"), std::string::npos);
  }
}

TEST(OpRegistryTest, AttributesAddedLaterAreSeenThroughExistingHandles) {
  const Op conv = Op::Get("test.ir.conv2d");
  const Map<String, Any> before = conv.attrs();
  detail::SetOpAttr("test.ir.conv2d", "layout", String("NCHW"), false);
  EXPECT_EQ(conv.GetAttr<String>("layout"), String("NCHW"));
  EXPECT_TRUE(before.empty()) << "a snapshot never changes";
  EXPECT_THROW(detail::SetOpAttr("test.ir.conv2d", "layout", String("NHWC"), false), Error);
  detail::SetOpAttr("test.ir.conv2d", "layout", String("NHWC"), true);
  EXPECT_EQ(conv.GetAttr<String>("layout"), String("NHWC"));
}

TEST(OpRegistryTest, ConcurrentRegistrationAndLookupAreSafe) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) {
        const std::string name = "test.ir.threaded_" + std::to_string(t) + "_" + std::to_string(i);
        Op::Register(name).set_attr("index", i);
        EXPECT_EQ(Op::Get(name).GetAttr<int64_t>("index"), i);
        EXPECT_EQ(Op::Get("test.ir.relu")->name(), "test.ir.relu");
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::vector<std::string> names = Op::ListNames();
  EXPECT_EQ(
      std::count_if(names.begin(), names.end(),
                    [](const std::string& n) { return n.rfind("test.ir.threaded_", 0) == 0; }),
      200);
}

TEST(OpRegistryTest, FailedPluginLeavesNoOpsOrAttributesBehind) {
  test_util::ExpectError([] { LoadPlugin(KILN_THROWING_OP_PLUGIN); }, "RuntimeError",
                         {"failed to initialize on purpose"});
  const std::vector<std::string> names = Op::ListNames();
  EXPECT_EQ(std::count(names.begin(), names.end(), "throwing_op.relu"), 0);
  EXPECT_FALSE(Op::Get("exp").attrs().count(String("throwing_op.marker")));
  EXPECT_EQ(Op::Get("exp").pattern(), OpPattern::kElemWise);  // what Kiln set stays
}

TEST(OpRegistryTest, ExtendingAnUnknownOpIsAKeyError) {
  test_util::ExpectError([] { OpRegisterer::Extend("test.ir.no_such_op").set_attr("k", 1); },
                         "KeyError", {"unknown op 'test.ir.no_such_op'"});
}

}  // namespace
}  // namespace ir
}  // namespace kiln
