//===- HalfKernelsTest.cpp - The 16-bit activation kernels ----------------===//
//
// The bf16 / fp16 variants of attention, RMSNorm, RoPE, SwiGLU, the
// residual add, the embedding lookup and cross-entropy run the fp32 kernels'
// arithmetic between a widening load and one rounding store, so they agree with
// what the runtime ran before they existed (fromHalf -> fp32 kernel -> toHalf).
// Not always to the bit: Halide lets LLVM reassociate and contract fp32
// arithmetic, and the differently typed pipelines may round an fp32
// intermediate differently, which flips a result that lies within an fp32 ulp
// of a 16-bit rounding tie to the neighbouring 16-bit value. Each test runs
// both paths on random 16-bit inputs of ragged shapes (no size a multiple of
// the 16-lane vectors or the row chunks) and requires every element to be equal
// or a 16-bit neighbour, and at most 1% of them to differ; the fp32 kernels
// themselves are checked against references in KernelsTest.cpp. Copies
// (embedding lookup) and the GEMM into a 16-bit result are bit-exact. The
// bf16 attention on the dot product (kernels::bf16Products) is the
// exception: its products run on vdpbf16ps with the probabilities and dS
// rounded to bf16, so it is checked at bf16 accuracy (expectBf16Close), not
// against the staged result's rounding; the widened bf16 attention is checked
// like fp16's. The bf16 GEMM and attention run both product paths.
//
//===----------------------------------------------------------------------===//

#include "ratrain/kernels/Kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace ratrain::kernels;

namespace {

using Bits = std::vector<uint16_t>;

/// n random values in [lo, hi), rounded to `type`.
Bits randomHalf(Half type, size_t n, unsigned seed, float lo = -2.0f,
                float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(n);
  for (float &v : values)
    v = dist(gen);
  Bits bits(n);
  EXPECT_EQ(toHalf(type, int64_t(n), values.data(), bits.data()), 0);
  return bits;
}

std::vector<float> widened(Half type, const Bits &bits) {
  std::vector<float> values(bits.size());
  EXPECT_EQ(fromHalf(type, int64_t(bits.size()), bits.data(), values.data()),
            0);
  return values;
}

Bits narrowed(Half type, const std::vector<float> &values) {
  Bits bits(values.size());
  EXPECT_EQ(toHalf(type, int64_t(values.size()), values.data(), bits.data()),
            0);
  return bits;
}

/// How `got` departs from `want` (16-bit patterns): the elements that differ
/// and the first one that is not a 16-bit neighbour (-1 if none).
struct Departure {
  int64_t differing = 0;
  int64_t firstFar = -1;
};
Departure depart(const Bits &got, const Bits &want) {
  Departure d;
  if (got.size() != want.size()) {
    d.firstFar = 0;
    return d;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i])
      continue;
    ++d.differing;
    // Same sign, magnitudes one unit in the last place apart (the patterns
    // of one sign are ordered by magnitude).
    bool neighbour =
        (got[i] & 0x8000) == (want[i] & 0x8000) &&
        std::abs(int(got[i] & 0x7fff) - int(want[i] & 0x7fff)) == 1;
    if (!neighbour && d.firstFar < 0)
      d.firstFar = int64_t(i);
  }
  return d;
}

/// Equal or 16-bit neighbours everywhere, and at most 1% of them differing.
#define EXPECT_ROUNDED_ALIKE(got, want)                                        \
  do {                                                                         \
    Departure d = depart(got, want);                                           \
    EXPECT_EQ(d.firstFar, -1)                                                  \
        << #got " is more than a 16-bit ulp from " #want " at element "        \
        << d.firstFar;                                                         \
    EXPECT_LE(d.differing * 100, int64_t((want).size()))                       \
        << d.differing << " of " << (want).size() << " elements of " #got      \
        << " differ";                                                          \
  } while (0)

class HalfKernels : public ::testing::TestWithParam<Half> {};

/// Runs `body` once per bf16 product path for bf16 (kernels::bf16Products),
/// once for fp16 (it has one path), and restores the process's path.
template <typename Body> void forEachProductPath(Half type, Body body) {
  const Bf16Products cpu = bf16Products();
  for (Bf16Products products : {Bf16Products::Dot, Bf16Products::Widen}) {
    if (type != Half::BF16 && products != cpu)
      continue;
    SCOPED_TRACE(bf16ProductsName(products));
    setBf16Products(products);
    body();
  }
  setBf16Products(cpu);
}

