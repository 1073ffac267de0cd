//===- QuantizeTest.cpp - Block-wise quantization kernels vs a reference --===//
//
// The Halide quantize / dequantize / dequantize-accumulate pipelines against
// a plain C++ reference of the same definition (scale = absmax * (1 / qmax),
// codes rounded to nearest even): codes and scales equal the reference's, the
// round trip is within scale / 2 per block, zeros stay zero, int4 codes are
// packed low nibble first, a short last block has its own scale.
//
//===----------------------------------------------------------------------===//

#include "ratrain/kernels/Quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace ratrain::kernels;

namespace {

float qmax(CodeWidth w) { return w == CodeWidth::Int8 ? 127.0f : 7.0f; }

/// The reference: codes as signed integers, one per element, and scales.
struct Reference {
  std::vector<int> codes;
  std::vector<float> scales;
};

Reference quantizeReference(CodeWidth w, const std::vector<float> &x,
                            int64_t block) {
  Reference ref;
  int64_t n = int64_t(x.size());
  for (int64_t b = 0; b * block < n; ++b) {
    float absmax = 0.0f;
    for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i)
      absmax = std::max(absmax, std::fabs(x[i]));
    ref.scales.push_back(absmax * (1.0f / qmax(w)));
  }
  for (int64_t i = 0; i < n; ++i) {
    float s = ref.scales[i / block];
    float q = s > 0.0f ? std::nearbyint(x[i] / s) : 0.0f;
    ref.codes.push_back(int(std::clamp(q, -qmax(w), qmax(w))));
  }
  return ref;
}

/// The signed code of element i of the kernel's byte codes.
int codeAt(CodeWidth w, const std::vector<uint8_t> &codes, int64_t i) {
  if (w == CodeWidth::Int8)
    return int(int8_t(codes[i]));
  int nibble = i % 2 == 0 ? codes[i / 2] & 0xF : codes[i / 2] >> 4;
  return (nibble ^ 8) - 8;
}

std::vector<float> randomValues(int64_t n, unsigned seed, float range) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-range, range);
  std::vector<float> x(n);
  for (float &v : x)
    v = dist(gen);
  return x;
}

struct Case {
  CodeWidth width;
  int64_t n;
  int64_t block;
};

class QuantizeRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(QuantizeRoundTrip, MatchesReferenceWithinHalfAScale) {
  Case c = GetParam();
  std::vector<float> x = randomValues(c.n, unsigned(c.n * 7 + c.block), 3.0f);
  // Blocks of very different magnitudes, and an all-zero block.
  for (int64_t i = 0; i < c.n; ++i)
    x[i] *= float(1 + (i / c.block) % 5) * 0.25f;
  for (int64_t i = c.block; i < std::min(c.n, 2 * c.block); ++i)
    x[i] = 0.0f;
  Reference ref = quantizeReference(c.width, x, c.block);

  std::vector<uint8_t> codes(quantCodeBytes(c.width, c.n), 0xAA);
  std::vector<float> scales(quantBlockCount(c.n, c.block), -1.0f);
  ASSERT_EQ(quantizeBlocks(c.width, ValueType::F32, c.n, c.block, x.data(),
                           codes.data(), scales.data()),
            0);
  ASSERT_EQ(scales.size(), ref.scales.size());
  for (size_t b = 0; b < scales.size(); ++b)
    EXPECT_EQ(scales[b], ref.scales[b]) << "block " << b;
  for (int64_t i = 0; i < c.n; ++i)
    ASSERT_EQ(codeAt(c.width, codes, i), ref.codes[i]) << "element " << i;

  std::vector<float> y(c.n, 1e30f);
  ASSERT_EQ(dequantizeBlocks(c.width, ValueType::F32, c.n, c.block,
                             codes.data(), scales.data(), y.data()),
            0);
  for (int64_t i = 0; i < c.n; ++i) {
    float s = scales[i / c.block];
    // Half a quantization step, plus the rounding of the product q * s
    // (an ulp of the value).
    EXPECT_LE(std::fabs(y[i] - x[i]), s * 0.5f + std::fabs(x[i]) * 0x1p-23f)
        << "element " << i;
    EXPECT_EQ(y[i], float(ref.codes[i]) * s);
    if (x[i] == 0.0f)
      EXPECT_EQ(y[i], 0.0f) << "a zero must stay zero at " << i;
  }

