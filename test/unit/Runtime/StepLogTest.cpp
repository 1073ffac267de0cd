//===- StepLogTest.cpp - JSON step lines and progress lines ---------------===//

#include "TestUtil.h"

#include "ratrain/runtime/StepLog.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cmath>

using namespace ratrain::rt;
using namespace ratrain::rt::test;

TEST(StepLog, JSONLineHasEveryField) {
  StepRecord record;
  record.step = 12;
  record.loss = 3.25;
  record.tokens = 4096;
  record.seconds = 0.5;
  record.elapsedSeconds = 6;
  record.peakArenaBytes = {1024, 2048};
  std::string line = formatStepJSON(record);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto value = llvm::json::parse(line);
  ASSERT_TRUE(bool(value));
  llvm::json::Object *object = value->getAsObject();
  EXPECT_EQ(object->getInteger("step"), 12);
  EXPECT_EQ(object->getNumber("loss"), 3.25);
  EXPECT_EQ(object->getNumber("tokens_per_s"), 8192.0);
  EXPECT_EQ(object->getNumber("step_s"), 0.5);
  llvm::json::Array *peaks = object->getArray("peak_arena_bytes");
  ASSERT_TRUE(peaks);
  EXPECT_EQ((*peaks)[1].getAsInteger(), 2048);
  // The learning rate and the clipped step's gradient norm only when known.
  EXPECT_FALSE(object->getNumber("lr"));
  EXPECT_FALSE(object->getNumber("grad_norm"));
  record.lr = 3e-4;
  record.gradNorm = 2.5;
  auto known = llvm::json::parse(formatStepJSON(record));
  ASSERT_TRUE(bool(known));
  EXPECT_EQ(known->getAsObject()->getNumber("lr"), 3e-4);
  EXPECT_EQ(known->getAsObject()->getNumber("grad_norm"), 2.5);
  record.loss = NAN;
  EXPECT_NE(formatStepJSON(record).find("\"loss\":null"), std::string::npos);
}

TEST(StepLog, ValidationLine) {
  auto value = llvm::json::parse(formatEvalJSON(20, 2.75, 8192));
  ASSERT_TRUE(bool(value));
  llvm::json::Object *object = value->getAsObject();
  EXPECT_EQ(object->getInteger("step"), 20);
  EXPECT_EQ(object->getNumber("eval_loss"), 2.75);
  EXPECT_EQ(object->getNumber("eval_tokens"), 8192.0);
  // No "loss" key: a reader of the training losses skips the line.
  EXPECT_FALSE(object->get("loss"));
  EXPECT_NE(formatEvalJSON(3, NAN, 1).find("\"eval_loss\":null"),
            std::string::npos);
}

TEST(StepLog, JSONLineSplitsEveryRanksStepTime) {
  StepRecord record;
  record.step = 3;
  record.tokens = 1024;
  record.seconds = 0.5;
  // No measured split: no time fields.
  std::string bare = formatStepJSON(record);
  EXPECT_EQ(bare.find("kernel_s"), std::string::npos);
  EXPECT_EQ(bare.find("other_s"), std::string::npos);

  StepTimeSplit first;
  first.step = 0.5;
  first.kernel = 0.375;
  first.wait = 0.03125;
  first.assist = 0.03125;
  first.kernelCalls = 212;
  first.kernelCpu = 0.25;
  first.progressCpu = 0.03125;
  StepTimeSplit second;
  second.step = 0.25;
  second.kernel = 0.25;
  second.wait = 0.125; // Clock skew: kernel + wait > step.
  record.rankTimes = {first, second};
  auto value = llvm::json::parse(formatStepJSON(record));
  ASSERT_TRUE(bool(value));
  llvm::json::Object *object = value->getAsObject();
  auto at = [&](llvm::StringRef key, size_t rank) -> double {
    llvm::json::Array *array = object->getArray(key);
    if (!array || array->size() != 2)
      return -1;
    return (*array)[rank].getAsNumber().value_or(-1);
  };
  EXPECT_EQ(at("rank_step_s", 0), 0.5);
  EXPECT_EQ(at("kernel_s", 0), 0.375);
  EXPECT_EQ(at("wait_s", 0), 0.03125);
  EXPECT_EQ(at("assist_s", 0), 0.03125);
  EXPECT_EQ(at("other_s", 0), 0.0625); // Assisting is not "other".
  EXPECT_EQ(at("rank_step_s", 1), 0.25);
  EXPECT_EQ(at("wait_s", 1), 0.125);
  EXPECT_EQ(at("assist_s", 1), 0.0);
  EXPECT_EQ(at("other_s", 1), 0.0); // Never negative.
  EXPECT_EQ(at("kernel_calls", 0), 212);
  EXPECT_EQ(at("kernel_calls", 1), 0);
  EXPECT_EQ(at("kernel_cpu_s", 0), 0.25);
  EXPECT_EQ(at("kernel_cpu_s", 1), 0.0);
  EXPECT_EQ(at("progress_cpu_s", 0), 0.03125);
  EXPECT_EQ(at("progress_cpu_s", 1), 0.0);
  EXPECT_EQ(object->getNumber("step_s"), 0.5);
}

