#include <kiln/ffi/any.h>
#include <kiln/ffi/array.h>
#include <gtest/gtest.h>

namespace kiln {
namespace {

TEST(AnyTest, LayoutMatchesTheCAbi) {
  static_assert(sizeof(Any) == 16 && sizeof(AnyView) == 16);
  EXPECT_EQ(offsetof(KilnAny, v_int64), 8u);
  EXPECT_EQ(sizeof(KilnObject), 24u);
}

TEST(AnyTest, PlainValuesRoundTrip) {
  EXPECT_EQ(Any(int64_t{42}).cast<int64_t>(), 42);
  EXPECT_EQ(Any(true).cast<bool>(), true);
  EXPECT_DOUBLE_EQ(Any(2.5).cast<double>(), 2.5);
  EXPECT_TRUE(Any(nullptr).is_none());
  DLDevice device{kDLCPU, 3};
  EXPECT_EQ(Any(device).cast<DLDevice>().device_id, 3);
  DLDataType dtype{kDLFloat, 32, 1};
  EXPECT_EQ(Any(dtype).cast<DLDataType>().bits, 32);
}

TEST(AnyTest, NumericConversionsFollowPython) {
  EXPECT_DOUBLE_EQ(Any(3).cast<double>(), 3.0);                   // int -> float is fine
  EXPECT_EQ(Any(true).cast<int>(), 1);                            // bool -> int is fine
  EXPECT_FALSE(Any(1.5).as<int64_t>().has_value());               // float -> int is not
  EXPECT_FALSE(Any(int64_t{1} << 40).as<int32_t>().has_value());  // out of range
  EXPECT_FALSE(Any(-1).as<uint32_t>().has_value());
}

TEST(AnyTest, CastErrorNamesBothTypes) {
  try {
    Any(1.5).cast<String>();
    FAIL() << "expected a TypeError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "TypeError");
    EXPECT_NE(error.message().find("`float`"), std::string::npos) << error.message();
    EXPECT_NE(error.message().find("`str`"), std::string::npos) << error.message();
  }
}

TEST(AnyTest, BorrowedStringBecomesOwnedString) {
  std::string text = "hello";
  AnyView view(text);
  EXPECT_EQ(view.type_index(), kKilnTypeRawStr);
  Any owned(view);
  text = "changed";  // the owned copy must not see this
  EXPECT_EQ(owned.type_index(), kKilnTypeString);
  EXPECT_EQ(owned.cast<std::string>(), "hello");
  EXPECT_EQ(owned.cast<String>(), "hello");
}

TEST(AnyTest, CopiesShareTheObjectAndMovesLeaveNone) {
  String s("shared");
  Any a(s);
  EXPECT_EQ(s.use_count(), 2u);
  Any b = a;
  EXPECT_EQ(s.use_count(), 3u);
  Any c = std::move(b);
  EXPECT_TRUE(b.is_none());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(s.use_count(), 3u);
  c = Any();
  a = Any();
  EXPECT_EQ(s.use_count(), 1u);
}

TEST(AnyTest, OptionalAcceptsNone) {
  EXPECT_EQ(Any().cast<std::optional<int>>(), std::nullopt);
  EXPECT_EQ(Any(7).cast<std::optional<int>>(), 7);
  EXPECT_FALSE(Any(String("x")).as<std::optional<int>>().has_value());
  EXPECT_FALSE(Any().as<String>().has_value());  // None is not a String
}

TEST(AnyTest, ReleaseRawHandsOwnershipToC) {
  String s("owned by C");
  KilnAny raw = Any(s).ReleaseRaw();
  EXPECT_EQ(s.use_count(), 2u);
  Any back = Any::FromOwnedRaw(raw);
  EXPECT_EQ(s.use_count(), 2u);
  back = Any();
  EXPECT_EQ(s.use_count(), 1u);
}

}  // namespace
}  // namespace kiln