TEST_P(HalfKernels, RmsNormForwardAndBackwardMatchStaged) {
  Half type = GetParam();
  const int64_t T = 37, H = 83;
  Bits x = randomHalf(type, T * H, 1), w = randomHalf(type, H, 2, 0.5f, 1.5f);
  Bits dy = randomHalf(type, T * H, 3), dw0 = randomHalf(type, H, 4);

  Bits y(T * H), dx(T * H), dw = dw0;
  std::vector<float> rstd(T), rstdStaged(T);
  ASSERT_EQ(rmsnormForward(type, T, H, x.data(), w.data(), 1e-5f, y.data(),
                           rstd.data()),
            0);
  ASSERT_EQ(rmsnormBackward(type, T, H, x.data(), w.data(), rstd.data(),
                            dy.data(), dx.data(), dw.data()),
            0);

  std::vector<float> xf = widened(type, x), wf = widened(type, w);
  std::vector<float> dyf = widened(type, dy), dwf = widened(type, dw0);
  std::vector<float> yf(T * H), dxf(T * H);
  ASSERT_EQ(rmsnormForward(T, H, xf.data(), wf.data(), 1e-5f, yf.data(),
                           rstdStaged.data()),
            0);
  ASSERT_EQ(rmsnormBackward(T, H, xf.data(), wf.data(), rstdStaged.data(),
                            dyf.data(), dxf.data(), dwf.data()),
            0);
  EXPECT_EQ(rstd, rstdStaged);
  EXPECT_ROUNDED_ALIKE(y, narrowed(type, yf));
  EXPECT_ROUNDED_ALIKE(dx, narrowed(type, dxf));
  EXPECT_ROUNDED_ALIKE(dw, narrowed(type, dwf));
}

TEST_P(HalfKernels, RopeForwardAndBackwardMatchStaged) {
  Half type = GetParam();
  const int64_t T = 21, heads = 3, D = 34, maxPos = 16;
  std::vector<float> cosT(maxPos * D / 2), sinT(maxPos * D / 2);
  ropeTables(maxPos, D, 10000.0, cosT.data(), sinT.data());
  std::vector<int32_t> pos(T);
  for (int64_t t = 0; t < T; ++t)
    pos[t] = int32_t(t % maxPos);
  Bits x = randomHalf(type, T * heads * D, 5);
  std::vector<float> xf = widened(type, x), yf(x.size()), bf(x.size());
  Bits y(x.size()), back(x.size());
  ASSERT_EQ(ropeForward(type, T, heads, D, pos.data(), maxPos, cosT.data(),
                        sinT.data(), x.data(), y.data()),
            0);
  ASSERT_EQ(ropeBackward(type, T, heads, D, pos.data(), maxPos, cosT.data(),
                         sinT.data(), x.data(), back.data()),
            0);
  ASSERT_EQ(ropeForward(T, heads, D, pos.data(), maxPos, cosT.data(),
                        sinT.data(), xf.data(), yf.data()),
            0);
  ASSERT_EQ(ropeBackward(T, heads, D, pos.data(), maxPos, cosT.data(),
                         sinT.data(), xf.data(), bf.data()),
            0);
  EXPECT_ROUNDED_ALIKE(y, narrowed(type, yf));
  EXPECT_ROUNDED_ALIKE(back, narrowed(type, bf));
}

TEST_P(HalfKernels, SwiGluForwardAndBackwardMatchStaged) {
  Half type = GetParam();
  // g spans the range where the sigmoid saturates and fast_exp is clamped.
  const int64_t T = 19, F = 101;
  Bits g = randomHalf(type, T * F, 6, -12.0f, 12.0f);
  Bits u = randomHalf(type, T * F, 7), dh = randomHalf(type, T * F, 8);
  Bits h(T * F), dg(T * F), du(T * F);
  ASSERT_EQ(swigluForward(type, T, F, g.data(), u.data(), h.data()), 0);
  ASSERT_EQ(swigluBackward(type, T, F, g.data(), u.data(), dh.data(), dg.data(),
                           du.data()),
            0);
  std::vector<float> gf = widened(type, g), uf = widened(type, u),
                     dhf = widened(type, dh);
  std::vector<float> hf(T * F), dgf(T * F), duf(T * F);
  ASSERT_EQ(swigluForward(T, F, gf.data(), uf.data(), hf.data()), 0);
  ASSERT_EQ(swigluBackward(T, F, gf.data(), uf.data(), dhf.data(), dgf.data(),
                           duf.data()),
            0);
  EXPECT_ROUNDED_ALIKE(h, narrowed(type, hf));
  EXPECT_ROUNDED_ALIKE(dg, narrowed(type, dgf));
  EXPECT_ROUNDED_ALIKE(du, narrowed(type, duf));
}