TEST(StepLog, TimersSumKernelsAndWaitsUntilTaken) {
  using std::chrono::microseconds;
  using std::chrono::milliseconds;
  StepTimers timers;
  timers.addKernel(milliseconds(250), 200000000);
  timers.addKernel(milliseconds(125), 50000000);
  timers.addWait(microseconds(62500));
  StepTimeSplit split;
  split.step = 0.5;
  timers.take(split);
  EXPECT_EQ(split.step, 0.5); // Kept.
  EXPECT_DOUBLE_EQ(split.kernel, 0.375);
  EXPECT_DOUBLE_EQ(split.wait, 0.0625);
  EXPECT_DOUBLE_EQ(split.other(), 0.0625);
  EXPECT_EQ(split.kernelCalls, 2u);
  EXPECT_DOUBLE_EQ(split.kernelCpu, 0.25);
  // take() restarts the sums and the count.
  timers.take(split);
  EXPECT_EQ(split.kernel, 0.0);
  EXPECT_EQ(split.kernelCpu, 0.0);
  EXPECT_EQ(split.kernelCalls, 0u);
  EXPECT_EQ(split.wait, 0.0);
  // A scope adds to its own sum only.
  { StepTimers::Scope waiting(timers, StepTimers::Sum::Wait); }
  timers.take(split);
  EXPECT_EQ(split.kernel, 0.0);
  EXPECT_GE(split.wait, 0.0);
  EXPECT_EQ(split.assist, 0.0);
  timers.addAssist(milliseconds(2));
  timers.take(split);
  EXPECT_EQ(split.wait, 0.0);
  EXPECT_DOUBLE_EQ(split.assist, 0.002);
  EXPECT_DOUBLE_EQ(split.other(), 0.5 - 0.002);
  timers.take(split);
  EXPECT_EQ(split.assist, 0.0); // Restarted.
  {
    // A kernel scope that keeps its thread busy counts CPU time, at most
    // its wall time.
    StepTimers::Scope computing(timers, StepTimers::Sum::Kernel);
    volatile double x = 1;
    for (int i = 0; i < 2000000; ++i)
      x = x * 1.0000001;
  }
  timers.addWait(milliseconds(1));
  timers.take(split);
  EXPECT_GT(split.kernel, 0.0);
  EXPECT_GT(split.kernelCpu, 0.0);
  EXPECT_LE(split.kernelCpu, split.kernel + 1e-3);
  EXPECT_DOUBLE_EQ(split.wait, 0.001);
}

TEST(StepLog, ProgressLineWithETA) {
  StepRecord record;
  record.step = 10;
  record.totalSteps = 100;
  record.loss = 2.5;
  record.tokens = 8100;
  record.seconds = 1.0;
  record.elapsedSeconds = 20; // 2 s per step so far, 90 steps left.
  EXPECT_EQ(
      formatProgressLine(record, 10),
      "step 10/100 | loss 2.5000 | 8.1k tok/s | 1.000 s/step | ETA 3m00s");
  record.totalSteps = 0;
  EXPECT_EQ(formatProgressLine(record, 10),
            "step 10 | loss 2.5000 | 8.1k tok/s | 1.000 s/step");
  EXPECT_EQ(formatDuration(3725), "1h02m");
  EXPECT_EQ(formatDuration(42), "42s");
}

TEST(StepLog, LoggerAppendsLinesToAFile) {
  TempDir dir;
  std::string path = dir.path("steps.jsonl");
  {
    auto logger = StepLogger::create(path, StepLogger::Progress::Never);
    ASSERT_TRUE(bool(logger));
    StepRecord record;
    for (uint64_t step = 1; step <= 3; ++step) {
      record.step = step;
      logger->log(record);
    }
  }
  auto text = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(text));
  llvm::StringRef contents = (*text)->getBuffer();
  EXPECT_EQ(contents.count('\n'), 3u);
  EXPECT_TRUE(contents.starts_with("{"));
  auto bad = StepLogger::create(dir.path("missing/dir/steps.jsonl"));
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("cannot open the step log"),
            std::string::npos);
}

TEST(StepLog, MeanReportedLossSkipsRanksWithoutOne) {
  EXPECT_EQ(meanReportedLoss({2.0, NAN, 4.0}), 3.0);
  // Tuples of (loss, something else): only every stride-th value counts.
  EXPECT_EQ(meanReportedLoss({NAN, 7.0, 1.5, 9.0}, 2), 1.5);
  EXPECT_TRUE(std::isnan(meanReportedLoss({NAN, NAN})));
  EXPECT_TRUE(std::isnan(meanReportedLoss({})));
}
