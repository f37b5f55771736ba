// Property tests of the size arithmetic against brute force: random expressions (fixed seed)
// are simplified, printed, parsed and proven about, and every answer is checked by evaluating
// the original expressions over a grid of assignments. With bounded variables the grid is the
// whole domain, so a "proven" fact is checked everywhere it claims to hold.
#include <kiln/arith/analyzer.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace kiln {
namespace arith {
namespace {

using Assignment = std::map<std::string, int64_t>;

constexpr int kExpressions = 3000;

/// Random expressions over a few variables, built with the builders.
class ExprGenerator {
 public:
  /// With `large_constants`, one leaf in six is a constant of any magnitude, so that folding
  /// and normal forms reach the int64 limits.
  ExprGenerator(uint64_t seed, std::vector<std::string> names, bool large_constants = false)
      : rng_(seed), large_constants_(large_constants) {
    for (const std::string& name : names) vars_.push_back(SizeVar(name));
  }

  SizeExpr Generate(int depth) {
    if (depth == 0 || Uniform(0, 3) == 0) return Leaf();
    const auto op = static_cast<BinaryOp>(Uniform(0, 6));
    SizeExpr a = Generate(depth - 1);
    SizeExpr b;
    if ((op == BinaryOp::kFloorDiv || op == BinaryOp::kFloorMod) && Uniform(0, 3) != 0) {
      b = IntImm(Uniform(0, 4) == 0 ? -Uniform(1, 3) : Uniform(1, 6));  // mostly constant
    } else {
      b = Generate(depth - 1);
    }
    if ((op == BinaryOp::kFloorDiv || op == BinaryOp::kFloorMod) && b.as_int() == 0) {
      b = IntImm(3);
    }
    return Build(op, a, b);
  }

  /// MakeBinary, or `a` where folding two constants would overflow.
  static SizeExpr Build(BinaryOp op, const SizeExpr& a, const SizeExpr& b) {
    try {
      return MakeBinary(op, a, b);
    } catch (const Error&) {
      return a;
    }
  }

  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

 private:
  SizeExpr Leaf() {
    if (large_constants_ && Uniform(0, 5) == 0) {
      return IntImm(Uniform(INT64_MIN, INT64_MAX) >> Uniform(0, 62));
    }
    if (Uniform(0, 2) == 0) return IntImm(Uniform(-3, 8));
    return vars_[static_cast<size_t>(Uniform(0, static_cast<int64_t>(vars_.size()) - 1))];
  }

