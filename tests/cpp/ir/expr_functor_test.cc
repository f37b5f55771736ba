#include <kiln/ir/expr_functor.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "ir_test_util.h"

namespace kiln {
namespace ir {
namespace {

using testing::F32;

KILN_REGISTER_OP("test.functor.add");
KILN_REGISTER_OP("test.functor.mul");

Call Add(const Expr& a, const Expr& b) { return Call(Op::Get("test.functor.add"), {a, b}); }

/// Counts the hook calls per node.
class CountingVisitor : public ExprVisitor {
 public:
  std::map<const Object*, int> calls;
  std::vector<const Object*> order;

 protected:
  void VisitVar(const Var& var) override { Record(var); }
  void VisitCall(const Call& call) override { Record(call); }
  void VisitOp(const Op& op) override { Record(op); }
  void VisitTuple(const Tuple& tuple) override { Record(tuple); }

 private:
  void Record(const Expr& expr) {
    ++calls[expr.get()];
    order.push_back(expr.get());
  }
};

TEST(ExprVisitorTest, VisitsEachNodeOfADagOnceChildrenFirst) {
  // shared = x + x; out = (shared + shared, shared)
  const Var x("x", F32({2}));
  const Call shared = Add(x, x);
  const Call sum = Add(shared, shared);
  const Tuple out({sum, shared});
  CountingVisitor visitor;
  visitor.VisitExpr(out);
  EXPECT_EQ(visitor.calls.size(), 5u);  // x, the op, shared, sum, out
  for (const auto& [node, count] : visitor.calls) EXPECT_EQ(count, 1);
  auto position = [&](const Expr& e) {
    return std::find(visitor.order.begin(), visitor.order.end(), e.get()) - visitor.order.begin();
  };
  EXPECT_LT(position(x), position(shared));
  EXPECT_LT(position(shared), position(sum));
  EXPECT_LT(position(sum), position(out));
  // The memo persists: a second walk of a visited graph calls no hook.
  visitor.VisitExpr(sum);
  EXPECT_EQ(visitor.order.size(), 5u);
}

TEST(PostOrderVisitTest, CallsOnEveryNodeOnceIncludingFunctionParts) {
  const Var x("x");
  const Function f({x}, TupleGetItem(Tuple({x, Constant(testing::HostTensor({1}, {1}))}), 0));
  int count = 0;
  PostOrderVisit(f, [&](const Expr& e) {
    ++count;
    if (count == 1) {
      EXPECT_TRUE(e.same_as(x));
    }
  });
  EXPECT_EQ(count, 5);  // x, constant, tuple, item, function
}

TEST(DataflowPostOrderTest, StaysOutOfFunctionsAndHonoursExtraOperands) {
  // out = (a, b), a = x + x, b = f(x) for a function f of its own nodes; b must come after a.
  const Var x("x", F32({2}));
  const Var p("p", F32({2}));
  const Call inside = Add(p, p);
  const Call a = Add(x, x);
  const Call b(Function({p}, inside), {x});
  const Tuple out({b, a});
  const std::vector<Expr> plain = DataflowPostOrder(out);
  EXPECT_EQ(plain.size(), 4u);  // x, a, b, out: not p, nor the call inside f
  EXPECT_TRUE(std::find(plain.begin(), plain.end(), inside) == plain.end());
  auto position = [](const std::vector<Expr>& order, const Expr& e) {
    return std::find(order.begin(), order.end(), e) - order.begin();
  };
  const std::vector<Expr> ordered = DataflowPostOrder(out, [&](const Expr& e) {
    return e.same_as(b) ? std::vector<Expr>{a} : std::vector<Expr>{};
  });
  EXPECT_LT(position(ordered, a), position(ordered, b));
  // An extra operand that closes a cycle (a waits for b, which waits for a) is left out:
  // every node still comes once, after its own operands.
  const std::vector<Expr> cyclic = DataflowPostOrder(out, [&](const Expr& e) {
    if (e.same_as(b)) return std::vector<Expr>{a};
    if (e.same_as(a)) return std::vector<Expr>{b};
    return std::vector<Expr>{};
  });
  EXPECT_EQ(cyclic.size(), 4u);
  EXPECT_LT(position(cyclic, x), position(cyclic, a));
  EXPECT_LT(position(cyclic, x), position(cyclic, b));
  EXPECT_EQ(position(cyclic, out), 3);
}

/// Replaces test.functor.add by test.functor.mul.
class AddToMul : public ExprMutator {
 protected:
  Expr VisitCall(const Call& pre, const Call& post) override {
    if (!post->op().same_as(Op::Get("test.functor.add"))) return post;
    return Call(Op::Get("test.functor.mul"), post->args(), post->attrs());
  }
};

/// Rewrites nothing.
class IdentityMutator : public ExprMutator {};

TEST(ExprMutatorTest, ReturnsTheSameObjectWhenNothingChanges) {
  const Var x("x");
  const Function f({x}, Tuple({Add(x, x), x}));
  f->body()->set_checked_type(F32({1}));
  IdentityMutator mutator;
  const Expr result = mutator.Mutate(f);
  EXPECT_TRUE(result.same_as(f));
}

TEST(ExprMutatorTest, RewritesASharedNodeOnceAndKeepsItShared) {
  const Var x("x");
  const Call shared = Add(x, x);
  const Tuple out({shared, shared, TupleGetItem(Tuple({shared}), 0)});
  AddToMul mutator;
  const auto* result = mutator.Mutate(out).as<TupleObj>();
  ASSERT_NE(result, nullptr);
  const Expr first = result->fields()[0];
  EXPECT_TRUE(first.same_as(result->fields()[1]));
  const auto* item = result->fields()[2].as<TupleGetItemObj>();
  EXPECT_TRUE(item->tuple().as<TupleObj>()->fields()[0].same_as(first));
  EXPECT_TRUE(first.as<CallObj>()->op().same_as(Op::Get("test.functor.mul")));
  EXPECT_TRUE(first.as<CallObj>()->args()[0].same_as(x)) << "untouched leaves are kept";
}

/// Replaces every Var by a fresh one, and one by a constant.
class RenameVars : public ExprMutator {
 public:
  bool break_params = false;

