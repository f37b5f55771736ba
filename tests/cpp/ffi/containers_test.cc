#include <kiln/ffi/array.h>
#include <kiln/ffi/map.h>
#include <kiln/ffi/shape.h>
#include <gtest/gtest.h>

namespace kiln {
namespace {

TEST(StringTest, StoresBytesWithTerminator) {
  String s(std::string_view("a\0b", 3));
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.c_str()[3], '\0');
  EXPECT_EQ(s.view(), std::string_view("a\0b", 3));
  EXPECT_EQ(String("abc"), String("abc"));
  EXPECT_LT(String("abc"), String("abd"));
}

TEST(BytesTest, IsDistinctFromString) {
  Bytes b("\x01\x02", 2);
  Any any(b);
  EXPECT_EQ(any.type_index(), kKilnTypeBytes);
  EXPECT_FALSE(any.as<String>().has_value());
  EXPECT_EQ(any.cast<Bytes>().view(), std::string_view("\x01\x02", 2));
}

TEST(ShapeTest, ElementsAndBounds) {
  Shape shape{2, 3, 4};
  EXPECT_EQ(shape.ndim(), 3);
  EXPECT_EQ(shape.NumElements(), 24);
  EXPECT_EQ(shape[1], 3);
  EXPECT_THROW(shape.at(3), Error);
  EXPECT_EQ(Shape({}).NumElements(), 1);
  EXPECT_EQ(shape, Shape(std::vector<int64_t>{2, 3, 4}));
  EXPECT_THROW(Shape(nullptr, -1), Error);
}

TEST(ArrayTest, CopyOnWriteLeavesOtherHandlesUnchanged) {
  Array<int64_t> a{1, 2, 3};
  Array<int64_t> b = a;
  b.push_back(4);
  EXPECT_EQ(a.size(), 3);
  EXPECT_EQ(b.size(), 4);
  EXPECT_EQ(b[3], 4);
  b.Set(0, 10);
  EXPECT_EQ(a[0], 1);
  EXPECT_EQ(b[0], 10);
  EXPECT_THROW(a.at(3), Error);
}

TEST(ArrayTest, CAbiLayoutMirrorsContents) {
  Array<String> names{"x", "y"};
  const auto* c_array = reinterpret_cast<const KilnArrayObject*>(names.get());
  ASSERT_EQ(c_array->size, 2);
  EXPECT_EQ(c_array->data[1].type_index, kKilnTypeString);
  names.push_back("z");
  c_array = reinterpret_cast<const KilnArrayObject*>(names.get());
  EXPECT_EQ(c_array->size, 3);
}

TEST(ArrayTest, TypedCastChecksEveryElement) {
  Array<Any> mixed{Any(1), Any(String("two"))};
  Any any(mixed);
  EXPECT_TRUE(any.as<Array<Any>>().has_value());
  EXPECT_FALSE(any.as<Array<int64_t>>().has_value());
  Any ints(Array<int64_t>{1, 2});
  EXPECT_EQ(ints.cast<Array<int64_t>>()[1], 2);
}

TEST(MapTest, KeepsInsertionOrderAndComparesStringsByContent) {
  Map<String, int64_t> map;
  map.Set("b", 2);
  map.Set("a", 1);
  map.Set(String(std::string("b")), 3);  // same content, another object: replaces
  EXPECT_EQ(map.size(), 2);
  std::vector<std::string> keys;
  for (const auto& [key, value] : map) keys.push_back(key.str());
  EXPECT_EQ(keys, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(map.at("b"), 3);
  EXPECT_EQ(map.Get("zzz"), std::nullopt);
}

TEST(MapTest, MissingKeyErrorNamesTheKey) {
  Map<String, int64_t> map{{"present", 1}};
  try {
    map.at("absent");
    FAIL() << "expected a KeyError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "KeyError");
    EXPECT_NE(error.message().find("'absent'"), std::string::npos) << error.message();
  }
}

TEST(MapTest, CopyOnWrite) {
  Map<String, int64_t> a{{"k", 1}};
  Map<String, int64_t> b = a;
  b.Set("k", 2);
  EXPECT_EQ(a.at("k"), 1);
  EXPECT_EQ(b.at("k"), 2);
}

}  // namespace
}  // namespace kiln
