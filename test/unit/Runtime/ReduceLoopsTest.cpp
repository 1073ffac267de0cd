//===- ReduceLoopsTest.cpp - The collectives' reduce and divide loops -----===//
//
// The vectorized loops (ReduceLoops.h) against the scalar definitions
// (Half.h, plain fp32 and integer arithmetic), bit for bit, on every kind of
// value (NaNs, infinities, subnormals, ties), on lengths that leave vector
// remainders, at unaligned starts and in place. (The one freedom: a sum of
// two NaNs is some NaN.)
//
//===----------------------------------------------------------------------===//

#include "ratrain/runtime/ReduceLoops.h"
#include "ratrain/runtime/Half.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace ratrain::rt;

namespace {

uint32_t floatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

/// Random 16-bit patterns with a share of special values mixed in.
std::vector<uint16_t> bf16Values(size_t n, uint32_t seed) {
  static const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x807f, 0x7f80,
                                     0xff80, 0x7fc0, 0x7f81, 0xffff, 0x3f80,
                                     0x7f7f, 0xff7f, 0x0080};
  std::mt19937 rng(seed);
  std::vector<uint16_t> v(n);
  for (uint16_t &x : v)
    x = rng() % 8 == 0 ? special[rng() % std::size(special)] : uint16_t(rng());
  return v;
}

std::vector<float> f32Values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (float &x : v) {
    uint32_t bits = rng();
    if (rng() % 8 == 0)
      bits &= 0x807fffffu; // subnormal or zero
    std::memcpy(&x, &bits, 4);
  }
  return v;
}

bool isBF16NaN(uint16_t bits) { return (bits & 0x7fffu) > 0x7f80u; }

const size_t kLengths[] = {0, 1, 7, 15, 16, 17, 31, 33, 63, 65, 100, 4099};

} // namespace

TEST(ReduceLoops, ChoosesAnInstructionSet) {
  std::string isa = reduceLoopsIsa();
  EXPECT_TRUE(isa == "avx512bw" || isa == "avx2" || isa == "baseline") << isa;
  EXPECT_TRUE(useReduceLoops("baseline"));
  EXPECT_FALSE(useReduceLoops("sse9"));
  EXPECT_STREQ(reduceLoopsIsa(), "baseline");
  EXPECT_TRUE(useReduceLoops(isa));
}

/// Runs `check` once with each loop set this CPU runs, then restores the
/// default.
template <typename Check> void forEachIsa(Check check) {
  std::string widest = reduceLoopsIsa();
  for (const char *isa : {"avx512bw", "avx2", "baseline"}) {
    if (!useReduceLoops(isa))
      continue;
    SCOPED_TRACE(isa);
    check();
  }
  useReduceLoops(widest);
}

TEST(ReduceLoops, Bf16SumIsTheScalarSumBitForBit) {
  forEachIsa([] {
    for (size_t n : kLengths) {
      for (size_t offset : {0, 1, 3}) {
        std::vector<uint16_t> dst = bf16Values(n + offset, uint32_t(n)),
                              src = bf16Values(n + offset, uint32_t(n + 7));
        std::vector<uint16_t> expected = dst, before = dst;
        for (size_t i = offset; i < n + offset; ++i)
          expected[i] = floatToBF16(bf16ToFloat(dst[i]) + bf16ToFloat(src[i]));
        reduceInto(dst.data() + offset, src.data() + offset, n, ElemType::BF16,
                   ReduceOp::Sum);
        for (size_t i = 0; i < n + offset; ++i) {
          // Two NaNs sum to a NaN; whose payload it keeps depends on the
          // operand order the compiler chose (C++ leaves it open).
          if (i >= offset && isBF16NaN(before[i]) && isBF16NaN(src[i])) {
            ASSERT_TRUE(isBF16NaN(dst[i])) << "element " << i;
            continue;
          }
          ASSERT_EQ(dst[i], expected[i])
              << "n " << n << " offset " << offset << " element " << i;
        }
      }
    }
  });
}

TEST(ReduceLoops, F32SumIsTheScalarSumBitForBit) {
  forEachIsa([] {
    for (size_t n : kLengths) {
      std::vector<float> a = f32Values(n, uint32_t(n * 3)),
                         b = f32Values(n, uint32_t(n * 3 + 1)), out(n);
      std::vector<float> before = a;
      reduceFrom(out.data(), a.data(), b.data(), n, ElemType::F32,
                 ReduceOp::Sum);
      reduceInto(a.data(), b.data(), n, ElemType::F32, ReduceOp::Avg);
      for (size_t i = 0; i < n; ++i) {
        float expected = before[i] + b[i];
        if (std::isnan(before[i]) && std::isnan(b[i])) {
          ASSERT_TRUE(std::isnan(out[i]) && std::isnan(a[i])) << i;
          continue;
        }
        ASSERT_EQ(floatBits(out[i]), floatBits(expected)) << "element " << i;
        ASSERT_EQ(floatBits(a[i]), floatBits(expected)) << "element " << i;
      }
    }
  });
}

TEST(ReduceLoops, Bf16DivideIsTheScalarDivisionBitForBit) {
  forEachIsa([] {
    for (int ranks : {1, 2, 3, 4, 6, 8, 12, 1024}) {
      for (size_t n : kLengths) {
        std::vector<uint16_t> src = bf16Values(n + 1, uint32_t(n * 31 + ranks));
        std::vector<uint16_t> expected(n + 1), out(n + 1, 0xabcd);
        for (size_t i = 1; i <= n; ++i)
          expected[i] = floatToBF16(bf16ToFloat(src[i]) / float(ranks));
        // Out of place, from an unaligned start ...
        divideInto(out.data() + 1, src.data() + 1, n, ElemType::BF16, ranks);
        EXPECT_EQ(out[0], 0xabcd);
        // ... and in place.
        divideInto(src.data() + 1, src.data() + 1, n, ElemType::BF16, ranks);
        for (size_t i = 1; i <= n; ++i) {
          ASSERT_EQ(out[i], expected[i]) << ranks << " ranks, element " << i;
          ASSERT_EQ(src[i], expected[i]) << ranks << " ranks, element " << i;
        }
      }
    }
  });
}

