//===- RopeScalingTest.cpp - HF rope_scaling frequencies ------------------===//
//
// RopeScaling::invFreq against transformers' default, linear and llama3
// rope frequencies (the expected values were computed with a float64 port
// of transformers' _compute_default_rope_parameters and
// _compute_llama3_parameters for Llama-3.2-1B: head dim 64, rope_theta 5e5,
// factor 32, low_freq_factor 1, high_freq_factor 4, original context 8192),
// and the import of Llama-3.2-1B's config.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Model/HFConfig.h"
#include "ratrain/Model/ModelConfig.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace ratrain;

namespace {
RopeScaling llama32() {
  RopeScaling scaling;
  scaling.kind = RopeScalingKind::Llama3;
  scaling.factor = 32.0;
  scaling.lowFreqFactor = 1.0;
  scaling.highFreqFactor = 4.0;
  scaling.originalMaxPositions = 8192;
  return scaling;
}
} // namespace

TEST(RopeScaling, Llama3MatchesTransformers) {
  // {pair i, transformers' inverse frequency}: i 0 and 10 are high
  // frequencies (kept), 15 and 18 in the smooth band, 20, 25 and 31 low
  // frequencies (divided by 32).
  struct {
    int64_t i;
    double expected;
  } cases[] = {{0, 1.0},
               {10, 0.016560440080994446},
               {15, 0.001290547928209264},
               {18, 1.9461638184831125e-05},
               {20, 8.570255489881478e-06},
               {25, 1.102883668639601e-06},
               {31, 9.418306725434909e-08}};
  RopeScaling scaling = llama32();
  for (auto c : cases) {
    SCOPED_TRACE(c.i);
    EXPECT_NEAR(scaling.invFreq(c.i, 64, 5e5), c.expected, 1e-13 * c.expected);
  }
}

TEST(RopeScaling, LinearDividesEveryFrequency) {
  RopeScaling scaling;
  scaling.kind = RopeScalingKind::Linear;
  scaling.factor = 4.0;
  for (int64_t i = 0; i < 32; ++i)
    EXPECT_DOUBLE_EQ(scaling.invFreq(i, 64, 1e4),
                     std::pow(1e4, -2.0 * double(i) / 64.0) / 4.0);
}

TEST(RopeScaling, ValidateNamesTheBadFactor) {
  RopeScaling scaling = llama32();
  EXPECT_FALSE(bool(scaling.validate()));
  scaling.highFreqFactor = 0.5;
  llvm::Error error = scaling.validate();
  ASSERT_TRUE(bool(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("'high_freq_factor'"),
            std::string::npos);
  scaling = llama32();
  scaling.factor = std::nan("");
  error = scaling.validate();
  ASSERT_TRUE(bool(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("'factor'"),
            std::string::npos);
}

TEST(RopeScaling, Llama32ConfigImportsItsScaling) {
  llvm::Expected<ModelConfig> config =
      loadHFConfig(RATRAIN_EXAMPLES_DIR "/models/llama-3.2-1b.json");
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  ASSERT_TRUE(config->ropeScaling.has_value());
  EXPECT_TRUE(*config->ropeScaling == llama32());
  EXPECT_EQ(config->ropeTheta, 5e5);
  EXPECT_TRUE(config->tieEmbeddings);
}
