#include <kiln/ffi/function.h>
#include <gtest/gtest.h>

namespace kiln {
namespace {

std::string MessageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& error) {
    return error.kind() + ": " + error.message();
  }
  return "<no error>";
}

TEST(FunctionTest, TypedFunctionConvertsArgumentsAndResult) {
  Function add = Function::FromTyped([](int64_t a, double b) { return a + b; }, "add");
  EXPECT_DOUBLE_EQ(add(1, 2.5).cast<double>(), 3.5);
  Function greet = Function::FromTyped([](const String& who) { return "hi " + who.str(); });
  EXPECT_EQ(greet("kiln").cast<std::string>(), "hi kiln");
  Function nothing = Function::FromTyped([]() {});
  EXPECT_TRUE(nothing().is_none());
}

TEST(FunctionTest, WrongArgumentTypeNamesFunctionIndexAndTypes) {
  Function add = Function::FromTyped([](int64_t a, int64_t b) { return a + b; }, "math.add");
  const std::string message = MessageOf([&] { add(1, "two"); });
  EXPECT_NE(message.find("TypeError"), std::string::npos) << message;
  EXPECT_NE(message.find("argument #1"), std::string::npos) << message;
  EXPECT_NE(message.find("math.add(int, int)"), std::string::npos) << message;
  EXPECT_NE(message.find("expected int, got str"), std::string::npos) << message;
}

TEST(FunctionTest, WrongArgumentCountIsATypeError) {
  Function add = Function::FromTyped([](int64_t a, int64_t b) { return a + b; }, "math.add");
  const std::string message = MessageOf([&] { add(1); });
  EXPECT_NE(message.find("expects 2 arguments, but 1 were given"), std::string::npos) << message;
}

TEST(FunctionTest, ErrorsCrossTheCAbiWithKindAndContext) {
  Function inner =
      Function::FromTyped([](int value) { KILN_THROW(ValueError) << "bad value " << value; });
  Function outer = Function::FromTyped([inner]() -> Any {
    try {
      return inner(7);
    } catch (const Error& error) {
      throw error.WithContext("while calling inner");
    }
  });
  try {
    outer();
    FAIL() << "expected a ValueError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "ValueError");
    EXPECT_EQ(error.message(), "bad value 7");
    EXPECT_NE(error.context().find("function_test.cc"), std::string::npos) << error.context();
    EXPECT_NE(error.context().find("while calling inner"), std::string::npos);
  }
}

TEST(FunctionTest, StandardExceptionsBecomeRuntimeErrors) {
  Function f = Function::FromTyped([]() -> int { throw std::out_of_range("past the end"); });
  EXPECT_EQ(MessageOf([&] { f(); }), "RuntimeError: past the end");
}

TEST(FunctionTest, PackedFunctionSeesAllArguments) {
  Function count = Function::FromPacked([](const AnyView* args, int32_t num_args, Any* result) {
    int64_t total = 0;
    for (int32_t i = 0; i < num_args; ++i) total += args[i].cast<int64_t>();
    *result = total;
  });
  EXPECT_EQ(count(1, 2, 3, 4).cast<int64_t>(), 10);
  EXPECT_EQ(count().cast<int64_t>(), 0);
}

TEST(FunctionTest, CCallbackWrapsIntoFunctionAndFreesItsResource) {
  static int deleted = 0;
  int offset = 5;
  KilnObjectHandle handle = nullptr;
  ASSERT_EQ(kiln_function_create(
                &offset,
                [](void* resource, const KilnAny* args, int32_t, KilnAny* result) {
                  result->type_index = kKilnTypeInt;
                  result->v_int64 = args[0].v_int64 + *static_cast<int*>(resource);
                  return 0;
                },
                [](void*) { ++deleted; }, &handle),
            0);
  {
    Function f = Function::FromUnchecked(
        ObjectPtr<Object>::FromOwned(detail::ObjectUnsafe::FromHeader(handle)));
    EXPECT_EQ(f(10).cast<int64_t>(), 15);
  }
  EXPECT_EQ(deleted, 1);
}

TEST(FunctionTest, TypedFunctionWrapperCastsTheResult) {
  TypedFunction<int64_t(int64_t)> twice([](int64_t x) { return 2 * x; }, "twice");
  EXPECT_EQ(twice(21), 42);
}

TEST(FunctionTest, FunctionsPassAsArguments) {
  Function apply = Function::FromTyped([](const Function& f, int64_t x) { return f(x); });
  Function inc = Function::FromTyped([](int64_t x) { return x + 1; });
  EXPECT_EQ(apply(inc, 41).cast<int64_t>(), 42);
}

}  // namespace
}  // namespace kiln
