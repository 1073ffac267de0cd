//===- AveragedUpdateTest.cpp - AdamW on a gradient left in two parts -----===//
//
// A reduce-scatter with `leave_own` leaves its last reduction to the update:
// the shard holds the other members' sum and the update adds this rank's
// contribution and divides (kernels::adamwAveraged). These tests hold it to
// the update the runtime made before, the reduce-scatter's own average
// (ReduceLoops.h, averageFrom) followed by kernels::adamw, bit for bit on
// p, m, v and the view, for fp32 and bf16 gradients, 2 to 5 members, with
// ties, subnormals, infinities and NaNs among the values (a NaN only has to
// stay a NaN: x86 keeps the first operand's payload of two NaNs).
//
//===----------------------------------------------------------------------===//

#include "ratrain/kernels/Kernels.h"
#include "ratrain/runtime/Half.h"
#include "ratrain/runtime/ReduceLoops.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace k = ratrain::kernels;
namespace rt = ratrain::rt;

namespace {

/// Gradient-like fp32 values (magnitudes 1e-8 to 1e2, some exactly tied
/// when rounded to bf16) with a share of special values.
std::vector<float> gradients(size_t n, uint32_t seed) {
  static const float special[] = {0.0f,
                                  -0.0f,
                                  1e-40f,
                                  -3e-39f,
                                  INFINITY,
                                  -INFINITY,
                                  NAN,
                                  1.0f + 1.0f / 256.0f, // a bf16 tie
                                  3.0e38f};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> exponent(-8.0f, 2.0f);
  std::vector<float> v(n);
  for (float &x : v) {
    if (rng() % 64 == 0) {
      x = special[rng() % std::size(special)];
      continue;
    }
    x = std::pow(10.0f, exponent(rng)) * (rng() % 2 ? 1.0f : -1.0f);
  }
  return v;
}

std::vector<uint16_t> toBf16(const std::vector<float> &v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = rt::floatToBF16(v[i]);
  return out;
}

/// The same bits, or both NaN.
bool sameF32(float a, float b) {
  if (std::isnan(a) && std::isnan(b))
    return true;
  return std::memcmp(&a, &b, 4) == 0;
}
bool sameBf16(uint16_t a, uint16_t b) {
  auto nan = [](uint16_t x) { return (x & 0x7fffu) > 0x7f80u; };
  return a == b || (nan(a) && nan(b));
}

/// Optimizer state and parameters of `n` elements.
struct State {
  std::vector<float> p, m, v;
  std::vector<uint16_t> view;
  explicit State(size_t n) : p(n), m(n), v(n), view(n, 0) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    for (size_t i = 0; i < n; ++i) {
      p[i] = normal(rng);
      m[i] = normal(rng) * 1e-3f;
      v[i] = std::fabs(normal(rng)) * 1e-5f;
    }
  }
};

k::AdamWParams params(int64_t step) {
  k::AdamWParams params;
  params.lr = 3e-4f;
  params.weightDecay = 0.1f;
  params.step = step;
  params.gradScale = 0.5f;
  return params;
}

void expectSame(const State &fused, const State &reference, bool view) {
  for (size_t i = 0; i < fused.p.size(); ++i) {
    ASSERT_TRUE(sameF32(fused.p[i], reference.p[i])) << "p[" << i << "]";
    ASSERT_TRUE(sameF32(fused.m[i], reference.m[i])) << "m[" << i << "]";
    ASSERT_TRUE(sameF32(fused.v[i], reference.v[i])) << "v[" << i << "]";
    if (view)
      ASSERT_TRUE(sameBf16(fused.view[i], reference.view[i]))
          << "view[" << i << "]";
  }
}

const size_t kLengths[] = {1, 15, 17, 1000, 16384 + 33};

} // namespace

TEST(AveragedUpdate, Bf16MatchesTheReduceScattersAverageThenAdamW) {
  for (size_t n : kLengths)
    for (int members = 2; members <= 5; ++members) {
      SCOPED_TRACE(testing::Message()
                   << "n " << n << ", " << members << " members");
      std::vector<uint16_t> others = toBf16(gradients(n, 1 + members));
      std::vector<uint16_t> own = toBf16(gradients(n, 100 + members));
      State fused(n), reference(n);
      // The runtime's path: the reduce-scatter's last round averages its own
      // block with the received one, then the update reads the shard.
      std::vector<uint16_t> averaged(n);
      rt::averageFrom(averaged.data(), own.data(), others.data(), n,
                      rt::ElemType::BF16, members);
      for (int64_t step : {1, 2}) {
        ASSERT_EQ(k::adamw(int64_t(n), reference.p.data(), averaged.data(),
                           k::Half::BF16, reference.m.data(),
                           reference.v.data(), params(step),
                           reference.view.data(), k::Half::BF16),
                  0);
        ASSERT_EQ(k::adamwAveraged(int64_t(n), fused.p.data(), others.data(),
                                   own.data(), k::Half::BF16, members,
                                   fused.m.data(), fused.v.data(), params(step),
                                   fused.view.data(), k::Half::BF16),
                  0);
        expectSame(fused, reference, /*view=*/true);
      }
    }
}

TEST(AveragedUpdate, F32MatchesTheReduceScattersAverageThenAdamW) {
  for (size_t n : kLengths)
    for (int members = 2; members <= 5; ++members) {
      SCOPED_TRACE(testing::Message()
                   << "n " << n << ", " << members << " members");
      std::vector<float> others = gradients(n, 1 + members);
      std::vector<float> own = gradients(n, 100 + members);
      State fused(n), reference(n);
      std::vector<float> averaged(n);
      rt::averageFrom(averaged.data(), own.data(), others.data(), n,
                      rt::ElemType::F32, members);
      for (int64_t step : {1, 2}) {
        ASSERT_EQ(k::adamw(int64_t(n), reference.p.data(), averaged.data(),
                           reference.m.data(), reference.v.data(),
                           params(step)),
                  0);
        ASSERT_EQ(k::adamwAveraged(int64_t(n), fused.p.data(), others.data(),
                                   own.data(), members, fused.m.data(),
                                   fused.v.data(), params(step)),
                  0);
        expectSame(fused, reference, /*view=*/false);
      }
    }
}

TEST(AveragedUpdate, RefusesWhatItCannotAverage) {
  std::vector<uint16_t> g(4, 0x3f80), view(4);
  std::vector<float> p(4), m(4), v(4), gf(4, 1.0f);
  k::AdamWParams hp = params(1);
  // One member has nothing to average; f16 gradients and views other than
  // the gradient's type take the runtime's staged path instead.
  EXPECT_EQ(k::adamwAveraged(4, p.data(), gf.data(), gf.data(), 1, m.data(),
                             v.data(), hp),
            -1);
  EXPECT_EQ(k::adamwAveraged(4, p.data(), g.data(), g.data(), k::Half::F16, 2,
                             m.data(), v.data(), hp, view.data(), k::Half::F16),
            -1);
  EXPECT_EQ(k::adamwAveraged(4, p.data(), g.data(), g.data(), k::Half::BF16, 2,
                             m.data(), v.data(), hp, view.data(), k::Half::F16),
            -1);
}