TEST_P(HalfKernels, AddInPlaceMatchesStaged) {
  Half type = GetParam();
  const int64_t n = 16411; // past one 1 << 14 parallel chunk, ragged
  Bits a = randomHalf(type, n, 9), b = randomHalf(type, n, 10);
  std::vector<float> af = widened(type, a), bf = widened(type, b), cf(n);
  ASSERT_EQ(add(n, af.data(), bf.data(), cf.data()), 0);
  // out aliases a, as the runtime's residual adds may.
  ASSERT_EQ(add(type, n, a.data(), b.data(), a.data()), 0);
  EXPECT_ROUNDED_ALIKE(a, narrowed(type, cf));
}

void checkGemmIntoHalf(Half type);

TEST_P(HalfKernels, GemmIntoAHalfResultMatchesGemmThenRound) {
  // gemm16To16 against gemm16 into an fp32 copy of C and toHalf: the path
  // the runtime took before. bf16 with K within one k panel (of the dot
  // product's or the widened kernels' tiling) runs the kernel that rounds in
  // its epilogue; K deeper than a panel (and fp16) stage C.
  Half type = GetParam();
  forEachProductPath(type, [&] { checkGemmIntoHalf(type); });
}

void checkGemmIntoHalf(Half type) {
  // The deepest K the current product path takes in one panel (rounded in
  // the epilogue); one more stages C in fp32.
  const TileConfig tiles = tileConfig();
  const int64_t kc = bf16Products() == Bf16Products::Dot
                         ? tiles.gemmKcOnePanelDot
                         : tiles.gemmKcOnePanelWidened;
  // The widened kernel into a 16-bit C packs A once per group of A blocks
  // whose packed rows (K deep, fp32) take at most half of GSM: rows over two
  // groups and a ragged third, columns over two B panels, K one fp32 panel
  // deep (so gemm16 sums in the same order).
  const int64_t groupRows =
      std::max<int64_t>(1, tiles.gsmBytes / 2 / (4 * tiles.gemmMb) /
                               tiles.gemmKc) *
      tiles.gemmMb;
  struct Case {
    GemmForm form;
    int64_t m, n, k;
  } cases[] = {
      {GemmForm::NT, 2 * groupRows + 31, tiles.gemmNb + 50, tiles.gemmKc},
      {GemmForm::NT, 37, 45, 70},
      {GemmForm::NN, 29, 50, 33},
      {GemmForm::TN, 45, 31, 66},
      {GemmForm::NT, 13, 70, kc + 6},
      // The panel boundary (K == KC1: one panel).
      {GemmForm::NT, 19, 40, kc},
      {GemmForm::TN, 21, 33, kc - 1},
      // Deeper than the fp32 tiling's KC, still one panel.
      {GemmForm::NN, 17, 35, tiles.gemmKc + 40}};
  unsigned seed = 40;
  for (const Case &c : cases)
    for (float beta : {0.0f, 1.0f}) {
      SCOPED_TRACE(::testing::Message()
                   << "form " << int(c.form) << " " << c.m << "x" << c.n << "x"
                   << c.k << " beta " << beta);
      Bits a = randomHalf(type, size_t(c.m * c.k), ++seed),
           b = randomHalf(type, size_t(c.k * c.n), ++seed),
           cBits = randomHalf(type, size_t(c.m * c.n), ++seed);
      std::vector<float> staged = widened(type, cBits);
      ASSERT_EQ(gemm16(c.form, type, c.m, c.n, c.k, a.data(), b.data(),
                       staged.data(), beta),
                0);
      Bits want = narrowed(type, staged);
      ASSERT_EQ(gemm16To16(c.form, type, c.m, c.n, c.k, a.data(), b.data(),
                           cBits.data(), beta),
                0);
      EXPECT_EQ(depart(cBits, want).differing, 0);
      EXPECT_ROUNDED_ALIKE(cBits, want);
    }
  // Subnormals, infinities and NaNs in C (zero products, beta 1) come back
  // as the conversion kernels round them: not flushed to zero.
  if (type != Half::BF16)
    return;
  const uint16_t specials[] = {0x0001, 0x007f, 0x8001, 0x0080, 0x7f80,
                               0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x3f80};
  const int64_t m = 16, n = 40, k = 8;
  Bits a(size_t(m * k), 0), b(size_t(k * n), 0), cBits(size_t(m * n));
  for (size_t i = 0; i < cBits.size(); ++i)
    cBits[i] = specials[i % std::size(specials)];
  std::vector<float> staged = widened(type, cBits);
  ASSERT_EQ(gemm16(GemmForm::NT, type, m, n, k, a.data(), b.data(),
                   staged.data(), 1.0f),
            0);
  Bits want = narrowed(type, staged);
  ASSERT_EQ(gemm16To16(GemmForm::NT, type, m, n, k, a.data(), b.data(),
                       cBits.data(), 1.0f),
            0);
  EXPECT_EQ(cBits, want);
}

