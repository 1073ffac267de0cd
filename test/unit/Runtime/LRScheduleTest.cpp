//===- LRScheduleTest.cpp - Learning-rate schedules and their flags -------===//
//
// The schedule's value at every step of a small run, computed here step by
// step from the definitions (linear warm-up from 0; cosine: (1 + cos(pi p))
// / 2 of the way from min to peak; linear: 1 - p), and the flags that set
// it.
//
//===----------------------------------------------------------------------===//

#include "ratrain/runtime/LRSchedule.h"
#include "ratrain/runtime/Session.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace ratrain::rt;

namespace {
LRSchedule schedule(LRDecay decay) {
  LRSchedule s;
  s.decay = decay;
  s.peak = 1e-3;
  s.min = 1e-4;
  s.warmupSteps = 4;
  s.decaySteps = 12;
  return s;
}
} // namespace

TEST(LRSchedule, WarmupThenCosineToTheMinimum) {
  LRSchedule s = schedule(LRDecay::Cosine);
  // Warm-up: 1/4, 2/4, 3/4, 4/4 of the peak.
  for (uint64_t t = 1; t <= 4; ++t)
    EXPECT_DOUBLE_EQ(s.at(t), 1e-3 * double(t) / 4.0) << t;
  // Decay over steps 5..12: p = (t - 4) / 8.
  for (uint64_t t = 5; t <= 12; ++t) {
    double p = double(t - 4) / 8.0;
    EXPECT_NEAR(s.at(t), 1e-4 + 0.9e-3 * 0.5 * (1.0 + std::cos(M_PI * p)),
                1e-18)
        << t;
  }
  EXPECT_NEAR(s.at(8), 0.55e-3, 1e-18); // half way: the mean
  EXPECT_DOUBLE_EQ(s.at(12), 1e-4);
  EXPECT_DOUBLE_EQ(s.at(100), 1e-4); // past the decay: the minimum
}

TEST(LRSchedule, LinearAndConstant) {
  LRSchedule s = schedule(LRDecay::Linear);
  EXPECT_DOUBLE_EQ(s.at(2), 0.5e-3);
  EXPECT_NEAR(s.at(6), 1e-4 + 0.9e-3 * 0.75, 1e-18); // p = 1/4
  EXPECT_NEAR(s.at(10), 1e-4 + 0.9e-3 * 0.25, 1e-18);
  EXPECT_DOUBLE_EQ(s.at(13), 1e-4);
  LRSchedule constant = schedule(LRDecay::Constant);
  EXPECT_DOUBLE_EQ(constant.at(1), 0.25e-3); // warm-up still applies
  EXPECT_DOUBLE_EQ(constant.at(5), 1e-3);
  EXPECT_DOUBLE_EQ(constant.at(1000), 1e-3);
  constant.warmupSteps = 0;
  EXPECT_DOUBLE_EQ(constant.at(1), 1e-3);
}

TEST(LRSchedule, ValidateNamesTheFlag) {
  LRSchedule s = schedule(LRDecay::Cosine);
  EXPECT_FALSE(bool(s.validate()));
  s.min = 2e-3;
  llvm::Error error = s.validate();
  ASSERT_TRUE(bool(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("--min-lr"),
            std::string::npos);
  s = schedule(LRDecay::Cosine);
  s.decaySteps = 4;
  error = s.validate();
  ASSERT_TRUE(bool(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("--decay-steps"),
            std::string::npos);
}

TEST(LRSchedule, SessionFlags) {
  std::vector<const char *> args = {
      "prog",           "--lr", "3e-4",          "--lr-schedule", "cosine",
      "--warmup-steps", "10",   "--min-lr=3e-5", "--steps",       "100"};
  auto options = SessionOptions::parse(
      int(args.size()), const_cast<char **>(args.data()), SessionOptions());
  ASSERT_TRUE(bool(options)) << llvm::toString(options.takeError());
  LRSchedule s = options->schedule(/*compiled=*/1.0); // --lr wins
  EXPECT_EQ(s.decay, LRDecay::Cosine);
  EXPECT_DOUBLE_EQ(s.peak, 3e-4);
  EXPECT_DOUBLE_EQ(s.min, 3e-5);
  EXPECT_EQ(s.warmupSteps, 10u);
  EXPECT_EQ(s.decaySteps, 100u); // default: the run's last step
  EXPECT_DOUBLE_EQ(s.at(5), 1.5e-4);

  auto error = [](std::vector<const char *> a) {
    a.insert(a.begin(), "prog");
    auto parsed = SessionOptions::parse(
        int(a.size()), const_cast<char **>(a.data()), SessionOptions());
    return parsed ? std::string() : llvm::toString(parsed.takeError());
  };
  EXPECT_NE(error({"--lr-schedule", "step"}).find("not constant, cosine or"),
            std::string::npos);
  EXPECT_NE(error({"--lr", "nan"}).find("--lr: 'nan' is not a non-negative"),
            std::string::npos);
  EXPECT_NE(error({"--lr", "1e-4", "--min-lr", "1e-3"}).find("--min-lr"),
            std::string::npos);
  EXPECT_NE(error({"--lr-schedule", "cosine", "--warmup-steps", "50", "--steps",
                   "20"})
                .find("--warmup-steps"),
            std::string::npos);
}