  std::mt19937_64 rng_;
  bool large_constants_;
  std::vector<SizeExpr> vars_;
};

/// Every assignment of `names` to values in [lo, hi] of their ranges.
std::vector<Assignment> Grid(const std::map<std::string, std::pair<int64_t, int64_t>>& ranges) {
  std::vector<Assignment> grid{Assignment{}};
  for (const auto& [name, range] : ranges) {
    std::vector<Assignment> next;
    for (const Assignment& partial : grid) {
      for (int64_t v = range.first; v <= range.second; ++v) {
        Assignment extended = partial;
        extended[name] = v;
        next.push_back(std::move(extended));
      }
    }
    grid = std::move(next);
  }
  return grid;
}

/// The value of `expr`, or nullopt where it is undefined (division by zero, overflow); with
/// `overflowed`, whether it failed by leaving int64.
std::optional<int64_t> TryEvaluate(const SizeExpr& expr, const Assignment& values,
                                   bool* overflowed = nullptr) {
  try {
    return Evaluate(expr, values);
  } catch (const Error& error) {
    if (overflowed != nullptr) *overflowed = error.kind() == "OverflowError";
    return std::nullopt;
  }
}

/// One configuration: an analyzer, the grid its facts are checked on, and the random source.
struct Setting {
  const char* name;
  Analyzer analyzer;
  std::vector<Assignment> grid;
};

Setting Bounded() {
  Setting setting{"bounded", Analyzer(), {}};
  setting.analyzer.Bind(SizeVar("x"), 1, 4);
  setting.analyzer.Bind(SizeVar("y"), 0, 5);
  setting.analyzer.Bind(SizeVar("z"), 2, 3);
  setting.grid = Grid({{"x", {1, 4}}, {"y", {0, 5}}, {"z", {2, 3}}});
  return setting;
}

Setting Unbounded() {
  // Variables are only known to be >= 0: the grid samples the domain.
  Setting setting{"unbounded", Analyzer(), {}};
  setting.grid = Grid({{"x", {0, 7}}, {"y", {0, 7}}, {"z", {0, 3}}});
  return setting;
}

class ArithPropertyTest : public ::testing::TestWithParam<int> {
 protected:
  Setting setting_ = GetParam() == 0 ? Bounded() : Unbounded();
  ExprGenerator gen_{0x5eed + static_cast<uint64_t>(GetParam()), {"x", "y", "z"}};
};

TEST_P(ArithPropertyTest, SimplifyKeepsTheValueWhereverTheOriginalIsDefined) {
  int simplified_to_constant = 0;
  for (int i = 0; i < kExpressions; ++i) {
    const SizeExpr expr = gen_.Generate(4);
    const SizeExpr simple = setting_.analyzer.Simplify(expr);
    if (simple.as_int().has_value()) ++simplified_to_constant;
    for (const Assignment& point : setting_.grid) {
      const std::optional<int64_t> want = TryEvaluate(expr, point);
      if (!want.has_value()) continue;
      const std::optional<int64_t> got = TryEvaluate(simple, point);
      ASSERT_EQ(got, want) << expr << " simplified to " << simple << " (" << setting_.name << ")";
    }
    ASSERT_TRUE(StructuralEqual(setting_.analyzer.Simplify(simple), simple))
        << "not idempotent: " << expr << " -> " << simple << " -> "
        << setting_.analyzer.Simplify(simple);
  }
  EXPECT_GT(simplified_to_constant, 0);
}

TEST_P(ArithPropertyTest, PrintAndParseRoundTrip) {
  for (int i = 0; i < kExpressions; ++i) {
    const SizeExpr expr = gen_.Generate(5);
    for (const SizeExpr& e : {expr, setting_.analyzer.Simplify(expr)}) {
      const std::string text = e.ToString();
      const SizeExpr back = ParseSizeExpr(text);
      ASSERT_TRUE(StructuralEqual(back, e)) << text << " parsed as " << back;
      ASSERT_EQ(StructuralHash(back), StructuralHash(e));
      ASSERT_EQ(back.ToString(), text);
    }
  }
}

TEST_P(ArithPropertyTest, BoundsHoldEverywhere) {
  for (int i = 0; i < kExpressions; ++i) {
    const SizeExpr expr = gen_.Generate(4);
    const ConstIntBound bound = setting_.analyzer.Bound(expr);
    const Sign sign = setting_.analyzer.ProveSign(expr);
    for (const Assignment& point : setting_.grid) {
      const std::optional<int64_t> value = TryEvaluate(expr, point);
      if (!value.has_value()) continue;
      ASSERT_TRUE(bound.min <= *value && *value <= bound.max)
          << expr << " = " << *value << " outside [" << bound.min << ", " << bound.max << "]";
      const bool sign_holds = sign == Sign::kUnknown || (sign == Sign::kZero && *value == 0) ||
                              (sign == Sign::kPositive && *value > 0) ||
                              (sign == Sign::kNegative && *value < 0) ||
                              (sign == Sign::kNonNegative && *value >= 0) ||
                              (sign == Sign::kNonPositive && *value <= 0);
      ASSERT_TRUE(sign_holds) << expr << " = " << *value << " has the wrong proven sign";
    }
  }
}

TEST_P(ArithPropertyTest, ProvenFactsHoldEverywhere) {
  const Analyzer& analyzer = setting_.analyzer;
  int proven = 0;
  for (int i = 0; i < kExpressions; ++i) {
    const SizeExpr a = gen_.Generate(3);
    // Half the pairs are related (b built from a), so that some facts are provable.
    const SizeExpr b = gen_.Uniform(0, 1) == 0
                           ? gen_.Generate(3)
                           : ExprGenerator::Build(static_cast<BinaryOp>(gen_.Uniform(0, 6)), a,
                                                  IntImm(gen_.Uniform(1, 4)));
    const int64_t divisor = gen_.Uniform(2, 4);
    const bool eq = analyzer.CanProveEqual(a, b);
    const bool ge = analyzer.CanProveGE(a, b);
    const bool gt = analyzer.CanProveGT(a, b);
    const bool le = analyzer.CanProveLE(a, b);
    const bool lt = analyzer.CanProveLT(a, b);
    const bool divisible = analyzer.CanProveDivisible(a, divisor);
    const bool same_form = StructuralEqual(analyzer.Simplify(a), analyzer.Simplify(b));
    proven += eq + ge + gt + le + lt + divisible;
    for (const Assignment& point : setting_.grid) {
      const std::optional<int64_t> x = TryEvaluate(a, point);
      const std::optional<int64_t> y = TryEvaluate(b, point);
      if (x.has_value() && divisible) {
        ASSERT_EQ(*x % divisor, 0) << a << " not divisible by " << divisor;
      }
      if (!x.has_value() || !y.has_value()) continue;
      const std::string pair = a.ToString() + " vs " + b.ToString();
      ASSERT_TRUE(!eq || *x == *y) << "equal: " << pair;
      ASSERT_TRUE(!same_form || *x == *y) << "same normal form: " << pair;
      ASSERT_TRUE(!ge || *x >= *y) << ">=: " << pair;
      ASSERT_TRUE(!gt || *x > *y) << ">: " << pair;
      ASSERT_TRUE(!le || *x <= *y) << "<=: " << pair;
      ASSERT_TRUE(!lt || *x < *y) << "<: " << pair;
    }
  }
  EXPECT_GT(proven, kExpressions / 4);  // the provers are not vacuous
}

TEST_P(ArithPropertyTest, AnExpressionIsProvenEqualToItsSimplifiedForm) {
  int unproven = 0;
  for (int i = 0; i < kExpressions; ++i) {
    const SizeExpr expr = gen_.Generate(4);
    if (!setting_.analyzer.CanProveEqual(expr, setting_.analyzer.Simplify(expr))) ++unproven;
  }
  EXPECT_LT(unproven, kExpressions / 50) << unproven << " of " << kExpressions;
}

// Near the int64 limits a normal form may overflow where the original does not (expanding
// (x - y) * c makes x * c - y * c), so there an OverflowError of the simplified expression is
// allowed; a wrong value, any other failure, a broken round trip or a wrong proof is not.
TEST_P(ArithPropertyTest, LargeConstantsNeverGiveAWrongAnswer) {
  ExprGenerator gen(0x1a46e + static_cast<uint64_t>(GetParam()), {"x", "y", "z"}, true);
  for (int i = 0; i < kExpressions; ++i) {
    const SizeExpr expr = gen.Generate(4);
    const SizeExpr simple = setting_.analyzer.Simplify(expr);
    const ConstIntBound bound = setting_.analyzer.Bound(expr);
    const bool positive = setting_.analyzer.CanProveGT(expr, IntImm(0));
    for (const Assignment& point : setting_.grid) {
      const std::optional<int64_t> want = TryEvaluate(expr, point);
      if (!want.has_value()) continue;
      ASSERT_TRUE(bound.min <= *want && *want <= bound.max) << expr << " = " << *want;
      ASSERT_TRUE(!positive || *want > 0) << expr << " = " << *want;
      bool overflowed = false;
      const std::optional<int64_t> got = TryEvaluate(simple, point, &overflowed);
      if (!got.has_value() && overflowed) continue;
      ASSERT_EQ(got, want) << expr << " simplified to " << simple;
    }
    ASSERT_TRUE(StructuralEqual(ParseSizeExpr(simple.ToString()), simple)) << simple;
    ASSERT_TRUE(StructuralEqual(setting_.analyzer.Simplify(simple), simple)) << simple;
  }
}

INSTANTIATE_TEST_SUITE_P(Settings, ArithPropertyTest, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == 0 ? "Bounded" : "Unbounded");
                         });

}  // namespace
}  // namespace arith
}  // namespace kiln