TEST_P(HalfKernels, EmbeddingLookupCopiesRows) {
  Half type = GetParam();
  const int64_t T = 13, V = 29, H = 45;
  Bits table = randomHalf(type, V * H, 11);
  std::vector<int32_t> ids(T);
  for (int64_t t = 0; t < T; ++t)
    ids[t] = int32_t((t * 7 + 3) % V);
  Bits out(T * H);
  ASSERT_EQ(
      embeddingForward(type, T, V, H, ids.data(), table.data(), out.data()), 0);
  Bits want;
  for (int32_t id : ids)
    want.insert(want.end(), table.begin() + id * H, table.begin() + id * H + H);
  EXPECT_EQ(out, want);
}

TEST_P(HalfKernels, CrossEntropyInPlaceMatchesStaged) {
  Half type = GetParam();
  const int64_t T = 11, V = 301;
  Bits logits = randomHalf(type, T * V, 12, -6.0f, 6.0f);
  std::vector<int32_t> targets(T);
  for (int64_t t = 0; t < T; ++t)
    targets[t] = int32_t((t * 37) % V);
  targets[3] = -100; // ignored row
  std::vector<float> lf = widened(type, logits), lossf(T), gradf(T * V);
  ASSERT_EQ(crossEntropy(T, V, lf.data(), targets.data(), 0.25f, lossf.data(),
                         gradf.data()),
            0);
  std::vector<float> loss(T);
  // In place: the gradient overwrites the logits.
  ASSERT_EQ(crossEntropy(type, T, V, logits.data(), targets.data(), 0.25f,
                         loss.data(), logits.data()),
            0);
  for (int64_t t = 0; t < T; ++t)
    EXPECT_NEAR(loss[t], lossf[t], 1e-6 * std::max(1.0f, lossf[t])) << t;
  EXPECT_EQ(loss[3], 0.0f);
  EXPECT_ROUNDED_ALIKE(logits, narrowed(type, gradf));
}

/// Whether `got` (16-bit patterns) is `want` (fp32) to bf16 accuracy: an
/// RMS error at most `relRms` of want's RMS, and no element further than
/// `relMax` of want's largest magnitude from it. The bf16 attention rounds
/// the probabilities and dS to bf16 before their vdpbf16ps products (as
/// FlashAttention's bf16 kernels do), so it is not the staged result rounded
/// once: about 1.4x the RMS error of that one rounding (measured 2.3e-3
/// against 1.7e-3 at S 2048).
void expectBf16Close(const char *name, const Bits &got,
                     const std::vector<float> &want, double relRms = 4e-3,
                     double relMax = 2e-2) {
  ASSERT_EQ(got.size(), want.size());
  std::vector<float> g = widened(Half::BF16, got);
  double err2 = 0, ref2 = 0, refMax = 0, errMax = 0;
  int64_t worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_TRUE(std::isfinite(g[i])) << name << " element " << i;
    double e = double(g[i]) - double(want[i]);
    err2 += e * e;
    ref2 += double(want[i]) * double(want[i]);
    refMax = std::max(refMax, std::fabs(double(want[i])));
    if (std::fabs(e) > errMax) {
      errMax = std::fabs(e);
      worst = int64_t(i);
    }
  }
  EXPECT_LE(std::sqrt(err2), relRms * std::sqrt(ref2))
      << name << ": RMS error " << std::sqrt(err2 / double(g.size()))
      << " against an RMS of " << std::sqrt(ref2 / double(g.size()));
  EXPECT_LE(errMax, relMax * refMax)
      << name << " element " << worst << ": " << g[size_t(worst)] << " against "
      << want[size_t(worst)];
}

