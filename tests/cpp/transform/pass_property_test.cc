// Property tests over randomly generated programs: FuseOps keeps the program (inlining every
// primitive function gives back the input) and puts every op call in a primitive function;
// every built-in pass leaves well-formed IR; deep graphs do not overflow the stack.
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/structural_equal.h>
#include <kiln/ir/text_format.h>
#include <kiln/transform/instrument.h>
#include <kiln/transform/passes.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {
namespace transform {
namespace {

using ir::Call;
using ir::Expr;

ir::Type Square() { return ir::TensorType::Static({4, 4}, DLDataType{kDLFloat, 32, 1}); }
ir::Type Vector() { return ir::TensorType::Static({4}, DLDataType{kDLFloat, 32, 1}); }

Call OpCall(const char* name, Array<Expr> args, Map<String, Any> attrs = {}) {
  return Call(ir::Op::Get(name), std::move(args), std::move(attrs));
}

/// A random DAG over (4, 4) float32 values: each new node reads random earlier ones, so values
/// are shared (diamonds, several readers) as in real models. Ops of every pattern kind.
ir::IRModule RandomModule(std::mt19937& rng, int num_nodes) {
  const ir::Var x("x", Square());
  const ir::Var w("w", Square());
  const ir::Var v("v", Vector());
  std::vector<Expr> values{x, w};
  auto pick = [&]() {
    return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
  };
  for (int i = 0; i < num_nodes; ++i) {
    Expr node;
    switch (std::uniform_int_distribution<int>(0, 8)(rng)) {
      case 0: node = OpCall("exp", {pick()}); break;
      case 1: node = OpCall("nn.relu", {pick()}); break;
      case 2: node = OpCall("add", {pick(), pick()}); break;
      case 3: node = OpCall("multiply", {pick(), v}); break;
      case 4: node = OpCall("transpose", {pick()}); break;
      case 5: {
        Map<String, Any> flat;
        flat.Set(String("newshape"), Array<int64_t>{16});
        Map<String, Any> square;
        square.Set(String("newshape"), Array<int64_t>{4, 4});
        node = OpCall("reshape", {OpCall("reshape", {pick()}, flat)}, square);
        break;
      }
      case 6: node = OpCall("nn.dense", {pick(), pick()}); break;
      case 7: node = OpCall("nn.batch_norm", {pick(), v, v, v, v}); break;
      default: node = ir::TupleGetItem(ir::Tuple({pick(), pick()}), 1); break;
    }
    values.push_back(node);
  }
  // Return a few values so that several are live at the end.
  const Expr result = ir::Tuple({values.back(), pick()});
  ir::IRModule mod = ir::IRModule::Create();
  mod.Add(ir::GlobalVar("main"), ir::Function({x, w, v}, result));
  return mod;
}

/// Replaces variables by expressions.
class Substituter : public ir::ExprMutator {
 public:
  explicit Substituter(std::unordered_map<const Object*, Expr> map) : map_(std::move(map)) {}

 protected:
  Expr VisitVar(const ir::Var& var) override {
    auto it = map_.find(var.get());
    return it == map_.end() ? Expr(var) : it->second;
  }

 private:
  std::unordered_map<const Object*, Expr> map_;
};

/// Every call of a primitive function replaced by its body with the arguments substituted.
class PrimitiveInliner : public ir::ExprMutator {
 protected:
  Expr VisitCall(const Call& /*pre*/, const Call& post) override {
    const auto* func = post->op().as<ir::FunctionObj>();
    if (func == nullptr || !func->attrs().count(String(ir::attr::kPrimitive))) return post;
    std::unordered_map<const Object*, Expr> map;
    for (int64_t i = 0; i < func->params().size(); ++i) {
      map.emplace(func->params()[i].get(), post->args()[i]);
    }
    return Substituter(std::move(map)).Mutate(func->body());
  }
};

int CountOpCallsOutsidePrimitives(const Expr& body) {
  int count = 0;
  // PostOrderVisit enters nested functions; only the outer body's own nodes count here.
  std::vector<Expr> stack{body};
  std::unordered_map<const Object*, bool> seen;
  while (!stack.empty()) {
    Expr expr = stack.back();
    stack.pop_back();
    if (seen[expr.get()]) continue;
    seen[expr.get()] = true;
    if (const auto* call = expr.as<ir::CallObj>()) {
      if (call->op().as<ir::OpObj>()) ++count;
      for (const Expr& arg : call->args()) stack.push_back(arg);
    } else if (const auto* tuple = expr.as<ir::TupleObj>()) {
      for (const Expr& field : tuple->fields()) stack.push_back(field);
    } else if (const auto* item = expr.as<ir::TupleGetItemObj>()) {
      stack.push_back(item->tuple());
    }
  }
  return count;
}

PassContext CheckedContext() {
  PassContext ctx = PassContext::Create().SetOptLevel(3);
  ctx.AddInstrument(WellFormedInstrument::Create());
  return ctx;
}

TEST(FuseOpsPropertyTest, KeepsTheProgramAndFusesEveryOpCall) {
  std::mt19937 rng(20261122);
  for (int trial = 0; trial < 200; ++trial) {
    const ir::IRModule input = RandomModule(rng, 1 + trial % 40);
    const ir::IRModule fused = Sequential({InferType(), FuseOps()})(input, CheckedContext());
    const ir::Function before = input.Lookup("main");
    const ir::Function after = fused.Lookup("main");
    EXPECT_EQ(CountOpCallsOutsidePrimitives(after->body()), 0) << ir::AsText(fused);
    const Expr inlined = PrimitiveInliner().Mutate(after->body());
    ASSERT_TRUE(ir::StructuralEqual(inlined, before->body())) << "trial " << trial << "\ninput:\n"
                                                              << ir::AsText(input) << "fused:\n"
                                                              << ir::AsText(fused);
  }
}

TEST(PassPropertyTest, EveryPassLeavesWellFormedIR) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const ir::IRModule input = RandomModule(rng, 1 + trial % 30);
    // The well-formedness instrument checks after every pass of the default order.
    Sequential({InferType(), SimplifyExpr(), FoldConstant(), CanonicalizeBatchNorm(), InferType(),
                RecognizeGelu(), RecognizeAttention(), FuseOps(), DeadCodeElimination()})(
        input, CheckedContext());
  }
}

TEST(PassPropertyTest, DeepChainsDoNotOverflowTheStack) {
  const ir::Var x("x", Square());
  Expr chain = x;
  for (int i = 0; i < 100000; ++i) chain = OpCall(i % 2 ? "exp" : "nn.relu", {chain});
  ir::IRModule mod = ir::IRModule::Create();
  mod.Add(ir::GlobalVar("main"), ir::Function({x}, chain));
  const ir::IRModule fused =
      Sequential({InferType(), SimplifyExpr(), RecognizeGelu(), RecognizeAttention(), FuseOps()})(
          mod, PassContext::Create().SetOptLevel(3));
  EXPECT_EQ(CountOpCallsOutsidePrimitives(fused.Lookup("main")->body()), 0);
}

}  // namespace
}  // namespace transform
}  // namespace kiln
