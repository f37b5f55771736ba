#include <kiln/runtime/narrow_float.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace kiln {
namespace {

// Expected bit patterns are worked out by hand from the formats' definitions (IEEE 754
// binary16: 5 exponent bits, bias 15; bfloat16: float's upper half), not from the code.

float FloatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

TEST(Float16Test, RoundsToNearestAndTiesToEven) {
  EXPECT_EQ(Float16(1.0).bits(), 0x3C00);
  EXPECT_EQ(Float16(-2.5F).bits(), 0xC100);
  // 1 + 2^-11 lies halfway between 1 (even) and 1 + 2^-10: the even one.
  EXPECT_EQ(Float16(1.0 + std::ldexp(1.0, -11)).bits(), 0x3C00);
  // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 and 1 + 2^-9 (even): up.
  EXPECT_EQ(Float16(1.0 + 3 * std::ldexp(1.0, -11)).bits(), 0x3C02);
  // Just above the tie: up, although float would have rounded it onto the tie first.
  EXPECT_EQ(Float16(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).bits(), 0x3C01);
  EXPECT_EQ(Float16(1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40)).bits(), 0x3C00);
}

TEST(Float16Test, OverflowsToInfinityPastTheLargestNumber) {
  EXPECT_EQ(Float16(65504.0).bits(), 0x7BFF);  // the largest finite
  EXPECT_EQ(Float16(65519.99).bits(), 0x7BFF);
  EXPECT_EQ(Float16(65520.0).bits(), 0x7C00);  // the tie with 2^16: to the even, infinity
  EXPECT_EQ(Float16(-1e10).bits(), 0xFC00);
  EXPECT_EQ(Float16(std::numeric_limits<uint64_t>::max()).bits(), 0x7C00);
  EXPECT_EQ(Float16(65504).bits(), 0x7BFF);
}

TEST(Float16Test, SubnormalsAndSignedZero) {
  EXPECT_EQ(Float16(std::ldexp(1.0, -24)).bits(), 0x0001);  // the smallest subnormal
  EXPECT_EQ(Float16(std::ldexp(1.0, -25)).bits(), 0x0000);  // its half: ties to even, zero
  EXPECT_EQ(Float16(3 * std::ldexp(1.0, -26)).bits(), 0x0001);
  EXPECT_EQ(Float16(1023 * std::ldexp(1.0, -24)).bits(), 0x03FF);  // the largest subnormal
  EXPECT_EQ(Float16(1023.5 * std::ldexp(1.0, -24)).bits(),
            0x0400);  // rounds to the smallest normal
  EXPECT_EQ(Float16(-0.0).bits(), 0x8000);
  EXPECT_EQ(Float16(1e-300).bits(), 0x0000);
  EXPECT_EQ(static_cast<double>(Float16::FromBits(0x0001)), std::ldexp(1.0, -24));
  EXPECT_TRUE(std::signbit(static_cast<float>(Float16::FromBits(0x8000))));
}

TEST(Float16Test, InfinitiesAndNaNsSurvive) {
  EXPECT_EQ(Float16(std::numeric_limits<double>::infinity()).bits(), 0x7C00);
  EXPECT_EQ(Float16(-std::numeric_limits<float>::infinity()).bits(), 0xFC00);
  EXPECT_EQ(Float16(std::numeric_limits<float>::quiet_NaN()).bits(), 0x7E00);
  // A signaling NaN's payload keeps its leading bits and comes back quiet.
  EXPECT_EQ(Float16(FloatFromBits(0xFF900000)).bits(), 0xFE80);
  EXPECT_TRUE(std::isinf(static_cast<float>(Float16::FromBits(0xFC00))));
  EXPECT_TRUE(std::isnan(static_cast<float>(Float16::FromBits(0x7C01))));
  EXPECT_TRUE(std::isnan(static_cast<double>(Float16::FromBits(0xFE00))));
}

TEST(BFloat16Test, IsFloatsUpperHalfRoundedToNearestEven) {
  EXPECT_EQ(BFloat16(1.0F).bits(), 0x3F80);
  EXPECT_EQ(BFloat16(FloatFromBits(0x3F808000)).bits(), 0x3F80);  // tie, even below
  EXPECT_EQ(BFloat16(FloatFromBits(0x3F818000)).bits(), 0x3F82);  // tie, even above
  EXPECT_EQ(BFloat16(FloatFromBits(0x3F808001)).bits(), 0x3F81);
  EXPECT_EQ(BFloat16(std::numeric_limits<float>::max()).bits(), 0x7F80);  // past bf16's max
  EXPECT_EQ(BFloat16(FloatFromBits(0x7F7F7FFF)).bits(), 0x7F7F);
  EXPECT_EQ(BFloat16(FloatFromBits(0x00010000)).bits(), 0x0001);  // a float subnormal
  EXPECT_EQ(BFloat16(FloatFromBits(0x80008000)).bits(), 0x8000);  // tie with -0: even
  EXPECT_EQ(BFloat16(std::numeric_limits<float>::quiet_NaN()).bits(), 0x7FC0);
  EXPECT_EQ(BFloat16(-std::numeric_limits<float>::infinity()).bits(), 0xFF80);
  EXPECT_EQ(static_cast<float>(BFloat16::FromBits(0x4049)), FloatFromBits(0x40490000));
}

/// Widening is exact and narrowing the result gives the same bits back, for every number.
template <typename Narrow>
void ExpectEveryPatternRoundTrips() {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const Narrow value = Narrow::FromBits(static_cast<uint16_t>(bits));
    const auto widened = static_cast<float>(value);
    if (std::isnan(widened)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(Narrow(widened)))) << bits;
      continue;
    }
    EXPECT_EQ(Narrow(widened).bits(), bits);
    EXPECT_EQ(Narrow(static_cast<double>(value)).bits(), bits);
    EXPECT_EQ(static_cast<double>(widened), static_cast<double>(value));
  }
}

TEST(Float16Test, EveryPatternRoundTrips) { ExpectEveryPatternRoundTrips<Float16>(); }
TEST(BFloat16Test, EveryPatternRoundTrips) { ExpectEveryPatternRoundTrips<BFloat16>(); }

TEST(NarrowFloatTest, ConvertsToIntegersAndBetweenFormats) {
  EXPECT_EQ(static_cast<int32_t>(Float16(-7.75)), -7);  // toward zero, as C++ does
  EXPECT_EQ(static_cast<uint16_t>(BFloat16(200.0)), 200);
  EXPECT_TRUE(static_cast<bool>(Float16(0.25)));
  EXPECT_FALSE(static_cast<bool>(Float16(-0.0)));
  // 1 + 2^-8 is a bfloat16 tie, exact in float16.
  EXPECT_EQ(BFloat16(Float16(1.0 + std::ldexp(1.0, -8))).bits(), 0x3F80);
  EXPECT_EQ(Float16(BFloat16::FromBits(0x7F80)).bits(), 0x7C00);
}

}  // namespace
}  // namespace kiln