/// Attention of one shape: ragged S, grouped-query heads, with or without
/// ALiBi slopes and a sliding window.
struct AttentionCase {
  int64_t B, S, Hq, Hkv, D;
  bool alibi;
  int64_t window;
};

void checkAttention(Half type, const AttentionCase &c) {
  SCOPED_TRACE("S=" + std::to_string(c.S) + " D=" + std::to_string(c.D) +
               (c.alibi ? " alibi" : "") +
               " window=" + std::to_string(c.window));
  const int64_t nq = c.B * c.S * c.Hq * c.D, nkv = c.B * c.S * c.Hkv * c.D;
  const float scale = 1.0f / std::sqrt(float(c.D));
  std::vector<float> slopes(c.Hq);
  alibiSlopes(c.Hq, slopes.data());
  const float *sl = c.alibi ? slopes.data() : nullptr;
  Bits q = randomHalf(type, nq, 21), k = randomHalf(type, nkv, 22),
       v = randomHalf(type, nkv, 23), dout = randomHalf(type, nq, 24);

  Bits o(nq), dq(nq), dk(nkv), dv(nkv);
  std::vector<float> lse(c.B * c.Hq * c.S);
  ASSERT_EQ(attentionForward(type, c.B, c.S, c.Hq, c.Hkv, c.D, q.data(),
                             k.data(), v.data(), scale, o.data(), lse.data(),
                             sl, c.window),
            0);
  ASSERT_EQ(attentionBackward(type, c.B, c.S, c.Hq, c.Hkv, c.D, q.data(),
                              k.data(), v.data(), o.data(), dout.data(),
                              lse.data(), scale, dq.data(), dk.data(),
                              dv.data(), sl, c.window),
            0);

  // The staged path: fp32 kernels on the widened operands (the backward
  // reads the 16-bit o, as the runtime's staged path did).
  std::vector<float> qf = widened(type, q), kf = widened(type, k),
                     vf = widened(type, v), df = widened(type, dout),
                     of16 = widened(type, o);
  std::vector<float> of(nq), lsef(lse.size()), dqf(nq), dkf(nkv), dvf(nkv);
  ASSERT_EQ(attentionForward(c.B, c.S, c.Hq, c.Hkv, c.D, qf.data(), kf.data(),
                             vf.data(), scale, of.data(), lsef.data(), sl,
                             c.window),
            0);
  // The dot-product bf16 kernels round P and dS to bf16; the widening ones
  // are the fp32 kernels' arithmetic, like fp16's.
  const bool dot = type == Half::BF16 && bf16Products() == Bf16Products::Dot;
  if (dot) {
    // Scores are exact bf16 products summed in another order.
    for (size_t i = 0; i < lse.size(); ++i)
      EXPECT_NEAR(lse[i], lsef[i], 1e-5 * std::max(1.0f, std::fabs(lsef[i])))
          << i;
    expectBf16Close("o", o, of);
  } else {
    EXPECT_EQ(lse, lsef);
    EXPECT_ROUNDED_ALIKE(o, narrowed(type, of));
  }
  ASSERT_EQ(attentionBackward(c.B, c.S, c.Hq, c.Hkv, c.D, qf.data(), kf.data(),
                              vf.data(), of16.data(), df.data(), lse.data(),
                              scale, dqf.data(), dkf.data(), dvf.data(), sl,
                              c.window),
            0);
  if (dot) {
    expectBf16Close("dq", dq, dqf);
    expectBf16Close("dk", dk, dkf);
    expectBf16Close("dv", dv, dvf);
  } else {
    EXPECT_ROUNDED_ALIKE(dq, narrowed(type, dqf));
    EXPECT_ROUNDED_ALIKE(dk, narrowed(type, dkf));
    EXPECT_ROUNDED_ALIKE(dv, narrowed(type, dvf));
  }
}

