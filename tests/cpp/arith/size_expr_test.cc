#include <kiln/arith/size_expr.h>
#include <gtest/gtest.h>

#include <string>
#include <unordered_set>

#include "testing/expect_error.h"

namespace kiln {
namespace arith {
namespace {

using test_util::ExpectError;

const SizeVar& Batch() {
  static const SizeVar var("batch");
  return var;
}
const SizeVar& Seq() {
  static const SizeVar var("seq");
  return var;
}

TEST(SizeExprTest, NodesAreFfiObjectsUnderKilnArith) {
  const SizeExpr sum = Batch() + Seq();
  EXPECT_EQ(sum->GetTypeKey(), "kiln.arith.Add");
  EXPECT_TRUE(sum->IsInstance<BinaryObj>());
  EXPECT_TRUE(sum->IsInstance<SizeExprObj>());
  EXPECT_EQ(IntImm(3)->GetTypeKey(), "kiln.arith.IntImm");
  EXPECT_EQ(Batch()->GetTypeKey(), "kiln.arith.SizeVar");
  EXPECT_EQ(FloorDiv(Batch(), 2)->GetTypeKey(), "kiln.arith.FloorDiv");
  EXPECT_EQ(Min(Batch(), Seq())->GetTypeKey(), "kiln.arith.Min");
  EXPECT_EQ(sum.as<AddObj>()->op(), BinaryOp::kAdd);
  EXPECT_EQ(sum->depth(), 2);
}

TEST(SizeExprTest, BuildersFoldConstantsAndDropIdentities) {
  EXPECT_EQ((IntImm(2) + IntImm(3)).as_int(), 5);
  EXPECT_EQ((IntImm(7) - 9).as_int(), -2);
  EXPECT_EQ(FloorDiv(IntImm(-7), 2).as_int(), -4);
  EXPECT_EQ(FloorMod(IntImm(-7), 2).as_int(), 1);
  EXPECT_EQ(FloorMod(IntImm(7), -2).as_int(), -1);
  EXPECT_EQ(Max(IntImm(7), IntImm(-2)).as_int(), 7);
  EXPECT_TRUE((Batch() + 0).same_as(Batch()));
  EXPECT_TRUE((0 + Batch()).same_as(Batch()));
  EXPECT_TRUE((Batch() * 1).same_as(Batch()));
  EXPECT_EQ((Batch() * 0).as_int(), 0);
  EXPECT_TRUE(FloorDiv(Batch(), 1).same_as(Batch()));
  EXPECT_EQ(FloorMod(Batch(), 1).as_int(), 0);
  EXPECT_TRUE(Min(Batch(), SizeVar("batch")).same_as(Batch()));
  // No other rewriting: the simplifier's job.
  EXPECT_EQ((Batch() - Batch()).ToString(), "batch - batch");
}

TEST(SizeExprTest, FoldingThatOverflowsOrDividesByZeroNamesTheExpression) {
  ExpectError([] { (void)(IntImm(INT64_MAX) + 1); }, "OverflowError",
              {"9223372036854775807 + 1", "int64"});
  ExpectError([] { (void)FloorDiv(IntImm(INT64_MIN), -1); }, "OverflowError",
              {"floordiv(-9223372036854775808, -1)"});
  ExpectError([] { (void)FloorDiv(Batch(), 0); }, "ValueError",
              {"division by zero", "floordiv(batch, 0)"});
  ExpectError([] { (void)FloorMod(Batch(), IntImm(0)); }, "ValueError", {"floormod(batch, 0)"});
  ExpectError([] { (void)(Batch() + SizeExpr()); }, "ValueError", {"operand is null"});
}

TEST(SizeExprTest, VariableNamesMustBeIdentifiersAndNotFunctionNames) {
  EXPECT_EQ(SizeVar("_n2")->name(), "_n2");
  ExpectError([] { SizeVar(""); }, "ValueError", {"is not a name"});
  ExpectError([] { SizeVar("2n"); }, "ValueError", {"'2n'"});
  ExpectError([] { SizeVar("a.b"); }, "ValueError", {"'a.b'"});
  ExpectError([] { SizeVar("min"); }, "ValueError", {"'min' is a function"});
}

TEST(SizeExprTest, DepthIsCapped) {
  SizeExpr chain = Batch();
  for (int i = 1; i < kMaxSizeExprDepth; ++i) chain = chain + Seq();
  EXPECT_EQ(chain->depth(), kMaxSizeExprDepth);
  ExpectError([&] { (void)(chain + Seq()); }, "ValueError", {"deeper than 512"});
}

TEST(SizeExprPrinterTest, UsesTheFewestParentheses) {
  const SizeExpr a = SizeVar("a");
  const SizeExpr b = SizeVar("b");
  const SizeExpr c = SizeVar("c");
  EXPECT_EQ((Batch() * 3 + 1).ToString(), "batch * 3 + 1");
  EXPECT_EQ(FloorDiv(Seq(), 2).ToString(), "floordiv(seq, 2)");
  EXPECT_EQ(Min(a, b).ToString(), "min(a, b)");
  EXPECT_EQ((a - (b + c)).ToString(), "a - (b + c)");
  EXPECT_EQ((a - b + c).ToString(), "a - b + c");
  EXPECT_EQ(((a + b) * c).ToString(), "(a + b) * c");
  EXPECT_EQ((a * (b * c)).ToString(), "a * (b * c)");
  EXPECT_EQ((a * b * c).ToString(), "a * b * c");
  EXPECT_EQ((a + b * c).ToString(), "a + b * c");
  EXPECT_EQ((a * -3 - -2).ToString(), "a * -3 - -2");
  EXPECT_EQ(Max(a + 1, FloorMod(b, 4) * 2).ToString(), "max(a + 1, floormod(b, 4) * 2)");
}

TEST(SizeExprParserTest, ReadsWhatThePrinterWrites) {
  const SizeExpr a = SizeVar("a");
  const SizeExpr b = SizeVar("b");
  const SizeExpr cases[] = {Batch() * 3 + 1,
                            FloorDiv(Seq(), 2),
                            a - (b + 1),
                            (a + b) * (a - 2),
                            a * -3 - -2,
                            IntImm(INT64_MIN),
                            Min(Max(a, 2), FloorMod(b * a, a + 1)),
                            IntImm(-5) * a};
  for (const SizeExpr& expr : cases) {
    const SizeExpr back = ParseSizeExpr(expr.ToString());
    EXPECT_TRUE(StructuralEqual(back, expr)) << expr << " came back as " << back;
    EXPECT_EQ(back.ToString(), expr.ToString());
  }
}

TEST(SizeExprParserTest, AcceptsOtherSpacingAndRedundantParentheses) {
  EXPECT_EQ(ParseSizeExpr("  ((batch)*3)+1 ").ToString(), "batch * 3 + 1");
  EXPECT_EQ(ParseSizeExpr("floordiv( seq ,2 )").ToString(), "floordiv(seq, 2)");
  EXPECT_EQ(ParseSizeExpr("a-1").ToString(), "a - 1");
  EXPECT_EQ(ParseSizeExpr("2 * 3 + 4").as_int(), 10);  // built with the folding builders
}

TEST(SizeExprParserTest, ErrorsGiveTheColumnAndWhatWasExpected) {
  ExpectError([] { ParseSizeExpr("batch +"); }, "ValueError",
              {"column 8: expected a number, a name", "found the end of the text", "       ^"});
  ExpectError([] { ParseSizeExpr("batch 3"); }, "ValueError",
              {"column 7: expected an operator", "found '3'"});
  ExpectError([] { ParseSizeExpr("floordiv(a 2)"); }, "ValueError", {"column 12: expected ','"});
  ExpectError([] { ParseSizeExpr("pow(a, 2)"); }, "ValueError",
              {"column 1: unknown function 'pow'"});
  ExpectError([] { ParseSizeExpr("-a"); }, "ValueError", {"column 1", "found '-'"});
  ExpectError([] { ParseSizeExpr("99999999999999999999"); }, "ValueError",
              {"column 1: integer 99999999999999999999 does not fit in 64 bits"});
  ExpectError([] { ParseSizeExpr("floordiv(x, 0)"); }, "ValueError",
              {"column 1: division by zero in floordiv(x, 0)"});
  ExpectError([] { ParseSizeExpr("9223372036854775807 + 1"); }, "OverflowError", {"column 21:"});
  ExpectError([] { ParseSizeExpr("(a)(b)"); }, "ValueError", {"column 4"});
  ExpectError([] { ParseSizeExpr(""); }, "ValueError", {"column 1", "the end of the text"});
}

TEST(SizeExprParserTest, DeepTextIsAnErrorNotAStackOverflow) {
  ExpectError([] { ParseSizeExpr(std::string(10000, '(') + "a" + std::string(10000, ')')); },
              "ValueError", {"nesting deeper than 256"});
  std::string chain = "a";
  for (int i = 0; i < 1000; ++i) chain += " + a";
  ExpectError([&] { ParseSizeExpr(chain); }, "ValueError", {"deeper than 512"});
}

TEST(SizeExprEvaluateTest, ComputesFloorSemantics) {
  const SizeExpr x = SizeVar("x");
  EXPECT_EQ(Evaluate(Batch() * 3 + 1, {{"batch", 4}}), 13);
  EXPECT_EQ(Evaluate(FloorDiv(x, 4), {{"x", -1}}), -1);
  EXPECT_EQ(Evaluate(FloorMod(x, 4), {{"x", -1}}), 3);
  EXPECT_EQ(Evaluate(FloorMod(x, -4), {{"x", 1}}), -3);
  EXPECT_EQ(Evaluate(Min(x, 2) + Max(x, 2), {{"x", 5}}), 7);
}

TEST(SizeExprEvaluateTest, ErrorsNameTheVariableOrTheSubexpression) {
  const SizeExpr x = SizeVar("x");
  const SizeExpr y = SizeVar("y");
  ExpectError(
      [&] {
        Evaluate(x + y, {{"x", 1}});
      },
      "ValueError", {"variable 'y' of x + y has no value"});
  ExpectError(
      [&] {
        Evaluate(FloorDiv(x, y) + 1, {{"x", 1}, {"y", 0}});
      },
      "ValueError", {"division by zero in floordiv(x, y) of floordiv(x, y) + 1"});
  ExpectError(
      [&] {
        Evaluate(x * x, {{"x", int64_t{1} << 32}});
      },
      "OverflowError", {"x * x does not fit in int64", "4294967296"});
  ExpectError(
      [&] {
        Evaluate(FloorDiv(x, -1), {{"x", INT64_MIN}});
      },
      "OverflowError", {"floordiv(x, -1)"});
  EXPECT_EQ(Evaluate(FloorMod(x, -1), {{"x", INT64_MIN}}), 0);
}

TEST(SizeExprTest, FreeVarsAreSortedAndUnique) {
  const SizeExpr expr = Seq() * Batch() + FloorDiv(Seq(), SizeVar("a"));
  EXPECT_EQ(FreeSizeVars(expr), (std::vector<std::string>{"a", "batch", "seq"}));
  EXPECT_TRUE(FreeSizeVars(IntImm(3)).empty());
}

TEST(SizeExprStructureTest, VariablesOfTheSameNameAreEqual) {
  EXPECT_TRUE(StructuralEqual(SizeVar("n") * 2, SizeVar("n") * 2));
  EXPECT_EQ(StructuralHash(SizeVar("n") * 2), StructuralHash(SizeVar("n") * 2));
  EXPECT_FALSE(StructuralEqual(SizeVar("n") * 2, SizeVar("m") * 2));
  EXPECT_FALSE(StructuralEqual(Batch() + Seq(), Seq() + Batch()));  // structure, not algebra
  EXPECT_FALSE(StructuralEqual(Batch() + Seq(), Batch() - Seq()));
  EXPECT_FALSE(StructuralEqual(IntImm(1), SizeExpr()));
  EXPECT_TRUE(StructuralEqual(SizeExpr(), SizeExpr()));
}

TEST(SizeExprStructureTest, CompareIsATotalOrderByKindThenContents) {
  EXPECT_LT(StructuralCompare(IntImm(9), SizeVar("a")), 0);
  EXPECT_LT(StructuralCompare(SizeVar("a"), SizeVar("b")), 0);
  EXPECT_LT(StructuralCompare(SizeVar("z"), SizeVar("a") + 1), 0);
  EXPECT_LT(StructuralCompare(Batch() + 1, Batch() + 2), 0);
  EXPECT_GT(StructuralCompare(Min(Batch(), 1), FloorDiv(Batch(), 2)), 0);
  EXPECT_EQ(StructuralCompare(Batch() * 2, SizeVar("batch") * 2), 0);
}

TEST(SizeExprStructureTest, FunctorsKeyUnorderedContainers) {
  std::unordered_set<SizeExpr, SizeExprHash, SizeExprEqual> set;
  set.insert(Batch() + 1);
  set.insert(SizeVar("batch") + 1);
  set.insert(Batch() + 2);
  EXPECT_EQ(set.size(), 2u);
}

}  // namespace
}  // namespace arith
}  // namespace kiln
