//===- KernelTimeFitTest.cpp - The kernel time model's least-squares fit --===//

#include "ratrain/Machine/KernelTimeFit.h"

#include "gtest/gtest.h"

#include <cmath>
#include <vector>

using namespace ratrain;

namespace {

/// Samples of exactly `fit` on GEMM shapes from 64^3 to 1024 x 4096^2.
std::vector<KernelTimeSample> exactSamples(const KernelTimeFit &fit,
                                           double peak) {
  const double shapes[][3] = {
      {64, 64, 64},   {128, 128, 128}, {256, 256, 256},    {256, 688, 256},
      {32, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {1024, 4096, 4096}};
  std::vector<KernelTimeSample> samples;
  for (const auto &s : shapes) {
    double flops = 2 * s[0] * s[1] * s[2];
    double elements = s[0] * s[2] + s[2] * s[1] + s[0] * s[1];
    samples.push_back({flops, elements, fit.seconds(flops, elements, peak)});
  }
  return samples;
}

TEST(KernelTimeFit, RecoversTheParametersOfExactSamples) {
  KernelTimeFit truth{0.88, 3.7e-10, 1.8e-6};
  double peak = 117e9;
  llvm::Expected<KernelTimeFit> fit =
      fitKernelTime(exactSamples(truth, peak), peak);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  EXPECT_NEAR(fit->efficiency, 0.88, 1e-9);
  EXPECT_NEAR(fit->elementSeconds, 3.7e-10, 1e-18);
  EXPECT_NEAR(fit->callSeconds, 1.8e-6, 1e-13);
  EXPECT_LT(maxRelativeError(*fit, exactSamples(truth, peak), peak), 1e-9);
}

/// Samples of exactly `fit` on causal attention shapes (B, S, Hq, D): FLOPs
/// 4 S^2/2 D per head, the score entries as elements, the query rows as rows.
std::vector<KernelTimeSample> attentionSamples(const KernelTimeFit &fit,
                                               double peak) {
  const double shapes[][4] = {
      {1, 256, 8, 32},   {4, 256, 8, 32},    {1, 256, 12, 64}, {1, 1024, 8, 32},
      {1, 512, 8, 128},  {1, 1024, 32, 128}, {1, 2048, 4, 64}, {2, 512, 12, 64},
      {1, 4096, 2, 128}, {1, 256, 4, 64}};
  std::vector<KernelTimeSample> samples;
  for (const auto &s : shapes) {
    double scores = s[0] * s[2] * s[1] * s[1] / 2, rows = s[0] * s[2] * s[1];
    double flops = 4 * scores * s[3];
    samples.push_back(
        {flops, scores, fit.seconds(flops, scores, peak, rows), rows});
  }
  return samples;
}

TEST(KernelTimeFit, RecoversAPerRowTerm) {
  // Attention-like: narrow heads spend a larger share in the per-score and
  // per-row terms, which the fit tells apart from the arithmetic.
  KernelTimeFit truth{0.65, 4e-10, 2e-6, 5e-8};
  double peak = 430e9;
  std::vector<KernelTimeSample> samples = attentionSamples(truth, peak);
  llvm::Expected<KernelTimeFit> fit = fitKernelTime(samples, peak);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  EXPECT_NEAR(fit->efficiency, 0.65, 1e-9);
  EXPECT_NEAR(fit->elementSeconds, 4e-10, 1e-18);
  EXPECT_NEAR(fit->rowSeconds, 5e-8, 1e-16);
  EXPECT_NEAR(fit->callSeconds, 2e-6, 1e-13);
  EXPECT_LT(maxRelativeError(*fit, samples, peak), 1e-9);
  // Without the per-row term the same samples fit worse.
  KernelTimeFit rowless = *fit;
  rowless.rowSeconds = 0;
  EXPECT_GT(maxRelativeError(rowless, samples, peak), 0.05);
  // GEMM samples have no rows: the fit leaves the term at 0.
  fit = fitKernelTime(exactSamples(KernelTimeFit{0.88, 3.7e-10, 1.8e-6}, peak),
                      peak);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  EXPECT_EQ(fit->rowSeconds, 0.0);
  // With rows, four unknowns need four samples; negative rows are refused.
  samples.resize(3);
  EXPECT_FALSE(bool(fitKernelTime(samples, peak)));
  samples = attentionSamples(truth, peak);
  samples[2].rows = -1;
  llvm::Expected<KernelTimeFit> refused = fitKernelTime(samples, peak);
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(llvm::toString(refused.takeError())
                .find("measurement 2: rows must be non-negative"),
            std::string::npos);
}

TEST(KernelTimeFit, KeepsTheBounds) {
  double peak = 100e9;
  // Faster than peak on the large shapes: the efficiency is held at 1.
  std::vector<KernelTimeSample> samples =
      exactSamples(KernelTimeFit{1.0, 1e-10, 1e-6}, peak);
  for (KernelTimeSample &s : samples)
    s.seconds *= 0.9;
  llvm::Expected<KernelTimeFit> fit = fitKernelTime(samples, peak);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  EXPECT_DOUBLE_EQ(fit->efficiency, 1.0);
  EXPECT_GE(fit->elementSeconds, 0.0);
  EXPECT_GE(fit->callSeconds, 0.0);
  // Small calls cheaper than the large ones' rate implies would need a
  // negative per-call time: that term is dropped, not made negative.
  samples = exactSamples(KernelTimeFit{0.8, 2e-10, 0}, peak);
  samples[0].seconds *= 0.5; // 64^3
  fit = fitKernelTime(samples, peak);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  EXPECT_GE(fit->callSeconds, 0.0);
  EXPECT_GE(fit->elementSeconds, 0.0);
  EXPECT_GT(fit->efficiency, 0.0);
  EXPECT_LE(fit->efficiency, 1.0);
}

TEST(KernelTimeFit, RefusesTooFewOrBadSamples) {
  auto message = [](llvm::Expected<KernelTimeFit> fit) {
    EXPECT_FALSE(bool(fit));
    return fit ? std::string() : llvm::toString(fit.takeError());
  };
  std::vector<KernelTimeSample> two = {{1e9, 1e5, 0.01}, {2e9, 2e5, 0.02}};
  EXPECT_NE(message(fitKernelTime(two, 1e11)).find("at least 3"),
            std::string::npos);
  std::vector<KernelTimeSample> bad = {
      {1e9, 1e5, 0.01}, {2e9, 2e5, -1}, {4e9, 3e5, 0.04}};
  EXPECT_NE(message(fitKernelTime(bad, 1e11)).find("measurement 1"),
            std::string::npos);
  std::vector<KernelTimeSample> nan = {
      {1e9, 1e5, 0.01}, {2e9, 2e5, NAN}, {4e9, 3e5, 0.04}};
  EXPECT_NE(message(fitKernelTime(nan, 1e11)).find("must be positive"),
            std::string::npos);
  EXPECT_NE(
      message(fitKernelTime(exactSamples({0.5, 0, 0}, 1e11), 0)).find("peak"),
      std::string::npos);
}

} // namespace