TEST_P(HalfKernels, AttentionMatchesStaged) {
  Half type = GetParam();
  forEachProductPath(type, [&] {
    for (const AttentionCase &c : {AttentionCase{2, 45, 4, 2, 32, false, 0},
                                   AttentionCase{1, 70, 2, 1, 64, false, 17},
                                   AttentionCase{1, 33, 4, 4, 128, false, 0},
                                   AttentionCase{2, 37, 4, 2, 32, true, 0},
                                   // Several key blocks of the backward.
                                   AttentionCase{1, 700, 2, 1, 64, true, 100},
                                   AttentionCase{1, 650, 2, 2, 128, false, 0}})
      checkAttention(type, c);
  });
}

/// AdamW on a 16-bit model's gradients, read as they are, updates masters,
/// moments and view exactly as the fp32 kernel on their widened copy (the
/// runtime's staged path before); also where the view is of the other
/// 16-bit type (widened first) or absent. A length that is not a multiple
/// of the vector width or of the parallel chunk; infinities and a NaN among
/// the gradients.
TEST_P(HalfKernels, AdamWOnHalfGradientsMatchesStaged) {
  Half type = GetParam();
  const int64_t n = (int64_t(1) << 15) + 37;
  Bits g = randomHalf(type, size_t(n), 71, -1e-2f, 1e-2f);
  const uint16_t inf = type == Half::BF16 ? 0x7f80 : 0x7c00;
  const uint16_t nan = type == Half::BF16 ? 0x7fc1 : 0x7e01;
  g[5] = inf;
  g[6] = uint16_t(inf | 0x8000);
  g[7] = nan;
  std::vector<float> gf = widened(type, g);
  std::mt19937 gen(72);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> p0(n), m0(n), v0(n);
  for (int64_t i = 0; i < n; ++i) {
    p0[i] = u(gen) * 0.05f;
    m0[i] = u(gen) * 1e-4f;
    v0[i] = std::fabs(u(gen)) * 1e-6f;
  }
  AdamWParams hp;
  hp.lr = 1e-3f;
  hp.weightDecay = 0.1f;
  hp.step = 3;
  hp.gradScale = 0.5f;
  const Half other = type == Half::BF16 ? Half::F16 : Half::BF16;
  auto sameBits = [](const std::vector<float> &a, const std::vector<float> &b) {
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  for (std::optional<Half> viewType :
       {std::optional<Half>(type), std::optional<Half>(other),
        std::optional<Half>()}) {
    SCOPED_TRACE(viewType ? (*viewType == Half::BF16 ? "bf16 view" : "f16 view")
                          : "no view");
    std::vector<float> p = p0, m = m0, v = v0, pw = p0, mw = m0, vw = v0;
    Bits view(static_cast<size_t>(n)), viewWant(static_cast<size_t>(n));
    uint16_t *viewOut = viewType ? view.data() : nullptr;
    uint16_t *viewRef = viewType ? viewWant.data() : nullptr;
    Half vt = viewType.value_or(Half::BF16);
    ASSERT_EQ(
        adamw(n, p.data(), g.data(), type, m.data(), v.data(), hp, viewOut, vt),
        0);
    ASSERT_EQ(
        adamw(n, pw.data(), gf.data(), mw.data(), vw.data(), hp, viewRef, vt),
        0);
    EXPECT_TRUE(sameBits(p, pw));
    EXPECT_TRUE(sameBits(m, mw));
    EXPECT_TRUE(sameBits(v, vw));
    EXPECT_EQ(view, viewWant);
    EXPECT_TRUE(std::isnan(p[7]));
  }
}

/// The squared norm of 16-bit values, widened in the kernel, is the one of
/// their fp32 copy bit for bit (several chunks and a ragged last one).
TEST_P(HalfKernels, SumSquaresOfHalfValuesMatchesStaged) {
  Half type = GetParam();
  for (int64_t n : {int64_t(1), int64_t(17), (int64_t(1) << 16) + 5}) {
    Bits x = randomHalf(type, size_t(n), 80 + unsigned(n % 7));
    std::vector<float> xf = widened(type, x);
    double got = -1, want = -2;
    ASSERT_EQ(sumSquares(n, x.data(), type, &got), 0);
    ASSERT_EQ(sumSquares(n, xf.data(), &want), 0);
    EXPECT_EQ(got, want) << "n " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, HalfKernels,
                         ::testing::Values(Half::BF16, Half::F16),
                         [](const ::testing::TestParamInfo<Half> &info) {
                           return std::string(info.param == Half::BF16 ? "BF16"
                                                                       : "F16");
                         });

} // namespace
