// If and Loop: validation, type inference, walks, structural equality and the text format.
#include <kiln/ir/control_flow.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/structural_equal.h>
#include <kiln/ir/text_format.h>
#include <kiln/transform/infer_type.h>
#include <gtest/gtest.h>

#include <string>

#include "ir_test_util.h"
#include "testing/expect_error.h"

namespace kiln {
namespace ir {
namespace {

using test_util::ExpectError;
using testing::F32;

const DLDataType kBool{kDLUInt, 1, 1};
const DLDataType kInt64{kDLInt, 64, 1};

/// The result type of @main in `text`.
Type TypeOfMain(const std::string& text) {
  const Type type = transform::InferExprType(ParseModule(text).Lookup("main"));
  return type.as<FuncTypeObj>()->ret();
}

std::string TypeText(const Type& type) {
  std::string text = AsText(type);
  return text.substr(0, text.size() - 1);  // AsText ends a type with a newline
}

const char* const kLoopModule = R"(
def @main(%x: Tensor[(4), float32], %n: Tensor[(), int64], %c: Tensor[(1), bool]) {
  %0 = fn (%i, %cond, %acc) {
    %1 = add(%acc, %x);
    %2 = multiply(%acc, %acc);
    (%cond, %1, %2)
  };
  loop(%n, %c, %x, %0, iterations=steps)
}
)";

TEST(ControlFlowTest, IfBranchesTakeNoParametersAndLoopBodiesTakeTheCarriedValues) {
  Var c("c", TensorType::Static({}, kBool));
  Var x("x", F32({4}));
  ExpectError([&] { If(c, Function({x}, x), Function({}, x)); }, "ValueError",
              {"takes no parameters", "then branch takes 1"});
  ExpectError([&] { If(Expr(), Function({}, x), Function({}, x)); }, "ValueError",
              {"condition is null"});
  Var i("i", TensorType::Static({}, kInt64));
  ExpectError(
      [&] {
        Loop(Var("n", TensorType::Static({}, kInt64)), c, {x}, Function({i, c}, Tuple({c, x})),
             arith::IntImm(3));
      },
      "ValueError", {"1 carried values (3 parameters)", "it takes 2"});
}

TEST(ControlFlowTest, LoopTypeIsTheCarriedValuesThenScanOutputsStackedAlongTheIterations) {
  const Type type = TypeOfMain(kLoopModule);
  EXPECT_EQ(TypeText(type), "(Tensor[(4), float32], Tensor[(steps, 4), float32])");
  IRModule mod = ParseModule(kLoopModule);
  transform::InferExprType(mod.Lookup("main"));
  const auto* loop = mod.Lookup("main")->body().as<LoopObj>();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->num_scan_outputs(), 1);
  // The body's parameters are bound to the iteration, the condition and the carried value.
  EXPECT_EQ(TypeText(loop->body()->params()[0]->checked_type()), "Tensor[(), int64]");
  EXPECT_EQ(TypeText(loop->body()->params()[2]->checked_type()), "Tensor[(4), float32]");
}

TEST(ControlFlowTest, IfTypeIsTheBranchesTypeAndDisagreeingBranchesAreNamed) {
  EXPECT_EQ(TypeText(TypeOfMain(R"(
def @main(%c: Tensor[(), bool], %x: Tensor[(2, 3), float32]) {
  %0 = fn () { add(%x, %x) };
  %1 = fn () { %x };
  if(%c, %0, %1)
})")),
            "Tensor[(2, 3), float32]");
  ExpectError(
      [] {
        TypeOfMain(R"(
def @main(%c: Tensor[(), bool], %x: Tensor[(2, 3), float32], %y: Tensor[(3), float32]) {
  %0 = fn () { %x };
  %1 = fn () { %y };
  if(%c, %0, %1)
})");
      },
      "TypeError",
      {"branches of an If disagree", "Tensor[(2, 3), float32]", "Tensor[(3), float32]"});
  ExpectError(
      [] {
        TypeOfMain(R"(
def @main(%c: Tensor[(2), bool], %x: Tensor[(3), float32]) {
  %0 = fn () { %x };
  if(%c, %0, %0)
})");
      },
      "TypeError", {"condition of an If must be a bool tensor of one element", "(2)"});
}

TEST(ControlFlowTest, BranchesThatDisagreeInExtentsGiveTheSizesTheIfNames) {
  const std::string text = R"(def @main(%c: Tensor[(), bool], %x: Tensor[(3, 2), float32]) {
  %0 = fn () {
    %x
  };
  %1 = fn () {
    const(float32, (0, 2), [])
  };
  %2 = if(%c, %0, %1, sizes=[rows]);
  %2
}
)";
  EXPECT_EQ(TypeText(TypeOfMain(text)), "Tensor[(rows, 2), float32]");
  const IRModule module = ParseModule(text);
  EXPECT_EQ(AsText(module), text);  // the sizes print back
  EXPECT_EQ(transform::CountDisagreeingExtents(F32({3, 2}), F32({0, 2})), 1U);
  std::string unnamed = text;
  unnamed.replace(unnamed.find(", sizes=[rows]"), 14, "");
  ExpectError([&] { TypeOfMain(unnamed); }, "TypeError",
              {"disagree in 1 extents, but it names 0 sizes"});
  std::string too_many = text;
  too_many.replace(too_many.find("[rows]"), 6, "[rows, cols]");
  ExpectError([&] { TypeOfMain(too_many); }, "TypeError",
              {"disagree in 1 extents, but it names 2 sizes"});
}

