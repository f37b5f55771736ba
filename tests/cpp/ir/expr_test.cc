#include <kiln/ir/expr.h>
#include <kiln/ir/op.h>
#include <gtest/gtest.h>

#include "ir_test_util.h"

namespace kiln {
namespace ir {
namespace {

using testing::F32;
using testing::HostTensor;

/// The kind of the Error `action` throws, or "no error".
std::string ErrorKindOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.kind();
  }
  return "no error";
}

TEST(VarTest, IdentityIsByObjectNotByName) {
  const Var a("x", F32({1}));
  const Var b("x", F32({1}));
  EXPECT_FALSE(a.same_as(b));
  EXPECT_EQ(a->name_hint(), "x");
  EXPECT_EQ(a->GetTypeKey(), "kiln.ir.Var");
  EXPECT_FALSE(Var("y")->type_annotation().defined());
  EXPECT_EQ(ErrorKindOf([] { Var(""); }), "ValueError");
}

TEST(ExprTest, CheckedTypeIsACacheThatStartsEmpty) {
  const Var x("x");
  EXPECT_FALSE(x->checked_type().defined());
  const TensorType type = F32({4});
  x->set_checked_type(type);
  EXPECT_TRUE(x->checked_type().same_as(type));
}

TEST(ConstantTest, SharesTheTensorAndRejectsNull) {
  const Tensor data = HostTensor({1, 2}, {2});
  EXPECT_TRUE(Constant(data)->data().same_as(data));
  EXPECT_EQ(ErrorKindOf([] { Constant{Tensor()}; }), "ValueError");
}

TEST(CallTest, HoldsCalleeArgumentsAndAttributes) {
  const Var x("x");
  const GlobalVar callee("f");
  const Call call(callee, {x, x}, {{"axis", int64_t{1}}});
  EXPECT_TRUE(call->op().same_as(callee));
  EXPECT_EQ(call->args().size(), 2);
  EXPECT_EQ(call->attrs().at("axis").cast<int64_t>(), 1);
  EXPECT_TRUE(call->IsInstance<ExprObj>());
}

TEST(CallTest, NullCalleeOrArgumentIsAValueError) {
  EXPECT_EQ(ErrorKindOf([] { Call(Expr(), {}); }), "ValueError");
  EXPECT_EQ(ErrorKindOf([] { Call(GlobalVar("f"), {Var("x"), Expr()}); }), "ValueError");
}

TEST(TupleTest, NullFieldIsAValueError) {
  EXPECT_EQ(Tuple({Var("a"), Var("b")})->fields().size(), 2);
  EXPECT_EQ(ErrorKindOf([] { Tuple({Expr()}); }), "ValueError");
}

TEST(TupleGetItemTest, IndexMustBeNonNegativeAndInRangeOfALiteralTuple) {
  const Tuple pair({Var("a"), Var("b")});
  EXPECT_EQ(TupleGetItem(pair, 1)->index(), 1);
  EXPECT_EQ(ErrorKindOf([&] { TupleGetItem(pair, -1); }), "IndexError");
  EXPECT_EQ(ErrorKindOf([&] { TupleGetItem(pair, 2); }), "IndexError");
  // A non-literal tuple's size is known only after type inference.
  EXPECT_EQ(TupleGetItem(Var("t"), 5)->index(), 5);
  EXPECT_EQ(ErrorKindOf([] { TupleGetItem(Expr(), 0); }), "ValueError");
}

TEST(GlobalVarTest, EmptyNameIsAValueError) {
  EXPECT_EQ(GlobalVar("main")->name_hint(), "main");
  EXPECT_EQ(ErrorKindOf([] { GlobalVar(""); }), "ValueError");
}

TEST(ExprTest, FreeingALongChainDoesNotRecurse) {
  // 100,000 nested destructors would overflow the default stack without the iterative release.
  Expr chain = Var("x");
  const GlobalVar f("f");
  for (int i = 0; i < 100000; ++i) chain = Call(f, {chain});
  const ObjectRef weak_probe = chain;
  chain = Expr();
  EXPECT_EQ(weak_probe.use_count(), 1u);
}

}  // namespace
}  // namespace ir
}  // namespace kiln