 protected:
  Expr VisitVar(const Var& var) override {
    if (break_params) return Constant(testing::HostTensor({0}, {1}));
    return Var(var->name_hint().str() + "_renamed", var->type_annotation());
  }
};

TEST(ExprMutatorTest, RebuildsAFunctionWhoseParametersChanged) {
  const Var x("x");
  const Function f({x}, Add(x, x), F32({1}), {{"note", 1}});
  RenameVars rename;
  const auto* g = rename.Mutate(f).as<FunctionObj>();
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->params()[0]->name_hint(), "x_renamed");
  EXPECT_TRUE(g->body().as<CallObj>()->args()[0].same_as(g->params()[0]));
  EXPECT_EQ(g->attrs().at("note").cast<int64_t>(), 1);
  RenameVars broken;
  broken.break_params = true;
  EXPECT_THROW(broken.Mutate(f), Error);
}

Expr Chain(int length, const Expr& leaf) {
  Expr chain = leaf;
  for (int i = 0; i < length; ++i) chain = Add(chain, chain);
  return chain;
}

TEST(ExprFunctorTest, HundredThousandChainedNodesNeedNoDeepStack) {
  const Var x("x");
  const Expr chain = Chain(100000, x);
  CountingVisitor visitor;
  visitor.VisitExpr(chain);
  EXPECT_EQ(visitor.calls.size(), 100002u);
  AddToMul mutator;
  const Expr mutated = mutator.Mutate(chain);
  EXPECT_TRUE(mutated.as<CallObj>()->op().same_as(Op::Get("test.functor.mul")));
  int count = 0;
  PostOrderVisit(mutated, [&](const Expr&) { ++count; });
  EXPECT_EQ(count, 100002);
}

}  // namespace
}  // namespace ir
}  // namespace kiln
