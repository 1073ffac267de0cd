//===- HalfTest.cpp - bf16 / f16 conversions ------------------------------===//

#include "ratrain/runtime/Half.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace ratrain::rt;

TEST(Half, BF16RoundsToNearestEven) {
  EXPECT_EQ(floatToBF16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(floatToBF16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even.
  EXPECT_EQ(floatToBF16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(
      bf16ToFloat(floatToBF16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(bf16ToFloat(floatToBF16(-2.5f)), -2.5f);
}

TEST(Half, F16RoundTripsEveryValue) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    uint16_t h = uint16_t(bits);
    float f = f16ToFloat(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(f))));
      continue;
    }
    EXPECT_EQ(floatToF16(f), h) << "bits " << bits;
  }
}

TEST(Half, F16RoundsAndSaturates) {
  EXPECT_EQ(floatToF16(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff);
  EXPECT_EQ(floatToF16(70000.0f), 0x7c00);
  EXPECT_EQ(floatToF16(-70000.0f), 0xfc00);
  // Smallest subnormal 2^-24, and half of it rounds to even (zero).
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -25)), 0x0002);
  // 1 + 2^-11 is halfway between 1 and the next f16: ties to even.
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
}
