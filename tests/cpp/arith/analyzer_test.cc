#include <kiln/arith/analyzer.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "testing/expect_error.h"

namespace kiln {
namespace arith {
namespace {

using test_util::ExpectError;

class AnalyzerTest : public ::testing::Test {
 protected:
  /// The simplified text of `expr`.
  std::string S(const SizeExpr& expr) const { return analyzer_.Simplify(expr).ToString(); }

  Analyzer analyzer_;
  const SizeVar x_{"x"};
  const SizeVar y_{"y"};
  const SizeVar a_{"a"};
  const SizeVar b_{"b"};
};

// ------------------------------------------------------------------ normal form
TEST_F(AnalyzerTest, SumsCollectLikeTermsInSortedOrder) {
  EXPECT_EQ(S(x_ - x_), "0");
  EXPECT_EQ(S((a_ + b_) * 2 - 2 * b_), "a * 2");
  EXPECT_EQ(S(y_ + x_ + 1 + x_), "x * 2 + y + 1");
  EXPECT_EQ(S(3 + x_ * 2 - x_ * 3), "3 - x");
  EXPECT_EQ(S(0 - x_ - 2), "x * -1 - 2");
  EXPECT_EQ(S(b_ - a_ * 2), "b - a * 2");
  EXPECT_EQ(S((x_ + 1) * (x_ - 1)), "x * x - 1");
  EXPECT_EQ(S(y_ * x_ - x_ * y_), "0");
}

TEST_F(AnalyzerTest, EqualNormalFormsPrintTheSame) {
  EXPECT_EQ(S((a_ + 1) * (b_ + 1)), S(a_ * b_ + b_ + a_ + 1));
  EXPECT_EQ(S(Min(a_ + 3, b_ + 1)), S(Min(b_, a_ + 2) + 1));
  EXPECT_EQ(S(Max(Max(a_, b_), x_)), S(Max(x_, Max(b_, a_))));
}

TEST_F(AnalyzerTest, FloorDivByAConstant) {
  EXPECT_EQ(S(FloorDiv(x_ * 4 + 8, 4)), "x + 2");
  EXPECT_EQ(S(FloorDiv(x_ * 4 + 9, 4)), "x + 2");
  EXPECT_EQ(S(FloorDiv(x_ * 4 + 3, 8)), "floordiv(x, 2)");  // gcd 4
  EXPECT_EQ(S(FloorDiv(x_ * 5, 4)), "x + floordiv(x, 4)");
  EXPECT_EQ(S(FloorDiv(x_ + 9, 4)), "floordiv(x + 1, 4) + 2");
  EXPECT_EQ(S(FloorDiv(FloorDiv(x_, 2), 3)), "floordiv(x, 6)");
  EXPECT_EQ(S(FloorDiv(FloorDiv(x_, 2) + 1, 3)), "floordiv(x + 2, 6)");
  EXPECT_EQ(S(FloorDiv(x_ * 2, -2)), "x * -1");
}

TEST_F(AnalyzerTest, FloorModByAConstant) {
  EXPECT_EQ(S(FloorMod(x_ * 4, 2)), "0");
  EXPECT_EQ(S(FloorMod(x_ * 4 + 9, 4)), "1");
  EXPECT_EQ(S(FloorMod(x_ * 5 + y_ * 8, 4)), "floormod(x, 4)");
  EXPECT_EQ(S(FloorMod(x_ * 4 + 1, 8)), "floormod(x, 2) * 4 + 1");
  EXPECT_EQ(S(FloorMod(FloorMod(x_, 8), 4)), "floormod(x, 4)");
  // x mod -3 = -((-x) mod 3), and -x = 2x (mod 3): residues are taken in [0, c).
  EXPECT_EQ(S(FloorMod(x_, -3)), "floormod(x * 2, 3) * -1");
}

TEST_F(AnalyzerTest, DivAndModRecombine) {
  EXPECT_EQ(S(FloorDiv(x_, 4) * 4 + FloorMod(x_, 4)), "x");
  EXPECT_EQ(S(FloorDiv(x_ + 9, 4) * 4 + FloorMod(x_ + 9, 4)), "x + 9");
  EXPECT_EQ(S(FloorDiv(x_ * 3 + y_, 6) * 12 + FloorMod(x_ * 3 + y_, 6) * 2), "x * 6 + y * 2");
  EXPECT_EQ(S(FloorDiv(x_, y_) * y_ + FloorMod(x_, y_)), "x");
}

TEST_F(AnalyzerTest, DivisionBySymbols) {
  EXPECT_EQ(S(FloorDiv(x_ + 1, x_ + 1)), "1");
  EXPECT_EQ(S(FloorMod(x_ * y_, y_ * x_)), "0");
  EXPECT_EQ(S(FloorDiv(x_, x_ + 1)), "0");  // 0 <= x < x + 1
  EXPECT_EQ(S(FloorMod(x_, x_ + 1)), "x");
  EXPECT_EQ(S(FloorDiv(x_, y_)), "floordiv(x, y)");
  EXPECT_EQ(S(FloorDiv(a_ * x_ * y_ * 6 + x_ * 3, x_ * 3)), "a * y * 2 + 1");  // exact
  EXPECT_EQ(S(FloorMod(a_ * x_ * 4, x_ * 2)), "0");
  EXPECT_EQ(S(FloorDiv(a_ * x_ + 1, x_)), "floordiv(a * x + 1, x)");
}

TEST_F(AnalyzerTest, MinAndMax) {
  EXPECT_EQ(S(Min(x_, x_ + 1)), "x");
  EXPECT_EQ(S(Max(x_, x_ + 1)), "x + 1");
  EXPECT_EQ(S(Min(x_, 0)), "0");  // sizes are >= 0
  EXPECT_EQ(S(Min(x_ + 2, y_ + 2)), "min(x, y) + 2");
  EXPECT_EQ(S(Min(y_, x_)), "min(x, y)");
  EXPECT_EQ(S(Min(Min(x_, y_), x_ + 4)), "min(x, y)");
  EXPECT_EQ(S(Max(a_ * 2 + b_, a_ * 2 + 3)), "a * 2 + max(b, 3)");
  EXPECT_EQ(S(Min(x_, y_) - Min(y_, x_)), "0");
}

TEST_F(AnalyzerTest, BoundVariablesNarrowTheRules) {
  analyzer_.Bind(x_, 0, 7);
  EXPECT_EQ(S(FloorDiv(x_, 8)), "0");
  EXPECT_EQ(S(FloorMod(x_, 8)), "x");
  EXPECT_EQ(S(FloorDiv(x_ + 8, 8)), "1");
  EXPECT_EQ(S(Min(x_, 10)), "x");
  analyzer_.Bind(y_, 5, 5);
  EXPECT_EQ(S(x_ * y_), "x * 5");
}

TEST_F(AnalyzerTest, OverflowKeepsTheNodeInsteadOfWrapping) {
  const SizeExpr huge = x_ * (int64_t{1} << 62) * 4;  // 2^64 * x has no int64 coefficient
  const SizeExpr simplified = analyzer_.Simplify(huge);
  EXPECT_EQ(simplified.ToString(), "x * 4611686018427387904 * 4");
  EXPECT_EQ(Evaluate(simplified, {{"x", 0}}), 0);
  EXPECT_EQ(S(IntImm(INT64_MAX) - x_ + x_), "9223372036854775807");
}

TEST_F(AnalyzerTest, AProductOfManySumsStaysSmallAndKeepsItsValue) {
  // Expanding each factor into the product so far once shared whole products among the terms,
  // so the text of 14 factors ran to 3.4 MB (found by the size_expr fuzzer).
  SizeExpr product = IntImm(1);
  std::map<std::string, int64_t> values;
  for (int i = 0; i < 16; ++i) {
    const std::string n = std::to_string(i);
    const SizeVar a("a" + n);
    const SizeVar b("b" + n);
    product = product * (a - b * 2 - 3);
    values["a" + n] = 10 + i;
    values["b" + n] = 1 + i % 3;
  }
  const SizeExpr simplified = analyzer_.Simplify(product);
  EXPECT_LT(simplified.ToString().size(), 20000U);
  EXPECT_TRUE(StructuralEqual(ParseSizeExpr(simplified.ToString()), simplified));
  EXPECT_EQ(Evaluate(simplified, values), Evaluate(product, values));
}

TEST_F(AnalyzerTest, SimplifyIsIdempotent) {
  const SizeExpr exprs[] = {FloorDiv(x_ * 6 + y_ * 4 + 5, 8), FloorMod(x_ * 6 + y_ * 4 + 5, 8),
                            Min(x_ + 3, y_ * 2 + 1) * 2, FloorDiv(x_, y_) * (y_ + 1)};
  for (const SizeExpr& expr : exprs) {
    const SizeExpr once = analyzer_.Simplify(expr);
    EXPECT_TRUE(StructuralEqual(analyzer_.Simplify(once), once)) << once;
  }
}

// ------------------------------------------------------------------ bounds and proofs
TEST_F(AnalyzerTest, BoundsByIntervalArithmetic) {
  analyzer_.Bind(x_, 1, 64);
  EXPECT_EQ(analyzer_.Bound(x_ * 2 + 1), (ConstIntBound{3, 129}));
  EXPECT_EQ(analyzer_.Bound(FloorDiv(x_, 4)), (ConstIntBound{0, 16}));
  EXPECT_EQ(analyzer_.Bound(FloorMod(x_ + y_, 8)), (ConstIntBound{0, 7}));
  EXPECT_EQ(analyzer_.Bound(0 - x_), (ConstIntBound{-64, -1}));
  EXPECT_EQ(analyzer_.Bound(y_), (ConstIntBound{0, ConstIntBound::kPosInf}));
  EXPECT_EQ(analyzer_.Bound(x_ - x_), (ConstIntBound{0, 0}));            // the normal form helps
  EXPECT_EQ(analyzer_.Bound(FloorDiv(x_, y_)), (ConstIntBound{0, 64}));  // y = 0 excluded
  EXPECT_TRUE(analyzer_.Bound(IntImm(7)).is_const());
}

TEST_F(AnalyzerTest, BoundsNeverWrapAround) {
  analyzer_.Bind(x_, 0, INT64_MAX - 1);
  const ConstIntBound bound = analyzer_.Bound(x_ * x_ + 1);
  EXPECT_EQ(bound.min, 1);
  EXPECT_EQ(bound.max, ConstIntBound::kPosInf);
  EXPECT_EQ(analyzer_.Bound(0 - x_ * 4).min, ConstIntBound::kNegInf);
}

TEST_F(AnalyzerTest, ProvesComparisons) {
  analyzer_.Bind(x_, 1);
  EXPECT_TRUE(analyzer_.CanProveGE(x_ * 2, x_ + 1));
  EXPECT_TRUE(analyzer_.CanProveGT(x_ * 2 + 1, x_ + 1));
  EXPECT_TRUE(analyzer_.CanProveLE(x_, x_));
  EXPECT_TRUE(analyzer_.CanProveLT(x_, x_ * 2));
  EXPECT_TRUE(analyzer_.CanProveEqual((x_ + 1) * 2, 2 + x_ * 2));
  EXPECT_TRUE(analyzer_.CanProveEqual(FloorDiv(x_ * 4 + 8, 4), x_ + 2));
  EXPECT_FALSE(analyzer_.CanProveGT(x_, y_));  // unknown, not false
  EXPECT_FALSE(analyzer_.CanProveGE(y_, x_));
  EXPECT_FALSE(analyzer_.CanProveEqual(x_ * y_, y_));
  EXPECT_TRUE(analyzer_.CanProveGE(IntImm(INT64_MAX), IntImm(-1)));  // no overflow
  // c * floordiv(e, c) is within (e - c, e]: the bound also reads it as e - floormod(e, c).
  EXPECT_TRUE(analyzer_.CanProveLE(FloorDiv(x_, 2) * 2, x_));
  EXPECT_TRUE(analyzer_.CanProveGT(FloorDiv(x_ + 3, 4) * 4, x_ - 1));
  EXPECT_EQ(analyzer_.Bound(x_ - FloorDiv(x_, 8) * 8), (ConstIntBound{0, 7}));
}

TEST_F(AnalyzerTest, ProvesDivisibility) {
  EXPECT_TRUE(analyzer_.CanProveDivisible(x_ * 6 + 3, 3));
  EXPECT_TRUE(analyzer_.CanProveDivisible(x_ * 4 + y_ * 8, -4));
  EXPECT_TRUE(analyzer_.CanProveDivisible(FloorDiv(x_, 2) * 2 - x_ + FloorMod(x_, 2), 7));
  EXPECT_FALSE(analyzer_.CanProveDivisible(x_ * 2, 4));
  EXPECT_FALSE(analyzer_.CanProveDivisible(x_, 2));
  ExpectError([&] { analyzer_.CanProveDivisible(x_, 0); }, "ValueError", {"divisor is 0"});
}

TEST_F(AnalyzerTest, ProvesSigns) {
  analyzer_.Bind(x_, 1, 10);
  EXPECT_EQ(analyzer_.ProveSign(x_), Sign::kPositive);
  EXPECT_EQ(analyzer_.ProveSign(y_), Sign::kNonNegative);
  EXPECT_EQ(analyzer_.ProveSign(0 - y_), Sign::kNonPositive);
  EXPECT_EQ(analyzer_.ProveSign(0 - x_), Sign::kNegative);
  EXPECT_EQ(analyzer_.ProveSign(y_ - y_), Sign::kZero);
  EXPECT_EQ(analyzer_.ProveSign(x_ - y_), Sign::kUnknown);
}

TEST_F(AnalyzerTest, BindOnlyNarrows) {
  EXPECT_EQ(analyzer_.VarBound(x_), (ConstIntBound{0, ConstIntBound::kPosInf}));
  analyzer_.Bind(x_, -5, 9);  // a size is never negative: stays >= 0
  EXPECT_EQ(analyzer_.VarBound(x_), (ConstIntBound{0, 9}));
  analyzer_.Bind(SizeVar("x"), 2);  // the same variable by name
  EXPECT_EQ(analyzer_.VarBound(x_), (ConstIntBound{2, 9}));
  ExpectError([&] { analyzer_.Bind(x_, 10, 20); }, "ValueError",
              {"x in [10, 20] leaves no value", "[2, 9]"});
  ExpectError([&] { analyzer_.Bind(SizeVar(), 0, 1); }, "ValueError", {"null"});
  ExpectError([&] { analyzer_.Simplify(SizeExpr()); }, "ValueError", {"null"});
}

}  // namespace
}  // namespace arith
}  // namespace kiln
