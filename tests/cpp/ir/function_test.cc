#include <kiln/ir/function.h>
#include <gtest/gtest.h>

#include "ir_test_util.h"

namespace kiln {
namespace ir {
namespace {

using testing::F32;

Function Identity() {
  const Var x("x", F32({2}));
  return Function({x}, x, F32({2}));
}

TEST(FunctionTest, HoldsParamsBodyAndResultType) {
  const Function f = Identity();
  ASSERT_EQ(f->params().size(), 1);
  EXPECT_TRUE(f->body().same_as(f->params()[0]));
  EXPECT_TRUE(f->ret_type().defined());
  EXPECT_TRUE(f->attrs().empty());
}

TEST(FunctionTest, RepeatedParameterOrNullBodyIsAValueError) {
  const Var x("x");
  try {
    Function({x, x}, x);
    FAIL() << "expected a ValueError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "ValueError");
    EXPECT_NE(error.message().find("parameter 1 (%x) appears more than once"), std::string::npos);
  }
  EXPECT_THROW(Function({x}, Expr()), Error);
  EXPECT_THROW(Function({Var()}, x), Error);
}

TEST(FunctionTest, WithAttrReturnsANewFunctionAndLeavesThisOneUnchanged) {
  const Function f = Identity();
  const Function g = f.WithAttr(attr::kCompiler, String("dnnl")).WithAttr(attr::kPrimitive, 1);
  EXPECT_FALSE(f.same_as(g));
  EXPECT_TRUE(f->attrs().empty());
  EXPECT_EQ(g.GetAttr<String>(attr::kCompiler), String("dnnl"));
  EXPECT_EQ(g.GetAttr<int64_t>(attr::kPrimitive), 1);
  EXPECT_FALSE(g.GetAttr<String>(attr::kGlobalSymbol).has_value());
  EXPECT_TRUE(g->body().same_as(f->body()));
}

TEST(FunctionTest, GetAttrOfTheWrongTypeIsATypeError) {
  const Function f = Identity().WithAttr(attr::kComposite, String("dnnl.conv2d_relu"));
  EXPECT_THROW(f.GetAttr<int64_t>(attr::kComposite), Error);
}

TEST(FunctionTest, KnownAttributesAreTypeChecked) {
  const Function f = Identity();
  EXPECT_THROW(f.WithAttr(attr::kCompiler, 3), Error);
  EXPECT_THROW(f.WithAttr(attr::kGlobalSymbol, 1.5), Error);
  EXPECT_THROW(f.WithAttr(attr::kPrimitive, 2), Error);
  EXPECT_THROW(Function({}, Var("y"), Type(), {{attr::kComposite, int64_t{1}}}), Error);
  // Attributes the compiler does not read are free-form.
  EXPECT_EQ(f.WithAttr("my.note", 42).GetAttr<int64_t>("my.note"), 42);
}

}  // namespace
}  // namespace ir
}  // namespace kiln
