//===- StepLogTest.cpp - Reading the runtime's step log -------------------===//

#include "TestMachine.h"

#include "ratrain/Simulator/StepLog.h"

#include "gtest/gtest.h"

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::testing;

namespace {

TEST(StepLog, MedianSkipsTheWarmUpStep) {
  MeasuredSteps steps = expectOk(parseStepLog(
      "{\"step\":1,\"tokens\":4096,\"step_s\":9.0,\"peak_arena_bytes\":[5,7]}\n"
      "\n"
      "{\"step\":2,\"tokens\":4096,\"step_s\":2.0,\"loss\":null}\n"
      "{\"step\":3,\"tokens\":4096,\"step_s\":4.0}\n"
      "{\"step\":4,\"tokens\":4096,\"step_s\":3.0,\"peak_arena_bytes\":[9]}\n",
      "log"));
  ASSERT_EQ(steps.stepSeconds.size(), 4u);
  EXPECT_DOUBLE_EQ(steps.medianStepSeconds, 3.0);
  EXPECT_DOUBLE_EQ(steps.tokensPerStep, 4096.0);
  EXPECT_EQ(steps.peakArenaBytes, 9);
  // Even count: the mean of the two middle steps.
  MeasuredSteps even = expectOk(parseStepLog(
      "{\"step_s\":100}\n{\"step_s\":1}\n{\"step_s\":3}\n", "log"));
  EXPECT_DOUBLE_EQ(even.medianStepSeconds, 2.0);
  // A single step is its own median.
  EXPECT_DOUBLE_EQ(
      expectOk(parseStepLog("{\"step_s\":5}", "log")).medianStepSeconds, 5.0);
}

TEST(StepLog, QuartilesInterpolateBetweenRanksWithoutTheWarmUpStep) {
  struct Case {
    const char *log;
    double lower, median, upper;
  } cases[] = {
      // Steady steps 2, 4, 6, 8, 10 (the first, 50, is the warm-up): the
      // quartiles are ranks 1 and 3.
      {"{\"step_s\":50}\n{\"step_s\":10}\n{\"step_s\":2}\n"
       "{\"step_s\":8}\n{\"step_s\":4}\n{\"step_s\":6}\n",
       4.0, 6.0, 8.0},
      // Steady steps 1, 2, 3, 4: ranks 0.75, 1.5 and 2.25.
      {"{\"step_s\":9}\n{\"step_s\":4}\n{\"step_s\":1}\n{\"step_s\":3}\n"
       "{\"step_s\":2}\n",
       1.75, 2.5, 3.25},
      // One step: all three are that step.
      {"{\"step_s\":5}", 5.0, 5.0, 5.0}};
  for (const Case &c : cases) {
    SCOPED_TRACE(c.log);
    MeasuredSteps steps = expectOk(parseStepLog(c.log, "log"));
    EXPECT_DOUBLE_EQ(steps.lowerQuartileStepSeconds, c.lower);
    EXPECT_DOUBLE_EQ(steps.medianStepSeconds, c.median);
    EXPECT_DOUBLE_EQ(steps.upperQuartileStepSeconds, c.upper);
  }
}

TEST(StepLog, KernelTimesAreTheRanksMeanWithoutTheWarmUpStep) {
  // Per step the mean over the ranks: 5, 1, 3, 2; the median of the last
  // three is 2.
  MeasuredSteps steps =
      expectOk(parseStepLog("{\"step_s\":9,\"kernel_s\":[4,6]}\n"
                            "{\"step_s\":2,\"kernel_s\":[1,1]}\n"
                            "{\"step_s\":4,\"kernel_s\":[2,4]}\n"
                            "{\"step_s\":3,\"kernel_s\":[1.5,2.5]}\n",
                            "log"));
  EXPECT_EQ(steps.kernelSeconds, (std::vector<double>{5, 1, 3, 2}));
  EXPECT_DOUBLE_EQ(steps.medianKernelSeconds, 2.0);
  // Without kernel times in every step (a log of an older runtime, or one
  // two runs appended to), none.
  for (const char *log : {"{\"step_s\":1}\n{\"step_s\":2}\n",
                          "{\"step_s\":1,\"kernel_s\":[1]}\n"
                          "{\"step_s\":2}\n",
                          "{\"step_s\":1,\"kernel_s\":[]}\n"}) {
    SCOPED_TRACE(log);
    MeasuredSteps none = expectOk(parseStepLog(log, "log"));
    EXPECT_TRUE(none.kernelSeconds.empty());
    EXPECT_EQ(none.medianKernelSeconds, 0.0);
  }
  EXPECT_EQ(expectError(parseStepLog(
                "{\"step_s\":1,\"kernel_s\":[0.5,\"x\"]}\n", "run.log")),
            "run.log:1: \"kernel_s\" must list one non-negative number per "
            "rank");
}

TEST(StepLog, KernelCpuTimesAreTheRanksMeanWithoutTheWarmUpStep) {
  // Per step the mean over the ranks: 3, 0.5, 2, 1.5; the median of the
  // last three is 1.5. Wall kernel times are kept apart.
  MeasuredSteps steps = expectOk(parseStepLog(
      "{\"step_s\":9,\"kernel_s\":[4,6],\"kernel_cpu_s\":[2,4]}\n"
      "{\"step_s\":2,\"kernel_s\":[1,1],\"kernel_cpu_s\":[0.5,0.5]}\n"
      "{\"step_s\":4,\"kernel_s\":[2,4],\"kernel_cpu_s\":[1,3]}\n"
      "{\"step_s\":3,\"kernel_s\":[2,2],\"kernel_cpu_s\":[1,2]}\n",
      "log"));
  EXPECT_EQ(steps.kernelCpuSeconds, (std::vector<double>{3, 0.5, 2, 1.5}));
  EXPECT_TRUE(steps.progressCpuSeconds.empty());
  EXPECT_DOUBLE_EQ(steps.medianKernelCpuSeconds, 1.5);
  EXPECT_DOUBLE_EQ(steps.medianKernelSeconds, 2.0);
  // A log of a runtime before the CPU times: wall kernel times only.
  MeasuredSteps older = expectOk(parseStepLog(
      "{\"step_s\":1,\"kernel_s\":[1]}\n{\"step_s\":2,\"kernel_s\":[1]}\n",
      "log"));
  EXPECT_TRUE(older.kernelCpuSeconds.empty());
  EXPECT_EQ(older.medianKernelCpuSeconds, 0.0);
  EXPECT_EQ(older.medianKernelSeconds, 1.0);
  EXPECT_EQ(expectError(parseStepLog("{\"step_s\":1,\"kernel_cpu_s\":[-1]}\n",
                                     "run.log")),
            "run.log:1: \"kernel_cpu_s\" must list one non-negative number "
            "per rank");
}

TEST(StepLog, EachRanksMedianKernelTime) {
  // Rank 0: 4, 1, 3 -> median of the last two 2; rank 1: 6, 1, 5 -> 3.
  MeasuredSteps steps = expectOk(
      parseStepLog("{\"step_s\":9,\"kernel_s\":[4,6],\"kernel_cpu_s\":[4,5]}\n"
                   "{\"step_s\":2,\"kernel_s\":[1,1],\"kernel_cpu_s\":[1,1]}\n"
                   "{\"step_s\":4,\"kernel_s\":[3,5],\"kernel_cpu_s\":[2,4]}\n",
                   "log"));
  EXPECT_EQ(steps.rankMedianKernelSeconds, (std::vector<double>{2, 3}));
  EXPECT_EQ(steps.rankMedianKernelCpuSeconds, (std::vector<double>{1.5, 2.5}));
  // Steps that list different numbers of ranks: no per-rank figures.
  MeasuredSteps mixed = expectOk(parseStepLog(
      "{\"step_s\":9,\"kernel_s\":[4,6]}\n{\"step_s\":2,\"kernel_s\":[1]}\n",
      "log"));
  EXPECT_TRUE(mixed.rankMedianKernelSeconds.empty());
  EXPECT_GT(mixed.medianKernelSeconds, 0.0);
}

TEST(StepLog, ProgressCpuTimesAreTheRanksMeanWithoutTheWarmUpStep) {
  MeasuredSteps steps =
      expectOk(parseStepLog("{\"step_s\":9,\"progress_cpu_s\":[0.5,0.25]}\n"
                            "{\"step_s\":2,\"progress_cpu_s\":[0.25,0.25]}\n"
                            "{\"step_s\":4,\"progress_cpu_s\":[0.125,0.125]}\n",
                            "log"));
  EXPECT_EQ(steps.progressCpuSeconds,
            (std::vector<double>{0.375, 0.25, 0.125}));
  EXPECT_DOUBLE_EQ(steps.medianProgressCpuSeconds, 0.1875);
}

TEST(StepLog, ErrorsNameFileAndLine) {
  EXPECT_EQ(
      expectError(parseStepLog("{\"step_s\":1}\n{\"step\":2}\n", "run.log")),
      "run.log:2: missing or negative \"step_s\"");
  EXPECT_NE(expectError(parseStepLog("{\"step_s\":1}\nnot json\n", "run.log"))
                .find("run.log:2: not JSON"),
            std::string::npos);
  EXPECT_EQ(expectError(parseStepLog("\n\n", "run.log")),
            "run.log: no steps logged");
  EXPECT_NE(expectError(loadStepLog("/nonexistent/step.log")).find("step.log"),
            std::string::npos);
}

} // namespace
