// The fast float32 exp and erf of kiln/runtime/fast_math.h (the CPU kernels' and the generated
// C's) against double-precision libm over their range, with the bounds their comments state.
#include <kiln/runtime/fast_math.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace {

/// |got - want| in units of the float32 spacing at want.
double UlpError(float got, double want) {
  const auto rounded = static_cast<float>(want);
  const float spacing = std::nextafter(rounded, std::numeric_limits<float>::infinity()) - rounded;
  return std::fabs(static_cast<double>(got) - want) / spacing;
}

TEST(FastMathTest, ExpIsWithinOneAndAHalfUlpOverTheFiniteRange) {
  double worst = 0;
  for (float x = -87.F; x < 88.72F; x += 0.000731F) {
    worst = std::max(worst, UlpError(kiln_fast_expf(x), std::exp(static_cast<double>(x))));
  }
  EXPECT_LE(worst, 1.5);
}

TEST(FastMathTest, ExpOverflowsUnderflowsAndKeepsNaNAsStated) {
  EXPECT_EQ(kiln_fast_expf(100.F), std::numeric_limits<float>::infinity());
  EXPECT_EQ(kiln_fast_expf(88.723F), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isfinite(kiln_fast_expf(88.722F)));
  EXPECT_EQ(kiln_fast_expf(0.F), 1.F);
  EXPECT_TRUE(std::isnan(kiln_fast_expf(std::numeric_limits<float>::quiet_NaN())));
}

TEST(FastMathTest, ExpUnderflowsToZeroRatherThanToSubnormals) {
  // Subnormal results would slow every multiply-add that reads them (softmax's masked entries).
  for (const float x : {-87.31F, -100.F, -200.F, -std::numeric_limits<float>::max(),
                        -std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(kiln_fast_expf(x), 0.F) << x;
    EXPECT_EQ(kiln_fast_exp_nonpositive(x), 0.F) << x;
  }
  EXPECT_GE(kiln_fast_expf(-87.29F), std::numeric_limits<float>::min());
  EXPECT_GE(kiln_fast_exp_nonpositive(-87.29F), std::numeric_limits<float>::min());
  EXPECT_TRUE(std::isnan(kiln_fast_exp_nonpositive(std::numeric_limits<float>::quiet_NaN())));
}

TEST(FastMathTest, NonPositiveExpIsWithinOneAndAHalfUlp) {
  double worst = 0;
  for (float x = -87.F; x <= 0.F; x += 0.000371F) {
    worst =
        std::max(worst, UlpError(kiln_fast_exp_nonpositive(x), std::exp(static_cast<double>(x))));
  }
  EXPECT_LE(worst, 1.5);
}

TEST(FastMathTest, TanhIsWithinItsStatedAbsoluteError) {
  double worst = 0;
  for (float x = -10.F; x < 10.F; x += 0.0001F) {
    worst = std::max(worst, std::fabs(kiln_fast_tanhf(x) - std::tanh(static_cast<double>(x))));
  }
  EXPECT_LE(worst, 2e-7);
  EXPECT_EQ(kiln_fast_tanhf(0.F), 0.F);
  EXPECT_EQ(kiln_fast_tanhf(50.F), 1.F);
  EXPECT_EQ(kiln_fast_tanhf(-50.F), -1.F);
  EXPECT_TRUE(std::isnan(kiln_fast_tanhf(std::numeric_limits<float>::quiet_NaN())));
}

TEST(FastMathTest, ErfIsWithinItsStatedAbsoluteError) {
  double worst = 0;
  for (float x = -6.F; x < 6.F; x += 0.0001F) {
    worst = std::max(worst, std::fabs(kiln_fast_erff(x) - std::erf(static_cast<double>(x))));
  }
  EXPECT_LE(worst, 4.2e-7);
}

}  // namespace