TEST(ReduceLoops, F32DivideIsTheScalarDivisionBitForBit) {
  forEachIsa([] {
    for (int ranks : {1, 2, 3, 4, 5, 8, 64}) {
      for (size_t n : kLengths) {
        std::vector<float> src = f32Values(n, uint32_t(n * 17 + ranks)), out(n);
        std::vector<float> expected(n);
        for (size_t i = 0; i < n; ++i)
          expected[i] = src[i] / float(ranks);
        divideInto(out.data(), src.data(), n, ElemType::F32, ranks);
        divideInto(src.data(), src.data(), n, ElemType::F32, ranks);
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(floatBits(out[i]), floatBits(expected[i]))
              << ranks << " ranks, element " << i;
          ASSERT_EQ(floatBits(src[i]), floatBits(expected[i]))
              << ranks << " ranks, element " << i;
        }
      }
    }
  });
}

TEST(ReduceLoops, AverageIsTheSumThenTheDivisionBitForBit) {
  forEachIsa([] {
    for (int ranks : {2, 3, 4, 6, 8}) {
      for (size_t n : kLengths) {
        SCOPED_TRACE(testing::Message() << ranks << " ranks, n " << n);
        std::vector<uint16_t> a = bf16Values(n, uint32_t(n * 5 + ranks)),
                              b = bf16Values(n, uint32_t(n * 5 + ranks + 1));
        std::vector<uint16_t> expected(n), out(n), inA = a, inB = b;
        for (size_t i = 0; i < n; ++i)
          expected[i] = floatToBF16(
              bf16ToFloat(floatToBF16(bf16ToFloat(a[i]) + bf16ToFloat(b[i]))) /
              float(ranks));
        // Out of place, into the first operand and into the second.
        averageFrom(out.data(), a.data(), b.data(), n, ElemType::BF16, ranks);
        averageFrom(inA.data(), inA.data(), b.data(), n, ElemType::BF16, ranks);
        averageFrom(inB.data(), a.data(), inB.data(), n, ElemType::BF16, ranks);
        for (size_t i = 0; i < n; ++i) {
          if (isBF16NaN(a[i]) && isBF16NaN(b[i])) {
            ASSERT_TRUE(isBF16NaN(out[i]) && isBF16NaN(inA[i]) &&
                        isBF16NaN(inB[i]))
                << "element " << i;
            continue;
          }
          ASSERT_EQ(out[i], expected[i]) << "element " << i;
          ASSERT_EQ(inA[i], expected[i]) << "element " << i;
          ASSERT_EQ(inB[i], expected[i]) << "element " << i;
        }
        std::vector<float> x = f32Values(n, uint32_t(n * 11 + ranks)),
                           y = f32Values(n, uint32_t(n * 11 + ranks + 1)),
                           fused(n);
        averageFrom(fused.data(), x.data(), y.data(), n, ElemType::F32, ranks);
        for (size_t i = 0; i < n; ++i) {
          const float want = (x[i] + y[i]) / float(ranks);
          if (std::isnan(x[i]) && std::isnan(y[i])) {
            ASSERT_TRUE(std::isnan(fused[i])) << "element " << i;
            continue;
          }
          ASSERT_EQ(floatBits(fused[i]), floatBits(want)) << "element " << i;
        }
      }
    }
  });
  // Other types: the sum, then the division.
  std::vector<int32_t> p = {7, -9, 4}, q = {2, 2, 1}, r(3);
  averageFrom(r.data(), p.data(), q.data(), r.size(), ElemType::I32, 2);
  EXPECT_EQ(r, (std::vector<int32_t>{4, -3, 2}));
}

TEST(ReduceLoops, OtherTypesReduceAndDivide) {
  std::vector<int32_t> a = {5, -7, 9}, b = {1, 2, -3};
  reduceInto(a.data(), b.data(), a.size(), ElemType::I32, ReduceOp::Max);
  EXPECT_EQ(a, (std::vector<int32_t>{5, 2, 9}));
  divideInto(a.data(), a.data(), a.size(), ElemType::I32, 2);
  EXPECT_EQ(a, (std::vector<int32_t>{2, 1, 4}));
  // A group larger than the element type holds (u8 over 256 ranks).
  std::vector<uint8_t> bytes = {255, 3};
  divideInto(bytes.data(), bytes.data(), bytes.size(), ElemType::U8, 256);
  EXPECT_EQ(bytes, (std::vector<uint8_t>{0, 0}));
  bytes = {200, 9};
  divideInto(bytes.data(), bytes.data(), bytes.size(), ElemType::U8, 3);
  EXPECT_EQ(bytes, (std::vector<uint8_t>{66, 3}));
  std::vector<uint16_t> h = {floatToF16(1.5f), floatToF16(-3.0f)},
                        g = {floatToF16(0.5f), floatToF16(1.0f)};
  reduceInto(h.data(), g.data(), h.size(), ElemType::F16, ReduceOp::Sum);
  divideInto(h.data(), h.data(), h.size(), ElemType::F16, 4);
  EXPECT_EQ(f16ToFloat(h[0]), 0.5f);
  EXPECT_EQ(f16ToFloat(h[1]), -0.5f);
}
