//===- KernelsTest.cpp - The Halide kernels against plain C++ references --===//
//
// Every kernel is checked against a straightforward double-precision C++
// reference on several shapes, including sizes that are not multiples of
// any tile (ragged). Backward kernels are also checked against central
// finite differences of the kernels' own forward passes.
//
// Error measure for fp32: |got - ref| <= 1e-4 * scale, where scale is the
// magnitude the result is made of (for a dot product, sum |a_k b_k|; for
// elementwise results, max(|ref|, 1)). 16-bit GEMMs are compared against the
// reference on the same 16-bit-rounded inputs with the same 1e-4 bound (the
// products are exact in fp32, only the accumulation rounds); the conversion
// itself is checked to be round-to-nearest-even, i.e. within 2^-9 (bf16) and
// 2^-12 (fp16) relative.
//
//===----------------------------------------------------------------------===//

#include "ratrain/kernels/Kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace ratrain::kernels;

namespace ratrain::kernels {
/// Names GEMM forms in gtest output.
void PrintTo(GemmForm form, std::ostream *os) {
  *os << (form == GemmForm::NT ? "NT" : form == GemmForm::NN ? "NN" : "TN");
}
} // namespace ratrain::kernels

namespace {

constexpr double kTol = 1e-4;

std::vector<float> randomVector(size_t n, unsigned seed, float lo = -1.0f,
                                float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Reference round-to-nearest-even fp32 -> bf16.
uint16_t refToBF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000)
    return static_cast<uint16_t>((u >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>((u + rounding) >> 16);
}
float refFromBF16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
/// Reference fp16 -> fp32 (exact).
float refFromF16(uint16_t h) {
  int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0)
    v = std::ldexp(double(man), -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp(double(man | 0x400), exp - 25);
  return static_cast<float>(sign ? -v : v);
}

/// Expects |got[i] - ref[i]| <= tol * scale[i] for all i.
void expectClose(const std::vector<float> &got, const std::vector<double> &ref,
                 const std::vector<double> &scale, double tol,
                 const char *what) {
  ASSERT_EQ(got.size(), ref.size());
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs(double(got[i]) - ref[i]) / scale[i];
    worst = std::max(worst, err);
    if (!(err <= tol))
      ++bad;
  }
  EXPECT_EQ(bad, 0u) << what << ": worst relative error " << worst;
}
void expectClose(const std::vector<float> &got, const std::vector<double> &ref,
                 double tol, const char *what) {
  std::vector<double> scale(ref.size());
  for (size_t i = 0; i < ref.size(); ++i)
    scale[i] = std::max(1.0, std::fabs(ref[i]));
  expectClose(got, ref, scale, tol, what);
}

double dot(const std::vector<float> &a, const std::vector<float> &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += double(a[i]) * b[i];
  return s;
}

/// Central finite difference of a scalar function of x at coordinate i.
double finiteDiff(std::vector<float> &x, size_t i,
                  const std::function<double()> &f, float h = 1e-2f) {
  float saved = x[i];
  x[i] = saved + h;
  double up = f();
  x[i] = saved - h;
  double down = f();
  x[i] = saved;
  return (up - down) / (2.0 * double(h));
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

struct GemmShape {
  int64_t M, N, K;
};
/// Includes K deeper than one k panel (KC <= 2048), so the accumulation
/// over panels runs.
const GemmShape kGemmShapes[] = {
    {1, 1, 1},       {7, 13, 5},      {12, 32, 64},   {37, 65, 129},
    {100, 300, 517}, {130, 97, 1030}, {37, 70, 2100}, {20, 33, 4133}};

/// A(i, k) and B(k, j) of op(A) * op(B) for each form, from row-major data.
double opA(GemmForm f, const std::vector<float> &A, int64_t M, int64_t K,
           int64_t i, int64_t k) {
  return f == GemmForm::TN ? A[k * M + i] : A[i * K + k];
}
double opB(GemmForm f, const std::vector<float> &B, int64_t N, int64_t K,
           int64_t k, int64_t j) {
  return f == GemmForm::NT ? B[j * K + k] : B[k * N + j];
}

void checkGemm(GemmForm form, const GemmShape &s, float beta,
               const std::vector<float> &A, const std::vector<float> &B,
               const std::function<int(float *)> &run) {
  std::vector<float> C0 = randomVector(s.M * s.N, 99);
  std::vector<float> C = C0;
  ASSERT_EQ(run(C.data()), 0);
  std::vector<double> ref(s.M * s.N), scale(s.M * s.N);
  for (int64_t i = 0; i < s.M; ++i) {
    for (int64_t j = 0; j < s.N; ++j) {
      double acc = 0, mag = 0;
      for (int64_t k = 0; k < s.K; ++k) {
        double p = opA(form, A, s.M, s.K, i, k) * opB(form, B, s.N, s.K, k, j);
        acc += p;
        mag += std::fabs(p);
      }
      ref[i * s.N + j] = acc + beta * double(C0[i * s.N + j]);
      scale[i * s.N + j] =
          std::max(1e-6, mag + std::fabs(beta * double(C0[i * s.N + j])));
    }
  }
  expectClose(C, ref, scale, kTol, "gemm");
}

class GemmTest : public ::testing::TestWithParam<GemmForm> {};

/// The fp32 GEMM of shape `s` against the reference, with beta 0 and 1.
void checkFp32Gemm(GemmForm form, const GemmShape &s, unsigned seed) {
  for (float beta : {0.0f, 1.0f}) {
    SCOPED_TRACE(testing::Message()
                 << s.M << "x" << s.N << "x" << s.K << " beta " << beta);
    std::vector<float> A = randomVector(s.M * s.K, seed);
    std::vector<float> B = randomVector(s.K * s.N, seed + 1);
    checkGemm(form, s, beta, A, B, [&](float *C) {
      return gemm(form, s.M, s.N, s.K, A.data(), B.data(), C, beta);
    });
  }
}

TEST_P(GemmTest, Fp32MatchesReference) {
  for (const GemmShape &s : kGemmShapes)
    checkFp32Gemm(GetParam(), s, 1);
}

/// N across several B panels of the build's tiles (NB columns each; 256 on
/// the host's machine file), the last one ragged, with K over two k panels:
/// the n-block loop and its packing of each panel run more than once.
TEST_P(GemmTest, Fp32SpansSeveralBPanels) {
  const TileConfig tiles = tileConfig();
  checkFp32Gemm(GetParam(), {29, 2 * tiles.gemmNb + 45, tiles.gemmKc + 24}, 3);
}

/// The 16-bit bits of `x` in `type`, with `x` rounded to them in place (so
/// a reference on `x` sees the GEMM's inputs).
std::vector<uint16_t> roundThroughHalf(Half type, std::vector<float> &x) {
  std::vector<uint16_t> bits(x.size());
  EXPECT_EQ(toHalf(type, x.size(), x.data(), bits.data()), 0);
  EXPECT_EQ(fromHalf(type, x.size(), bits.data(), x.data()), 0);
  return bits;
}

/// Restores this process's bf16 product path when a test that sets it ends.
struct RestoreBf16Products {
  const Bf16Products cpu = bf16Products();
  ~RestoreBf16Products() { setBf16Products(cpu); }
};

/// N over several blocks of packed B columns (the last one ragged) for K
/// even (B of NT packed as words) and odd (the k-inner pack), fp32 and bf16
/// against the reference: each block's pack reads its own columns of B and
/// its product lands in its own columns of C.
TEST_P(GemmTest, PackedBlocksOfBColumns) {
  const GemmForm form = GetParam();
  const TileConfig tiles = tileConfig();
  RestoreBf16Products restore;
  setBf16Products(Bf16Products::Dot);
  for (int64_t K : {int64_t(1000), int64_t(1001)}) {
    for (int elemBytes : {4, 2}) {
      const int64_t perBlock = tiles.gemmPackedBBytes / (K * elemBytes);
      const GemmShape s{11, std::max(perBlock, int64_t(tiles.gemmNr)) * 3 + 19,
                        K};
      SCOPED_TRACE(testing::Message() << (elemBytes == 2 ? "bf16 " : "fp32 ")
                                      << s.M << "x" << s.N << "x" << s.K);
      if (elemBytes == 4) {
        checkFp32Gemm(form, s, 5);
        continue;
      }
      std::vector<float> A = randomVector(s.M * s.K, 6);
      std::vector<float> B = randomVector(s.K * s.N, 7);
      std::vector<uint16_t> A16 = roundThroughHalf(Half::BF16, A),
                            B16 = roundThroughHalf(Half::BF16, B);
      for (float beta : {0.0f, 1.0f})
        checkGemm(form, s, beta, A, B, [&](float *C) {
          return gemm16(form, Half::BF16, s.M, s.N, s.K, A16.data(), B16.data(),
                        C, beta);
        });
    }
  }
}

TEST_P(GemmTest, Bf16AndFp16MatchReferenceOnRoundedInputs) {
  GemmForm form = GetParam();
  RestoreBf16Products restore;
  for (auto [elemType, products] :
       {std::pair{Half::BF16, Bf16Products::Dot},
        std::pair{Half::BF16, Bf16Products::Widen},
        std::pair{Half::F16, Bf16Products::Widen}}) {
    setBf16Products(products);
    // A copy the lambda below can capture (C++17 lambdas cannot capture a
    // structured binding; clang 14 refuses it).
    const Half type = elemType;
    for (const GemmShape &s : kGemmShapes) {
      for (float beta : {0.0f, 1.0f}) {
        SCOPED_TRACE(testing::Message()
                     << (type == Half::BF16 ? "bf16 " : "fp16 ")
                     << bf16ProductsName(products) << " " << s.M << "x" << s.N
                     << "x" << s.K << " beta " << beta);
        std::vector<float> A = randomVector(s.M * s.K, 3);
        std::vector<float> B = randomVector(s.K * s.N, 4);
        std::vector<uint16_t> A16 = roundThroughHalf(type, A),
                              B16 = roundThroughHalf(type, B);
        checkGemm(form, s, beta, A, B, [&](float *C) {
          return gemm16(form, type, s.M, s.N, s.K, A16.data(), B16.data(), C,
                        beta);
        });
      }
    }
  }
}

TEST_P(GemmTest, WidenedBf16IsTheFp32GemmOfTheWidenedInputs) {
  // The widening bf16 GEMM is the fp32 GEMM's generator and schedule on
  // panels widened while packing: the same bits as gemm() on fromHalf's
  // copies of the operands.
  GemmForm form = GetParam();
  RestoreBf16Products restore;
  setBf16Products(Bf16Products::Widen);
  for (const GemmShape &s : kGemmShapes) {
    for (float beta : {0.0f, 1.0f}) {
      SCOPED_TRACE(testing::Message()
                   << s.M << "x" << s.N << "x" << s.K << " beta " << beta);
      std::vector<float> A = randomVector(s.M * s.K, 5);
      std::vector<float> B = randomVector(s.K * s.N, 6);
      std::vector<uint16_t> A16 = roundThroughHalf(Half::BF16, A),
                            B16 = roundThroughHalf(Half::BF16, B);
      std::vector<float> want = randomVector(s.M * s.N, 7), got = want;
      ASSERT_EQ(
          gemm(form, s.M, s.N, s.K, A.data(), B.data(), want.data(), beta), 0);
      ASSERT_EQ(gemm16(form, Half::BF16, s.M, s.N, s.K, A16.data(), B16.data(),
                       got.data(), beta),
                0);
      EXPECT_EQ(got, want);
    }
  }
}

TEST(Bf16Products, SetChoosesAndNamesThePath) {
  RestoreBf16Products restore;
  setBf16Products(Bf16Products::Dot);
  EXPECT_EQ(bf16Products(), Bf16Products::Dot);
  EXPECT_STREQ(bf16ProductsName(bf16Products()), "dot");
  setBf16Products(Bf16Products::Widen);
  EXPECT_EQ(bf16Products(), Bf16Products::Widen);
  EXPECT_STREQ(bf16ProductsName(bf16Products()), "widen");
}

TEST(Bf16Products, ParsesOnlyItsTwoNames) {
  EXPECT_EQ(parseBf16Products("dot"), Bf16Products::Dot);
  EXPECT_EQ(parseBf16Products("widen"), Bf16Products::Widen);
  for (const char *name : {"", "Dot", "fast", "dot ", "widened"})
    EXPECT_FALSE(parseBf16Products(name).has_value()) << "'" << name << "'";
}

INSTANTIATE_TEST_SUITE_P(Forms, GemmTest,
                         ::testing::Values(GemmForm::NT, GemmForm::NN,
                                           GemmForm::TN),
                         [](const ::testing::TestParamInfo<GemmForm> &info) {
                           switch (info.param) {
                           case GemmForm::NT:
                             return std::string("NT");
                           case GemmForm::NN:
                             return std::string("NN");
                           case GemmForm::TN:
                             return std::string("TN");
                           }
                           return std::string("unknown");
                         });

TEST(Convert, Bf16RoundsToNearestEven) {
  std::vector<float> x = randomVector(1000, 5, -1000.0f, 1000.0f);
  x.push_back(0.0f);
  x.push_back(-0.0f);
  x.push_back(1.0f + 1.0f / 256.0f); // tie -> even (1.0)
  x.push_back(1.0f + 3.0f / 256.0f); // tie -> even (1 + 4/256)
  x.push_back(3.0e38f);
  std::vector<uint16_t> h(x.size());
  ASSERT_EQ(toHalf(Half::BF16, x.size(), x.data(), h.data()), 0);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(h[i], refToBF16(x[i])) << x[i];
  std::vector<float> back(x.size());
  ASSERT_EQ(fromHalf(Half::BF16, h.size(), h.data(), back.data()), 0);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(back[i], refFromBF16(h[i]));
    EXPECT_LE(std::fabs(back[i] - x[i]), std::ldexp(std::fabs(x[i]), -8));
  }
}

TEST(Convert, Fp16RoundTripsWithinHalfUlp) {
  std::vector<float> x = randomVector(1000, 6, -60000.0f, 60000.0f);
  std::vector<float> small = randomVector(100, 7, -1.0f, 1.0f);
  x.insert(x.end(), small.begin(), small.end());
  std::vector<uint16_t> h(x.size());
  ASSERT_EQ(toHalf(Half::F16, x.size(), x.data(), h.data()), 0);
  std::vector<float> back(x.size());
  ASSERT_EQ(fromHalf(Half::F16, h.size(), h.data(), back.data()), 0);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(back[i], refFromF16(h[i]));
    // Normal range: half an ulp of 10 mantissa bits.
    if (std::fabs(x[i]) > 6.2e-5f)
      EXPECT_LE(std::fabs(back[i] - x[i]), std::ldexp(std::fabs(x[i]), -11))
          << x[i];
  }
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttnShape {
  int64_t B, S, Hq, Hkv, D;
};

/// The ALiBi slopes, written as Baichuan2's modeling code computes them:
/// `_get_interleave(n)` for the largest power of two n <= heads, then every
/// other slope of `_get_interleave(2n)` for the rest.
std::vector<double> refAlibiSlopes(int64_t heads) {
  auto interleave = [](int64_t n) {
    double start = std::pow(2.0, -std::pow(2.0, -(std::log2(double(n)) - 3)));
    std::vector<double> slopes;
    for (int64_t i = 0; i < n; ++i)
      slopes.push_back(start * std::pow(start, double(i)));
    return slopes;
  };
  int64_t n = int64_t(1) << int64_t(std::floor(std::log2(double(heads))));
  std::vector<double> slopes = interleave(n);
  if (n != heads) {
    std::vector<double> extra = interleave(2 * n);
    for (int64_t i = 0; int64_t(slopes.size()) < heads; i += 2)
      slopes.push_back(extra[i]);
  }
  return slopes;
}

/// Double-precision causal GQA attention; returns out and lse. With
/// `slopes` (one per query head) the scores get the ALiBi bias
/// slopes[h] * (j - i).
void refAttention(const AttnShape &a, const std::vector<float> &q,
                  const std::vector<float> &k, const std::vector<float> &v,
                  double scale, std::vector<double> &out,
                  std::vector<double> &lse,
                  const std::vector<double> *slopes = nullptr,
                  int64_t window = 0) {
  const int64_t G = a.Hq / a.Hkv;
  // The first key query i sees (a sliding window of `window` tokens).
  auto first = [&](int64_t i) {
    return window > 0 ? std::max<int64_t>(0, i - window + 1) : 0;
  };
  out.assign(a.B * a.S * a.Hq * a.D, 0.0);
  lse.assign(a.B * a.Hq * a.S, 0.0);
  std::vector<double> s(a.S);
  for (int64_t b = 0; b < a.B; ++b)
    for (int64_t h = 0; h < a.Hq; ++h)
      for (int64_t i = 0; i < a.S; ++i) {
        const float *qi = &q[((b * a.S + i) * a.Hq + h) * a.D];
        double mx = -INFINITY;
        for (int64_t j = first(i); j <= i; ++j) {
          const float *kj = &k[((b * a.S + j) * a.Hkv + h / G) * a.D];
          double d = 0;
          for (int64_t x = 0; x < a.D; ++x)
            d += double(qi[x]) * kj[x];
          s[j] = d * scale + (slopes ? (*slopes)[h] * double(j - i) : 0.0);
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int64_t j = first(i); j <= i; ++j)
          sum += std::exp(s[j] - mx);
        double l = mx + std::log(sum);
        lse[(b * a.Hq + h) * a.S + i] = l;
        double *oi = &out[((b * a.S + i) * a.Hq + h) * a.D];
        for (int64_t j = first(i); j <= i; ++j) {
          double p = std::exp(s[j] - l);
          const float *vj = &v[((b * a.S + j) * a.Hkv + h / G) * a.D];
          for (int64_t x = 0; x < a.D; ++x)
            oi[x] += p * vj[x];
        }
      }
}

/// Double-precision attention backward (dq, dk, dv).
void refAttentionBackward(const AttnShape &a, const std::vector<float> &q,
                          const std::vector<float> &k,
                          const std::vector<float> &v,
                          const std::vector<float> &dout, double scale,
                          std::vector<double> &dq, std::vector<double> &dk,
                          std::vector<double> &dv,
                          const std::vector<double> *slopes = nullptr,
                          int64_t window = 0) {
  std::vector<double> out, lse;
  refAttention(a, q, k, v, scale, out, lse, slopes, window);
  const int64_t G = a.Hq / a.Hkv;
  dq.assign(q.size(), 0.0);
  dk.assign(k.size(), 0.0);
  dv.assign(v.size(), 0.0);
  for (int64_t b = 0; b < a.B; ++b)
    for (int64_t h = 0; h < a.Hq; ++h)
      for (int64_t i = 0; i < a.S; ++i) {
        size_t qi = ((b * a.S + i) * a.Hq + h) * a.D;
        double delta = 0;
        for (int64_t x = 0; x < a.D; ++x)
          delta += double(dout[qi + x]) * out[qi + x];
        double l = lse[(b * a.Hq + h) * a.S + i];
        for (int64_t j = window > 0 ? std::max<int64_t>(0, i - window + 1) : 0;
             j <= i; ++j) {
          size_t kj = ((b * a.S + j) * a.Hkv + h / G) * a.D;
          double sdot = 0, dp = 0;
          for (int64_t x = 0; x < a.D; ++x) {
            sdot += double(q[qi + x]) * k[kj + x];
            dp += double(dout[qi + x]) * v[kj + x];
          }
          double bias = slopes ? (*slopes)[h] * double(j - i) : 0.0;
          double p = std::exp(sdot * scale + bias - l);
          double ds = p * (dp - delta);
          for (int64_t x = 0; x < a.D; ++x) {
            dv[kj + x] += p * dout[qi + x];
            dq[qi + x] += scale * ds * k[kj + x];
            dk[kj + x] += scale * ds * q[qi + x];
          }
        }
      }
}

/// Every supported head dimension (32 is the tiny LLaMA's), ragged lengths;
/// those over 64 span several key blocks of the backward (64 keys each,
/// lib/Attention.cpp attentionKeyBlock), the last block partial.
const AttnShape kAttnShapes[] = {
    {1, 1, 1, 1, 64},   {2, 37, 4, 2, 64},  {1, 100, 2, 1, 128},
    {1, 65, 3, 3, 128}, {2, 70, 8, 2, 64},  {1, 45, 8, 4, 32},
    {2, 129, 4, 1, 32}, {1, 700, 2, 1, 64}, {1, 613, 4, 2, 32}};

TEST(Attention, ForwardMatchesReference) {
  for (const AttnShape &a : kAttnShapes) {
    SCOPED_TRACE(testing::Message() << "B" << a.B << " S" << a.S << " Hq"
                                    << a.Hq << " Hkv" << a.Hkv << " D" << a.D);
    auto q = randomVector(a.B * a.S * a.Hq * a.D, 10);
    auto k = randomVector(a.B * a.S * a.Hkv * a.D, 11);
    auto v = randomVector(a.B * a.S * a.Hkv * a.D, 12);
    float scale = 1.0f / std::sqrt(float(a.D));
    std::vector<float> out(q.size()), lse(a.B * a.Hq * a.S);
    ASSERT_EQ(attentionForward(a.B, a.S, a.Hq, a.Hkv, a.D, q.data(), k.data(),
                               v.data(), scale, out.data(), lse.data()),
              0);
    std::vector<double> rout, rlse;
    refAttention(a, q, k, v, scale, rout, rlse);
    expectClose(out, rout, kTol, "attention out");
    expectClose(lse, rlse, kTol, "attention lse");
  }
}

TEST(Attention, SlidingWindowMatchesReference) {
  // Windows shorter than a key tile, across tile edges, and as long as the
  // sequence (plain causal attention).
  const AttnShape shapes[] = {
      {2, 70, 4, 2, 64}, {1, 129, 4, 1, 32}, {1, 600, 2, 1, 32}};
  for (const AttnShape &a : shapes)
    for (int64_t window : {int64_t(1), int64_t(5), int64_t(32), int64_t(33),
                           int64_t(64), int64_t(a.S)}) {
      SCOPED_TRACE(testing::Message()
                   << "S" << a.S << " D" << a.D << " window " << window);
      auto q = randomVector(a.B * a.S * a.Hq * a.D, 30);
      auto k = randomVector(a.B * a.S * a.Hkv * a.D, 31);
      auto v = randomVector(a.B * a.S * a.Hkv * a.D, 32);
      auto dout = randomVector(q.size(), 33);
      float scale = 1.0f / std::sqrt(float(a.D));
      std::vector<float> out(q.size()), lse(a.B * a.Hq * a.S);
      ASSERT_EQ(attentionForward(a.B, a.S, a.Hq, a.Hkv, a.D, q.data(), k.data(),
                                 v.data(), scale, out.data(), lse.data(),
                                 nullptr, window),
                0);
      std::vector<double> rout, rlse;
      refAttention(a, q, k, v, scale, rout, rlse, nullptr, window);
      expectClose(out, rout, kTol, "attention out");
      expectClose(lse, rlse, kTol, "attention lse");
      std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
      ASSERT_EQ(attentionBackward(a.B, a.S, a.Hq, a.Hkv, a.D, q.data(),
                                  k.data(), v.data(), out.data(), dout.data(),
                                  lse.data(), scale, dq.data(), dk.data(),
                                  dv.data(), nullptr, window),
                0);
      std::vector<double> rdq, rdk, rdv;
      refAttentionBackward(a, q, k, v, dout, scale, rdq, rdk, rdv, nullptr,
                           window);
      expectClose(dq, rdq, kTol, "dq");
      expectClose(dk, rdk, kTol, "dk");
      expectClose(dv, rdv, kTol, "dv");
    }
}

TEST(Attention, BackwardMatchesReference) {
  for (const AttnShape &a : kAttnShapes) {
    SCOPED_TRACE(testing::Message() << "B" << a.B << " S" << a.S << " Hq"
                                    << a.Hq << " Hkv" << a.Hkv << " D" << a.D);
    auto q = randomVector(a.B * a.S * a.Hq * a.D, 20);
    auto k = randomVector(a.B * a.S * a.Hkv * a.D, 21);
    auto v = randomVector(a.B * a.S * a.Hkv * a.D, 22);
    auto dout = randomVector(q.size(), 23);
    float scale = 1.0f / std::sqrt(float(a.D));
    std::vector<float> out(q.size()), lse(a.B * a.Hq * a.S);
    ASSERT_EQ(attentionForward(a.B, a.S, a.Hq, a.Hkv, a.D, q.data(), k.data(),
                               v.data(), scale, out.data(), lse.data()),
              0);
    std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
    ASSERT_EQ(attentionBackward(a.B, a.S, a.Hq, a.Hkv, a.D, q.data(), k.data(),
                                v.data(), out.data(), dout.data(), lse.data(),
                                scale, dq.data(), dk.data(), dv.data()),
              0);
    std::vector<double> rdq, rdk, rdv;
    refAttentionBackward(a, q, k, v, dout, scale, rdq, rdk, rdv);
    expectClose(dq, rdq, kTol, "dq");
    expectClose(dk, rdk, kTol, "dk");
    expectClose(dv, rdv, kTol, "dv");
  }
}

TEST(Attention, BackwardMatchesFiniteDifferences) {
  const AttnShape a{1, 33, 4, 2, 64};
  auto q = randomVector(a.B * a.S * a.Hq * a.D, 30);
  auto k = randomVector(a.B * a.S * a.Hkv * a.D, 31);
  auto v = randomVector(a.B * a.S * a.Hkv * a.D, 32);
  auto r = randomVector(q.size(), 33); // L = sum(out * r)
  float scale = 1.0f / std::sqrt(float(a.D));
  std::vector<float> out(q.size()), lse(a.B * a.Hq * a.S);
  auto loss = [&]() {
    EXPECT_EQ(attentionForward(a.B, a.S, a.Hq, a.Hkv, a.D, q.data(), k.data(),
                               v.data(), scale, out.data(), lse.data()),
              0);
    return dot(out, r);
  };
  loss();
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
  ASSERT_EQ(attentionBackward(a.B, a.S, a.Hq, a.Hkv, a.D, q.data(), k.data(),
                              v.data(), out.data(), r.data(), lse.data(), scale,
                              dq.data(), dk.data(), dv.data()),
            0);
  std::mt19937 gen(7);
  for (int trial = 0; trial < 12; ++trial) {
    size_t iq = gen() % q.size(), ik = gen() % k.size(), iv = gen() % v.size();
    EXPECT_NEAR(dq[iq], finiteDiff(q, iq, loss),
                2e-2 * (1 + std::fabs(dq[iq])));
    EXPECT_NEAR(dk[ik], finiteDiff(k, ik, loss),
                2e-2 * (1 + std::fabs(dk[ik])));
    EXPECT_NEAR(dv[iv], finiteDiff(v, iv, loss),
                2e-2 * (1 + std::fabs(dv[iv])));
  }
}

TEST(Attention, AlibiSlopesMatchBaichuan) {
  for (int64_t heads : {1, 2, 3, 4, 6, 8, 12, 32, 40, 64, 80}) {
    SCOPED_TRACE(testing::Message() << "heads " << heads);
    std::vector<float> slopes(heads);
    alibiSlopes(heads, slopes.data());
    std::vector<double> ref = refAlibiSlopes(heads);
    ASSERT_EQ(ref.size(), size_t(heads));
    for (int64_t h = 0; h < heads; ++h)
      EXPECT_NEAR(slopes[h], ref[h], 1e-7 * ref[h]) << "head " << h;
  }
  // Spelled out: 8 heads are 2^-1 .. 2^-8; 40 heads (Baichuan2-13B) are
  // 2^(-(k+1)/4) for k < 32, then 2^(-(2m+1)/8).
  std::vector<float> s8(8), s40(40);
  alibiSlopes(8, s8.data());
  alibiSlopes(40, s40.data());
  for (int k = 0; k < 8; ++k)
    EXPECT_EQ(s8[k], std::ldexp(1.0f, -(k + 1)));
  EXPECT_FLOAT_EQ(s40[0], std::pow(2.0f, -0.25f));
  EXPECT_FLOAT_EQ(s40[31], 1.0f / 256);
  EXPECT_FLOAT_EQ(s40[32], std::pow(2.0f, -0.125f));
  EXPECT_FLOAT_EQ(s40[39], std::pow(2.0f, -15.0f / 8));
}

/// ALiBi shapes: power-of-two and other head counts (40: Baichuan2-13B),
/// GQA, every head dimension, ragged lengths.
const AttnShape kAlibiShapes[] = {{1, 1, 1, 1, 64},     {2, 37, 4, 4, 64},
                                  {1, 100, 40, 40, 32}, {1, 65, 3, 3, 128},
                                  {2, 70, 6, 2, 64},    {1, 129, 8, 8, 32},
                                  {1, 50, 12, 4, 128},  {1, 650, 4, 2, 64}};

TEST(Attention, AlibiForwardAndBackwardMatchReference) {
  for (const AttnShape &a : kAlibiShapes) {
    SCOPED_TRACE(testing::Message() << "B" << a.B << " S" << a.S << " Hq"
                                    << a.Hq << " Hkv" << a.Hkv << " D" << a.D);
    auto q = randomVector(a.B * a.S * a.Hq * a.D, 40);
    auto k = randomVector(a.B * a.S * a.Hkv * a.D, 41);
    auto v = randomVector(a.B * a.S * a.Hkv * a.D, 42);
    auto dout = randomVector(q.size(), 43);
    float scale = 1.0f / std::sqrt(float(a.D));
    std::vector<float> slopes(a.Hq);
    alibiSlopes(a.Hq, slopes.data());
    std::vector<double> rslopes(slopes.begin(), slopes.end());
    std::vector<float> out(q.size()), lse(a.B * a.Hq * a.S);
    ASSERT_EQ(attentionForward(a.B, a.S, a.Hq, a.Hkv, a.D, q.data(), k.data(),
                               v.data(), scale, out.data(), lse.data(),
                               slopes.data()),
              0);
    std::vector<double> rout, rlse;
    refAttention(a, q, k, v, scale, rout, rlse, &rslopes);
    expectClose(out, rout, kTol, "alibi out");
    expectClose(lse, rlse, kTol, "alibi lse");
    std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
    ASSERT_EQ(attentionBackward(a.B, a.S, a.Hq, a.Hkv, a.D, q.data(), k.data(),
                                v.data(), out.data(), dout.data(), lse.data(),
                                scale, dq.data(), dk.data(), dv.data(),
                                slopes.data()),
              0);
    std::vector<double> rdq, rdk, rdv;
    refAttentionBackward(a, q, k, v, dout, scale, rdq, rdk, rdv, &rslopes);
    expectClose(dq, rdq, kTol, "alibi dq");
    expectClose(dk, rdk, kTol, "alibi dk");
    expectClose(dv, rdv, kTol, "alibi dv");
    // The bias changes the result: the plain kernel's output differs.
    if (a.S > 1) {
      std::vector<float> plain(q.size()), plainLse(lse.size());
      ASSERT_EQ(attentionForward(a.B, a.S, a.Hq, a.Hkv, a.D, q.data(), k.data(),
                                 v.data(), scale, plain.data(),
                                 plainLse.data()),
                0);
      double maxDiff = 0;
      for (size_t i = 0; i < out.size(); ++i)
        maxDiff = std::max(maxDiff, double(std::fabs(out[i] - plain[i])));
      EXPECT_GT(maxDiff, 1e-2);
    }
  }
}

TEST(Attention, AlibiBackwardMatchesFiniteDifferences) {
  const AttnShape a{1, 33, 6, 3, 64};
  auto q = randomVector(a.B * a.S * a.Hq * a.D, 50);
  auto k = randomVector(a.B * a.S * a.Hkv * a.D, 51);
  auto v = randomVector(a.B * a.S * a.Hkv * a.D, 52);
  auto r = randomVector(q.size(), 53); // L = sum(out * r)
  float scale = 1.0f / std::sqrt(float(a.D));
  std::vector<float> slopes(a.Hq);
  alibiSlopes(a.Hq, slopes.data());
  std::vector<float> out(q.size()), lse(a.B * a.Hq * a.S);
  auto loss = [&]() {
    EXPECT_EQ(attentionForward(a.B, a.S, a.Hq, a.Hkv, a.D, q.data(), k.data(),
                               v.data(), scale, out.data(), lse.data(),
                               slopes.data()),
              0);
    return dot(out, r);
  };
  loss();
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
  ASSERT_EQ(attentionBackward(a.B, a.S, a.Hq, a.Hkv, a.D, q.data(), k.data(),
                              v.data(), out.data(), r.data(), lse.data(), scale,
                              dq.data(), dk.data(), dv.data(), slopes.data()),
            0);
  std::mt19937 gen(9);
  for (int trial = 0; trial < 12; ++trial) {
    size_t iq = gen() % q.size(), ik = gen() % k.size(), iv = gen() % v.size();
    EXPECT_NEAR(dq[iq], finiteDiff(q, iq, loss),
                2e-2 * (1 + std::fabs(dq[iq])));
    EXPECT_NEAR(dk[ik], finiteDiff(k, ik, loss),
                2e-2 * (1 + std::fabs(dk[ik])));
    EXPECT_NEAR(dv[iv], finiteDiff(v, iv, loss),
                2e-2 * (1 + std::fabs(dv[iv])));
  }
}

TEST(Attention, RejectsUnsupportedShapes) {
  std::vector<float> buf(4096);
  EXPECT_EQ(attentionForward(1, 4, 3, 2, 64, buf.data(), buf.data(), buf.data(),
                             1.0f, buf.data(), buf.data()),
            -1);
  EXPECT_EQ(attentionForward(1, 4, 2, 2, 96, buf.data(), buf.data(), buf.data(),
                             1.0f, buf.data(), buf.data()),
            -1);
}

//===----------------------------------------------------------------------===//
// RMSNorm
//===----------------------------------------------------------------------===//

TEST(ParallelLoops, OnTheCallingThreadGiveTheSameBits) {
  // A GEMM and an RMSNorm of several parallel tasks, on a pool of 4 workers
  // and then with every loop on the calling thread: the same results; the
  // pool again after.
  setNumThreads(4);
  const int64_t M = 96, N = 80, K = 64, T = 64, H = 1000;
  auto a = randomVector(M * K, 50), b = randomVector(N * K, 51);
  auto x = randomVector(T * H, 52), w = randomVector(H, 53, 0.5f, 1.5f);
  auto run = [&] {
    std::vector<float> c(M * N), y(T * H), rstd(T);
    EXPECT_EQ(gemm(GemmForm::NT, M, N, K, a.data(), b.data(), c.data(), 0.0f),
              0);
    EXPECT_EQ(
        rmsnormForward(T, H, x.data(), w.data(), 1e-5f, y.data(), rstd.data()),
        0);
    c.insert(c.end(), y.begin(), y.end());
    return c;
  };
  std::vector<float> pool = run();
  setCallerThreadLoops(true);
  setCallerThreadLoops(true); // twice: still restorable
  std::vector<float> caller = run();
  setCallerThreadLoops(false);
  std::vector<float> again = run();
  setNumThreads(0);
  ASSERT_EQ(pool.size(), caller.size());
  EXPECT_EQ(std::memcmp(pool.data(), caller.data(), pool.size() * 4), 0);
  EXPECT_EQ(std::memcmp(pool.data(), again.data(), pool.size() * 4), 0);
}

const std::pair<int64_t, int64_t> kRowShapes[] = {
    {1, 1}, {3, 17}, {9, 64}, {33, 300}, {64, 1000}};

TEST(RmsNorm, ForwardAndBackwardMatchReference) {
  const float eps = 1e-5f;
  for (auto [T, H] : kRowShapes) {
    SCOPED_TRACE(testing::Message() << T << "x" << H);
    auto x = randomVector(T * H, 40);
    auto w = randomVector(H, 41, 0.5f, 1.5f);
    auto dy = randomVector(T * H, 42);
    std::vector<float> y(T * H), rstd(T);
    ASSERT_EQ(
        rmsnormForward(T, H, x.data(), w.data(), eps, y.data(), rstd.data()),
        0);
    std::vector<float> dx(T * H), dw(H, 0.5f);
    ASSERT_EQ(rmsnormBackward(T, H, x.data(), w.data(), rstd.data(), dy.data(),
                              dx.data(), dw.data()),
              0);
    std::vector<double> ry(T * H), rr(T), rdx(T * H), rdw(H, 0.5);
    for (int64_t t = 0; t < T; ++t) {
      double ss = 0, c = 0;
      for (int64_t h = 0; h < H; ++h)
        ss += double(x[t * H + h]) * x[t * H + h];
      double r = 1.0 / std::sqrt(ss / H + eps);
      rr[t] = r;
      for (int64_t h = 0; h < H; ++h) {
        ry[t * H + h] = x[t * H + h] * r * w[h];
        c += double(dy[t * H + h]) * w[h] * x[t * H + h];
      }
      for (int64_t h = 0; h < H; ++h) {
        rdx[t * H + h] =
            r * w[h] * dy[t * H + h] - x[t * H + h] * r * r * r / H * c;
        rdw[h] += double(dy[t * H + h]) * x[t * H + h] * r;
      }
    }
    expectClose(y, ry, kTol, "rmsnorm y");
    expectClose(rstd, rr, kTol, "rmsnorm rstd");
    expectClose(dx, rdx, kTol, "rmsnorm dx");
    expectClose(dw, rdw, kTol, "rmsnorm dw (accumulated)");
  }
}

TEST(RmsNorm, BackwardMatchesFiniteDifferences) {
  const int64_t T = 5, H = 40;
  const float eps = 1e-5f;
  auto x = randomVector(T * H, 43);
  auto w = randomVector(H, 44, 0.5f, 1.5f);
  auto r = randomVector(T * H, 45);
  std::vector<float> y(T * H), rstd(T);
  auto loss = [&]() {
    EXPECT_EQ(
        rmsnormForward(T, H, x.data(), w.data(), eps, y.data(), rstd.data()),
        0);
    return dot(y, r);
  };
  loss();
  std::vector<float> dx(T * H), dw(H, 0.0f);
  ASSERT_EQ(rmsnormBackward(T, H, x.data(), w.data(), rstd.data(), r.data(),
                            dx.data(), dw.data()),
            0);
  for (size_t i = 0; i < x.size(); i += 7)
    EXPECT_NEAR(dx[i], finiteDiff(x, i, loss), 1e-2 * (1 + std::fabs(dx[i])));
  for (size_t i = 0; i < w.size(); i += 3)
    EXPECT_NEAR(dw[i], finiteDiff(w, i, loss), 1e-2 * (1 + std::fabs(dw[i])));
}

//===----------------------------------------------------------------------===//
// RoPE
//===----------------------------------------------------------------------===//

TEST(Rope, ForwardMatchesReferenceAndBackwardIsTranspose) {
  struct Shape {
    int64_t T, heads, D;
  };
  for (Shape s :
       {Shape{1, 1, 2}, Shape{7, 3, 64}, Shape{19, 4, 128}, Shape{5, 2, 10}}) {
    SCOPED_TRACE(testing::Message() << s.T << "x" << s.heads << "x" << s.D);
    const int64_t maxPos = 64, half = s.D / 2;
    std::vector<float> cosT(maxPos * half), sinT(maxPos * half);
    ropeTables(maxPos, s.D, 10000.0, cosT.data(), sinT.data());
    std::vector<int32_t> pos(s.T);
    for (int64_t t = 0; t < s.T; ++t)
      pos[t] = int32_t((t * 7 + 3) % maxPos);
    auto x = randomVector(s.T * s.heads * s.D, 50);
    std::vector<float> y(x.size());
    ASSERT_EQ(ropeForward(s.T, s.heads, s.D, pos.data(), maxPos, cosT.data(),
                          sinT.data(), x.data(), y.data()),
              0);
    std::vector<double> ry(x.size());
    for (int64_t t = 0; t < s.T; ++t)
      for (int64_t h = 0; h < s.heads; ++h)
        for (int64_t i = 0; i < half; ++i) {
          double a = pos[t] * std::pow(10000.0, -2.0 * i / double(s.D));
          size_t base = (t * s.heads + h) * s.D;
          double x0 = x[base + i], x1 = x[base + i + half];
          ry[base + i] = x0 * std::cos(a) - x1 * std::sin(a);
          ry[base + i + half] = x1 * std::cos(a) + x0 * std::sin(a);
        }
    expectClose(y, ry, kTol, "rope");
    // Backward is the transpose: <R x, z> == <x, R^T z>.
    auto z = randomVector(x.size(), 51);
    std::vector<float> dz(x.size());
    ASSERT_EQ(ropeBackward(s.T, s.heads, s.D, pos.data(), maxPos, cosT.data(),
                           sinT.data(), z.data(), dz.data()),
              0);
    double lhs = dot(y, z), rhs = dot(x, dz);
    EXPECT_NEAR(lhs, rhs, kTol * (1 + std::fabs(lhs)));
  }
}

//===----------------------------------------------------------------------===//
// SwiGLU, add
//===----------------------------------------------------------------------===//

TEST(SwiGlu, ForwardAndBackwardMatchReference) {
  for (auto [T, F] : kRowShapes) {
    SCOPED_TRACE(testing::Message() << T << "x" << F);
    auto g = randomVector(T * F, 60, -6.0f, 6.0f);
    auto u = randomVector(T * F, 61);
    auto dh = randomVector(T * F, 62);
    if (T * F > 2) {
      g[0] = -120.0f; // saturated sigmoid
      g[1] = 95.0f;
    }
    std::vector<float> h(T * F), dg(T * F), du(T * F);
    ASSERT_EQ(swigluForward(T, F, g.data(), u.data(), h.data()), 0);
    ASSERT_EQ(swigluBackward(T, F, g.data(), u.data(), dh.data(), dg.data(),
                             du.data()),
              0);
    std::vector<double> rh(T * F), rdg(T * F), rdu(T * F);
    for (int64_t i = 0; i < T * F; ++i) {
      double s = 1.0 / (1.0 + std::exp(-double(g[i])));
      rh[i] = g[i] * s * u[i];
      rdg[i] = dh[i] * u[i] * s * (1 + g[i] * (1 - s));
      rdu[i] = dh[i] * g[i] * s;
    }
    expectClose(h, rh, kTol, "swiglu h");
    expectClose(dg, rdg, kTol, "swiglu dg");
    expectClose(du, rdu, kTol, "swiglu du");
  }
}

TEST(SwiGlu, BackwardMatchesFiniteDifferences) {
  const int64_t T = 3, F = 50;
  auto g = randomVector(T * F, 63, -3.0f, 3.0f);
  auto u = randomVector(T * F, 64);
  auto r = randomVector(T * F, 65);
  std::vector<float> h(T * F);
  auto loss = [&]() {
    EXPECT_EQ(swigluForward(T, F, g.data(), u.data(), h.data()), 0);
    return dot(h, r);
  };
  std::vector<float> dg(T * F), du(T * F);
  ASSERT_EQ(
      swigluBackward(T, F, g.data(), u.data(), r.data(), dg.data(), du.data()),
      0);
  for (size_t i = 0; i < g.size(); i += 5) {
    EXPECT_NEAR(dg[i], finiteDiff(g, i, loss), 1e-2 * (1 + std::fabs(dg[i])));
    EXPECT_NEAR(du[i], finiteDiff(u, i, loss), 1e-2 * (1 + std::fabs(du[i])));
  }
}

TEST(Add, MatchesReferenceInPlace) {
  for (int64_t n : {1, 15, 17, 100003}) {
    auto a = randomVector(n, 70), b = randomVector(n, 71);
    std::vector<double> ref(n);
    for (int64_t i = 0; i < n; ++i)
      ref[i] = double(a[i]) + b[i];
    ASSERT_EQ(add(n, a.data(), b.data(), a.data()), 0);
    expectClose(a, ref, 1e-7, "add");
  }
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

TEST(Embedding, LookupAndGradientWithDuplicates) {
  for (auto [T, H] : kRowShapes) {
    SCOPED_TRACE(testing::Message() << T << "x" << H);
    const int64_t V = 11;
    auto table = randomVector(V * H, 80);
    std::vector<int32_t> ids(T);
    for (int64_t t = 0; t < T; ++t)
      ids[t] = int32_t((t * 5 + 2) % 4); // few distinct ids: duplicates
    std::vector<float> out(T * H);
    ASSERT_EQ(embeddingForward(T, V, H, ids.data(), table.data(), out.data()),
              0);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        ASSERT_EQ(out[t * H + h], table[ids[t] * H + h]);
    auto dout = randomVector(T * H, 81);
    std::vector<float> dtable(V * H, 0.25f);
    ASSERT_EQ(
        embeddingBackward(T, V, H, ids.data(), dout.data(), dtable.data()), 0);
    std::vector<double> ref(V * H, 0.25);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        ref[ids[t] * H + h] += dout[t * H + h];
    expectClose(dtable, ref, kTol, "embedding gradient");
  }
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

TEST(CrossEntropy, LossAndGradientMatchReference) {
  for (auto [T, V] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {3, 17}, {9, 1000}, {20, 32000}}) {
    SCOPED_TRACE(testing::Message() << T << "x" << V);
    auto logits = randomVector(T * V, 90, -8.0f, 8.0f);
    std::vector<int32_t> targets(T);
    for (int64_t t = 0; t < T; ++t)
      targets[t] = int32_t((t * 37 + 1) % V);
    if (T > 2)
      targets[1] = -100; // ignored
    const float scale = 1.0f / float(T);
    std::vector<float> loss(T), dlogits(T * V);
    ASSERT_EQ(crossEntropy(T, V, logits.data(), targets.data(), scale,
                           loss.data(), dlogits.data()),
              0);
    std::vector<double> rloss(T), rd(T * V);
    for (int64_t t = 0; t < T; ++t) {
      bool valid = targets[t] >= 0 && targets[t] < V;
      double mx = -INFINITY, s = 0;
      for (int64_t v = 0; v < V; ++v)
        mx = std::max(mx, double(logits[t * V + v]));
      for (int64_t v = 0; v < V; ++v)
        s += std::exp(logits[t * V + v] - mx);
      double lse = mx + std::log(s);
      rloss[t] = valid ? lse - logits[t * V + targets[t]] : 0.0;
      for (int64_t v = 0; v < V; ++v)
        rd[t * V + v] = valid ? scale * (std::exp(logits[t * V + v] - lse) -
                                         (v == targets[t] ? 1.0 : 0.0))
                              : 0.0;
    }
    expectClose(loss, rloss, kTol, "loss");
    expectClose(dlogits, rd, kTol, "dlogits");
    // In place: dlogits over logits.
    ASSERT_EQ(crossEntropy(T, V, logits.data(), targets.data(), scale,
                           loss.data(), logits.data()),
              0);
    expectClose(logits, rd, kTol, "dlogits in place");
    expectClose(loss, rloss, kTol, "loss (in-place run)");
  }
}

TEST(CrossEntropy, GradientMatchesFiniteDifferences) {
  const int64_t T = 4, V = 30;
  auto logits = randomVector(T * V, 91, -3.0f, 3.0f);
  std::vector<int32_t> targets = {3, 29, 0, 7};
  std::vector<float> loss(T), dl(T * V);
  auto total = [&]() {
    std::vector<float> scratch(T * V);
    EXPECT_EQ(crossEntropy(T, V, logits.data(), targets.data(), 1.0f,
                           loss.data(), scratch.data()),
              0);
    double s = 0;
    for (float l : loss)
      s += l;
    return s;
  };
  ASSERT_EQ(crossEntropy(T, V, logits.data(), targets.data(), 1.0f, loss.data(),
                         dl.data()),
            0);
  for (size_t i = 0; i < logits.size(); i += 3)
    EXPECT_NEAR(dl[i], finiteDiff(logits, i, total, 1e-2f), 2e-3);
}

//===----------------------------------------------------------------------===//
// Sum of squares (gradient norm)
//===----------------------------------------------------------------------===//

TEST(SumSquares, MatchesReference) {
  for (int64_t n : {0, 1, 15, 16385, 100003}) {
    auto x = randomVector(n, 110, -3.0f, 3.0f);
    double ref = 0;
    for (float v : x)
      ref += double(v) * v;
    double got = -1;
    ASSERT_EQ(sumSquares(n, x.data(), &got), 0);
    EXPECT_NEAR(got, ref, kTol * std::max(1.0, ref)) << n;
  }
}

//===----------------------------------------------------------------------===//
// AdamW
//===----------------------------------------------------------------------===//

TEST(AdamW, UpdateAndViewsMatchReference) {
  for (int64_t n : {1, 31, 4097}) {
    for (int view = 0; view < 3; ++view) {
      SCOPED_TRACE(testing::Message() << "n " << n << " view " << view);
      auto p = randomVector(n, 100), g = randomVector(n, 101);
      auto m = randomVector(n, 102, -0.1f, 0.1f);
      auto v = randomVector(n, 103, 0.0f, 0.01f);
      AdamWParams hp;
      hp.lr = 1e-2f;
      hp.weightDecay = 0.1f;
      hp.step = 3;
      hp.gradScale = 0.5f;
      std::vector<double> rp(n), rm(n), rv(n);
      double bc1 = 1 - std::pow(double(hp.beta1), 3.0);
      double bc2 = 1 - std::pow(double(hp.beta2), 3.0);
      for (int64_t i = 0; i < n; ++i) {
        double gs = double(g[i]) * hp.gradScale;
        rm[i] = hp.beta1 * double(m[i]) + (1 - hp.beta1) * gs;
        rv[i] = hp.beta2 * double(v[i]) + (1 - hp.beta2) * gs * gs;
        double pd = p[i] - double(hp.lr) * hp.weightDecay * p[i];
        rp[i] = pd - hp.lr * (rm[i] / bc1) / (std::sqrt(rv[i] / bc2) + hp.eps);
      }
      std::vector<uint16_t> view16(n, 0);
      Half type = view == 2 ? Half::F16 : Half::BF16;
      ASSERT_EQ(adamw(n, p.data(), g.data(), m.data(), v.data(), hp,
                      view ? view16.data() : nullptr, type),
                0);
      expectClose(p, rp, kTol, "p");
      expectClose(m, rm, kTol, "m");
      expectClose(v, rv, kTol, "v");
      if (view) {
        std::vector<uint16_t> expect(n);
        ASSERT_EQ(toHalf(type, n, p.data(), expect.data()), 0);
        EXPECT_EQ(view16, expect);
      }
    }
  }
}

/// The 16-bit view is the stored master rounded, for every element: a
/// resumed run rebuilds the views from the checkpointed masters, so a view
/// that is not toHalf(master) makes it diverge from the uninterrupted run.
/// Small parameters with updates of their own size cancel to values near
/// 16-bit rounding ties, where an update computed twice (once fused, once
/// not) rounded differently: 6-7 of these 4 Mi elements did.
TEST(AdamW, ViewIsTheStoredMasterRounded) {
  const int64_t n = int64_t(1) << 22;
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> p(n), g(n), m(n), v(n);
  for (int64_t i = 0; i < n; ++i) {
    p[i] = u(gen) * 0.05f;
    g[i] = u(gen) * 1e-3f;
    m[i] = u(gen) * 1e-4f;
    v[i] = std::fabs(u(gen)) * 1e-7f;
  }
  AdamWParams hp;
  hp.lr = 1e-3f;
  hp.weightDecay = 0.1f;
  hp.step = 2;
  for (Half type : {Half::BF16, Half::F16}) {
    std::vector<uint16_t> view(n), expect(n);
    ASSERT_EQ(
        adamw(n, p.data(), g.data(), m.data(), v.data(), hp, view.data(), type),
        0);
    ASSERT_EQ(toHalf(type, n, p.data(), expect.data()), 0);
    int64_t differing = 0, first = -1;
    for (int64_t i = 0; i < n; ++i)
      if (view[i] != expect[i] && differing++ == 0)
        first = i;
    EXPECT_EQ(differing, 0)
        << "first at " << first << ": master " << p[first] << ", view "
        << view[first] << ", rounded " << expect[first];
  }
}

} // namespace
