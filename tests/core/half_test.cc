// float16 / bfloat16 conversions checked against values computed here from the formats'
// definitions (sign, exponent, mantissa with ldexp; rounding with nearbyint in double,
// whose default mode is round to nearest even), never against the code under test.
#include "core/tensor/half.h"

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"

namespace distribute {
namespace {

using ::distribute::testing::BFloat16Value;
using ::distribute::testing::BitsToFloat;
using ::distribute::testing::FloatBits;
using ::distribute::testing::HalfValue;
using ::distribute::testing::RoundToBFloat16;
using ::distribute::testing::RoundToHalf;

bool SameValue(double expected, double actual) {
  if (std::isnan(expected)) return std::isnan(actual);
  return expected == actual && std::signbit(expected) == std::signbit(actual);
}

bool IsHalfNaN(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool IsBFloat16NaN(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

TEST(HalfTest, RoundingModeIsNearestEven) {
  // The references below rely on nearbyint rounding to nearest even.
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  EXPECT_EQ(std::nearbyint(2.5), 2.0);
  EXPECT_EQ(std::nearbyint(3.5), 4.0);
}

TEST(HalfTest, EveryHalfPatternConvertsToItsValue) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float converted = HalfToFloat(bits);
    ASSERT_TRUE(SameValue(HalfValue(bits), converted))
        << "half 0x" << std::hex << h << " gave " << converted;
  }
}

TEST(HalfTest, EveryHalfPatternRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const uint16_t back = FloatToHalf(HalfToFloat(bits));
    if (IsHalfNaN(bits)) {
      ASSERT_TRUE(IsHalfNaN(back)) << "NaN 0x" << std::hex << h << " came back as 0x" << back;
      ASSERT_EQ(back & 0x8000u, bits & 0x8000u) << "NaN 0x" << std::hex << h << " lost its sign";
    } else {
      ASSERT_EQ(back, bits) << "half 0x" << std::hex << h << " came back as 0x" << back;
    }
  }
}

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(0.5f), 0x3800);
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);  // the largest half
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfToFloat(0x0400), std::ldexp(1.0f, -14));  // the smallest normal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x03ff), std::ldexp(1023.0f, -24));  // the largest subnormal
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(FloatToHalf(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(HalfToFloat(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(HalfToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(IsHalfNaN(FloatToHalf(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(IsHalfNaN(FloatToHalf(std::numeric_limits<float>::signaling_NaN())));
  // A NaN whose payload lives only in the low float bits must not become infinity.
  EXPECT_TRUE(IsHalfNaN(FloatToHalf(BitsToFloat(0x7f800001u))));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7c01)));
}

TEST(HalfTest, OverflowBoundary) {
  // 65520 is halfway between 65504 and 65536 (= infinity): ties to even (0x7c00).
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(FloatToHalf(-65520.0f), 0xfc00);
  EXPECT_EQ(FloatToHalf(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(1.0e6f), 0x7c00);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(FloatToHalf(-std::numeric_limits<float>::max()), 0xfc00);
}

TEST(HalfTest, TiesToEven) {
  // 1 + 2^-11 is halfway between 1 (even mantissa) and 1 + 2^-10: down.
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even): up.
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above a tie rounds up, just below rounds down.
  EXPECT_EQ(FloatToHalf(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3c01);
  EXPECT_EQ(FloatToHalf(std::nextafter(1.0f + 3 * std::ldexp(1.0f, -11), 0.0f)), 0x3c01);
  // 2049 lies between 2048 and 2050: even mantissa wins (2048); 2051 goes to 2052.
  EXPECT_EQ(FloatToHalf(2049.0f), FloatToHalf(2048.0f));
  EXPECT_EQ(HalfToFloat(FloatToHalf(2051.0f)), 2052.0f);
  // Subnormal ties: 2^-25 is halfway between 0 and 2^-24, 3 * 2^-25 between 1 and 2 ulps.
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(FloatToHalf(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(FloatToHalf(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(FloatToHalf(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(FloatToHalf(5 * std::ldexp(1.0f, -25)), 0x0002);
  // Below half the smallest subnormal: signed zero.
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(FloatToHalf(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  // The largest subnormal rounding up into the smallest normal.
  EXPECT_EQ(FloatToHalf(std::ldexp(1023.5f, -24)), 0x0400);
  EXPECT_EQ(FloatToHalf(std::ldexp(1022.5f, -24)), 0x03fe);
}

TEST(HalfTest, EveryMidpointAndItsNeighboursRoundAsTheReference) {
  // For every pair of adjacent finite positive halves, the midpoint (a tie) and the floats
  // just either side of it.
  for (uint32_t h = 0; h < 0x7bff + 1; ++h) {
    const double low = HalfValue(static_cast<uint16_t>(h));
    const double high = h == 0x7bff ? 65536.0 : HalfValue(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((low + high) / 2);
    ASSERT_EQ(static_cast<double>(mid), (low + high) / 2);  // exact in float
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1.0e9f)}) {
      for (float signed_x : {x, -x}) {
        const uint16_t bits = FloatToHalf(signed_x);
        ASSERT_TRUE(SameValue(RoundToHalf(signed_x), HalfValue(bits)))
            << "float " << signed_x << " (0x" << std::hex << FloatBits(signed_x) << ") gave half 0x"
            << bits;
      }
    }
  }
}

TEST(HalfTest, RandomFloatsRoundAsTheReference) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<uint32_t> any_bits;
  // Exponents around the half range are where the interesting cases are.
  std::uniform_int_distribution<uint32_t> near_exponent(100, 150);
  for (int i = 0; i < 400000; ++i) {
    uint32_t bits = any_bits(rng);
    if (i % 2 == 0) bits = (bits & 0x807fffffu) | (near_exponent(rng) << 23);
    const float x = BitsToFloat(bits);
    const uint16_t half = FloatToHalf(x);
    if (std::isnan(x)) {
      ASSERT_TRUE(IsHalfNaN(half)) << std::hex << bits;
      continue;
    }
    ASSERT_TRUE(SameValue(RoundToHalf(x), HalfValue(half)))
        << "float 0x" << std::hex << bits << " gave half 0x" << half;
  }
}

TEST(BFloat16Test, EveryPatternConvertsToItsValueAndRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    const float converted = BFloat16ToFloat(bits);
    ASSERT_TRUE(SameValue(BFloat16Value(bits), converted)) << "bfloat16 0x" << std::hex << b;
    const uint16_t back = FloatToBFloat16(converted);
    if (IsBFloat16NaN(bits)) {
      ASSERT_TRUE(IsBFloat16NaN(back)) << "NaN 0x" << std::hex << b << " came back as 0x" << back;
    } else {
      ASSERT_EQ(back, bits) << "bfloat16 0x" << std::hex << b << " came back as 0x" << back;
    }
  }
}

TEST(BFloat16Test, RoundsToNearestEvenOnHandPickedPatterns) {
  struct Case {
    uint32_t float_bits;
    uint16_t expected;
  };
  const Case cases[] = {
      {0x3f800000u, 0x3f80},  // 1.0 exactly
      {0x3f808000u, 0x3f80},  // tie, even below: down
      {0x3f818000u, 0x3f82},  // tie, odd below: up
      {0x3f808001u, 0x3f81},  // just above a tie: up
      {0x3f807fffu, 0x3f80},  // just below a tie: down
      {0x3f80ffffu, 0x3f81},  // just below the next tie: nearest
      {0xbf818000u, 0xbf82},  // negative tie, odd below: away from zero
      {0xbf808000u, 0xbf80},  // negative tie, even: toward zero
      {0x7f7f0000u, 0x7f7f},  // the largest bfloat16
      {0x7f7f7fffu, 0x7f7f},  // below the tie with infinity
      {0x7f7f8000u, 0x7f80},  // tie with infinity: up (odd below)
      {0x7f7fffffu, 0x7f80},  // float max: infinity
      {0xff7fffffu, 0xff80},  // -float max: -infinity
      {0x7f800000u, 0x7f80},  // infinity
      {0xff800000u, 0xff80},  // -infinity
      {0x00000000u, 0x0000},  // +0
      {0x80000000u, 0x8000},  // -0
      {0x00008000u, 0x0000},  // subnormal tie, even: down to zero
      {0x00018000u, 0x0002},  // subnormal tie, odd: up
      {0x00010001u, 0x0001},  // subnormal just above exact
      {0x007fffffu, 0x0080},  // the largest float subnormal rounds into the normals
      {0x40490fdbu, 0x4049},  // pi
      {0x3dcccccdu, 0x3dcd},  // 0.1
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FloatToBFloat16(BitsToFloat(c.float_bits)), c.expected)
        << "float bits 0x" << std::hex << c.float_bits;
    // The expectation itself agrees with the reference rounding.
    EXPECT_TRUE(SameValue(RoundToBFloat16(BitsToFloat(c.float_bits)), BFloat16Value(c.expected)))
        << "bad test case 0x" << std::hex << c.float_bits;
  }
}

TEST(BFloat16Test, NaNStaysNaN) {
  for (uint32_t bits : {0x7fc00000u, 0x7f800001u, 0x7f800100u, 0xff800001u, 0x7fffffffu, 0xffc00000u}) {
    const uint16_t b = FloatToBFloat16(BitsToFloat(bits));
    EXPECT_TRUE(IsBFloat16NaN(b)) << "float bits 0x" << std::hex << bits << " gave 0x" << b;
    EXPECT_EQ(b & 0x8000u, (bits >> 16) & 0x8000u) << "sign of 0x" << std::hex << bits;
  }
}

TEST(BFloat16Test, RandomFloatsRoundAsTheReference) {
  std::mt19937 rng(777);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 400000; ++i) {
    const uint32_t bits = any_bits(rng);
    const float x = BitsToFloat(bits);
    const uint16_t b = FloatToBFloat16(x);
    if (std::isnan(x)) {
      ASSERT_TRUE(IsBFloat16NaN(b)) << std::hex << bits;
      continue;
    }
    ASSERT_TRUE(SameValue(RoundToBFloat16(x), BFloat16Value(b)))
        << "float 0x" << std::hex << bits << " gave bfloat16 0x" << b;
  }
}

}  // namespace
}  // namespace distribute