  // Accumulation adds the decoded values: acc + q * s, rounded once (fused
  // multiply-add) or twice.
  std::vector<float> acc = randomValues(c.n, 99, 1.0f);
  std::vector<float> before = acc;
  ASSERT_EQ(dequantizeAccumulate(c.width, c.n, c.block, codes.data(),
                                 scales.data(), acc.data()),
            0);
  for (int64_t i = 0; i < c.n; ++i) {
    float q = float(ref.codes[i]), s = scales[i / c.block];
    EXPECT_TRUE(acc[i] == std::fma(q, s, before[i]) ||
                acc[i] == before[i] + q * s)
        << "element " << i << ": " << acc[i] << " != " << before[i] << " + "
        << q << " * " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, QuantizeRoundTrip,
    ::testing::Values(Case{CodeWidth::Int8, 4096, 256},
                      Case{CodeWidth::Int8, 1000, 256}, // short last block
                      Case{CodeWidth::Int8, 77, 16},
                      Case{CodeWidth::Int4, 4096, 256},
                      Case{CodeWidth::Int4, 1001, 256}, // odd n, short block
                      Case{CodeWidth::Int4, 33, 7}),    // odd block size
    [](const ::testing::TestParamInfo<Case> &info) {
      return std::string(info.param.width == CodeWidth::Int8 ? "int8"
                                                             : "int4") +
             "_n" + std::to_string(info.param.n) + "_b" +
             std::to_string(info.param.block);
    });

TEST(Quantize, Int4PacksLowNibbleFirst) {
  // Block of 8 with absmax 7: scale 1, codes equal the values.
  std::vector<float> x = {1, -2, 3, -4, 5, -6, 7, 0, -7};
  std::vector<uint8_t> codes(quantCodeBytes(CodeWidth::Int4, 9));
  std::vector<float> scales(quantBlockCount(9, 8));
  ASSERT_EQ(quantizeBlocks(CodeWidth::Int4, ValueType::F32, 9, 8, x.data(),
                           codes.data(), scales.data()),
            0);
  ASSERT_EQ(codes.size(), 5u);
  EXPECT_EQ(scales[0], 1.0f);
  EXPECT_EQ(scales[1], 1.0f); // the short last block: one element, |-7|
  EXPECT_EQ(codes[0], 0xE1);  // 1 low, -2 = 0xE high
  EXPECT_EQ(codes[1], 0xC3);  // 3, -4
  EXPECT_EQ(codes[2], 0xA5);  // 5, -6
  EXPECT_EQ(codes[3], 0x07);  // 7, 0
  EXPECT_EQ(codes[4], 0x09);  // -7 low, missing element 0 high
}

TEST(Quantize, Int8CodesAreTwosComplementBytes) {
  std::vector<float> x = {127, -127, 0.5f, 1.5f, -63.5f};
  std::vector<uint8_t> codes(5);
  std::vector<float> scales(1);
  ASSERT_EQ(quantizeBlocks(CodeWidth::Int8, ValueType::F32, 5, 256, x.data(),
                           codes.data(), scales.data()),
            0);
  EXPECT_EQ(scales[0], 1.0f);
  EXPECT_EQ(codes[0], 0x7F);
  EXPECT_EQ(codes[1], 0x81);
  EXPECT_EQ(codes[2], 0x00); // 0.5 rounds to even 0
  EXPECT_EQ(codes[3], 0x02); // 1.5 rounds to even 2
  EXPECT_EQ(codes[4], 0xC0); // -63.5 rounds to even -64
}

TEST(Quantize, AllZeroInputStaysZero) {
  std::vector<float> x(300, 0.0f);
  for (CodeWidth w : {CodeWidth::Int8, CodeWidth::Int4}) {
    std::vector<uint8_t> codes(quantCodeBytes(w, 300), 0xFF);
    std::vector<float> scales(2, 5.0f), y(300, 1.0f);
    ASSERT_EQ(quantizeBlocks(w, ValueType::F32, 300, 256, x.data(),
                             codes.data(), scales.data()),
              0);
    EXPECT_EQ(scales[0], 0.0f);
    EXPECT_EQ(scales[1], 0.0f);
    for (uint8_t c : codes)
      EXPECT_EQ(c, 0);
    ASSERT_EQ(dequantizeBlocks(w, ValueType::F32, 300, 256, codes.data(),
                               scales.data(), y.data()),
              0);
    for (float v : y)
      EXPECT_EQ(v, 0.0f);
  }
}

/// bf16 bits of v, rounded to nearest even (v is finite).
uint16_t toBf16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}
float fromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

TEST(Quantize, Bf16InputAndOutputMatchTheF32Path) {
  int64_t n = 700, block = 128;
  std::vector<float> x = randomValues(n, 5, 2.0f);
  std::vector<uint16_t> xh(n);
  for (int64_t i = 0; i < n; ++i) {
    xh[i] = toBf16(x[i]);
    x[i] = fromBf16(xh[i]); // the exact values the bf16 input holds
  }
  for (CodeWidth w : {CodeWidth::Int8, CodeWidth::Int4}) {
    std::vector<uint8_t> c32(quantCodeBytes(w, n)), c16(c32.size());
    std::vector<float> s32(quantBlockCount(n, block)), s16(s32.size());
    ASSERT_EQ(quantizeBlocks(w, ValueType::F32, n, block, x.data(), c32.data(),
                             s32.data()),
              0);
    ASSERT_EQ(quantizeBlocks(w, ValueType::BF16, n, block, xh.data(),
                             c16.data(), s16.data()),
              0);
    EXPECT_EQ(c32, c16);
    EXPECT_EQ(s32, s16);
    std::vector<float> y(n);
    std::vector<uint16_t> yh(n);
    ASSERT_EQ(dequantizeBlocks(w, ValueType::F32, n, block, c32.data(),
                               s32.data(), y.data()),
              0);
    ASSERT_EQ(dequantizeBlocks(w, ValueType::BF16, n, block, c32.data(),
                               s32.data(), yh.data()),
              0);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(yh[i], toBf16(y[i])) << "element " << i;
  }
}

TEST(Quantize, InvalidBlockSizeIsRejected) {
  float x[4] = {1, 2, 3, 4};
  uint8_t codes[4];
  float scales[4];
  EXPECT_EQ(
      quantizeBlocks(CodeWidth::Int8, ValueType::F32, 4, 0, x, codes, scales),
      -1);
}

} // namespace