TEST(ControlFlowTest, ACarriedValueThatChangesTypeIsATypeError) {
  ExpectError(
      [] {
        TypeOfMain(R"(
def @main(%x: Tensor[(4), float32], %n: Tensor[(), int64], %c: Tensor[(), bool]) {
  %0 = fn (%i, %cond, %acc) {
    %1 = cast(%acc, dtype="int32");
    (%cond, %1)
  };
  loop(%n, %c, %x, %0, iterations=steps)
})");
      },
      "TypeError",
      {"carried value 0", "enters as Tensor[(4), float32]", "returns Tensor[(4), int32]"});
  ExpectError(
      [] {
        TypeOfMain(R"(
def @main(%x: Tensor[(4), float32], %n: Tensor[(), float32], %c: Tensor[(), bool]) {
  %0 = fn (%i, %cond, %acc) { (%cond, %acc) };
  loop(%n, %c, %x, %0, iterations=steps)
})");
      },
      "TypeError", {"trip count of a Loop must be a int64 tensor"});
}

/// Replaces every `add` by `multiply`, wherever it is.
class AddToMultiply : public ExprMutator {
 protected:
  Expr VisitCall(const Call&, const Call& post) override {
    if (post->op().same_as(Op::Get("add"))) return Call(Op::Get("multiply"), post->args());
    return post;
  }
};

TEST(ControlFlowTest, MutatorsRewriteInsideBodiesAndKeepUntouchedNodes) {
  IRModule mod = ParseModule(kLoopModule);
  const Function main = mod.Lookup("main");
  const Expr rewritten = AddToMultiply().Mutate(main->body());
  const auto* loop = rewritten.as<LoopObj>();
  ASSERT_NE(loop, nullptr);
  EXPECT_FALSE(rewritten.same_as(main->body()));
  const std::string text = AsText(rewritten);
  EXPECT_EQ(text.find("add("), std::string::npos) << text;
  EXPECT_EQ(loop->iterations().ToString(), "steps");
  // A mutator that changes nothing gives back the same node.
  EXPECT_TRUE(ExprMutator().Mutate(main->body()).same_as(main->body()));
  int bodies = 0;
  PostOrderVisit(main->body(),
                 [&](const Expr& node) { bodies += node.as<FunctionObj>() != nullptr; });
  EXPECT_EQ(bodies, 1);
}

TEST(ControlFlowTest, StructuralEqualityComparesBodiesAndTheIterationCount) {
  const IRModule a = ParseModule(kLoopModule);
  const IRModule b = ParseModule(kLoopModule);
  EXPECT_TRUE(StructuralEqual(a, b));
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
  std::string other = kLoopModule;
  other.replace(other.find("iterations=steps"), 16, "iterations=7");
  EXPECT_FALSE(StructuralEqual(a, ParseModule(other)));
  std::string swapped = kLoopModule;
  swapped.replace(swapped.find("add(%acc, %x)"), 13, "add(%x, %acc)");
  EXPECT_FALSE(StructuralEqual(a, ParseModule(swapped)));
  EXPECT_NE(StructuralHash(a), StructuralHash(ParseModule(swapped)));
}

TEST(ControlFlowTest, TheParserNamesMalformedControlFlow) {
  ExpectError([] { ParseExpr("%0 = fn () { %x };\nif(%c, %0)"); }, "ValueError",
              {"`if` takes a condition and two branches, got 2"});
  ExpectError([] { ParseExpr("%0 = fn () { %x };\nif(%c, %0, %x)"); }, "TypeError",
              {"operand 2 of `if` must be a function"});
  ExpectError([] { ParseExpr("%0 = fn (%i, %c) { (%c,) };\nloop(%n, %c, %0)"); }, "ValueError",
              {"`loop` with one attribute, `iterations=<size>`"});
  ExpectError([] { ParseExpr("%0 = fn (%i, %c) { (%c,) };\nloop(%n, %c, %0, iterations=\"x\")"); },
              "ValueError", {"`iterations=` a size expression"});
}

}  // namespace
}  // namespace ir
}  // namespace kiln
