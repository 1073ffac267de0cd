//===- MeasuredTraceTest.cpp - Reading a real run's per-op trace ----------===//

#include "ratrain/Simulator/MeasuredTrace.h"
#include "ratrain/Simulator/Simulator.h"

#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

using namespace ratrain::sim;

namespace {
/// One rank of stage `stage`: a 10 ms step (ts in microseconds) with a
/// forward span [0, 4) holding a 1 ms p2p wait, a backward span [4, 9) and a
/// 0.5 ms all-reduce wait after it.
std::string rank(int pid, int stage, int step, double offset) {
  auto x = [&](const char *name, const char *cat, int tid, double ts,
               double dur) {
    return llvm::formatv("{{\"name\":\"{0}\",\"cat\":\"{1}\",\"ph\":\"X\","
                         "\"pid\":{2},\"tid\":{3},\"ts\":{4},\"dur\":{5},"
                         "\"args\":{{\"step\":{6}}},\n",
                         name, cat, pid, tid, ts + offset, dur, step)
        .str();
  };
  std::string text =
      llvm::formatv("{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{0},"
                    "\"args\":{{\"name\":\"stage {1}\",\"stage\":{1}}},\n",
                    pid, stage)
          .str();
  text += x("step 1", "step", 0, 0, 10000);
  text += x("fwd L0 mb0", "forward", 0, 0, 4000);
  text += x("gemm", "kernel", 0, 0, 1000);
  text += x("gemm", "kernel", 0, 2000, 2000);
  text += x("wait p2p", "p2p", 1, 1000, 1000);
  text += x("bwd L0 mb0", "backward", 0, 4000, 5000);
  text += x("wait all-reduce", "all-reduce", 1, 9000, 500);
  return text;
}

std::string trace(const std::string &events) {
  std::string body = events;
  body.erase(body.find_last_of(','));
  return "{\"traceEvents\":[\n" + body + "\n]}";
}
} // namespace

TEST(MeasuredTrace, SplitsTheStepIntoOpClasses) {
  llvm::Expected<MeasuredTrace> parsed =
      parseMeasuredTrace(trace(rank(0, 0, 1, 0) + rank(1, 0, 1, 100)), "t");
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  ASSERT_EQ(parsed->stages.size(), 1u);
  const MeasuredStageTimes &stage = parsed->stages[0];
  EXPECT_EQ(parsed->ranks, 2);
  EXPECT_EQ(stage.ranks, 2);
  EXPECT_EQ(parsed->firstStep, 1u);
  EXPECT_EQ(parsed->lastStep, 1u);
  // The forward span less the wait inside it.
  EXPECT_NEAR(stage.busy[unsigned(ComputeKind::Forward)], 3e-3, 1e-12);
  EXPECT_NEAR(stage.busy[unsigned(ComputeKind::Backward)], 5e-3, 1e-12);
  EXPECT_NEAR(stage.exposed[unsigned(CommKind::P2P)], 1e-3, 1e-12);
  EXPECT_NEAR(stage.exposed[unsigned(CommKind::AllReduce)], 0.5e-3, 1e-12);
  EXPECT_NEAR(stage.kernels, 3e-3, 1e-12);
  // 10 ms less 9 ms of spans and 0.5 ms of waits outside them.
  EXPECT_NEAR(stage.outside, 0.5e-3, 1e-12);
  EXPECT_NEAR(stage.step, 10e-3, 1e-12);
  EXPECT_NEAR(parsed->stepSeconds, 10e-3, 1e-12);
}

TEST(MeasuredTrace, BadTracesNameTheProblem) {
  auto error = [](const std::string &text) {
    llvm::Expected<MeasuredTrace> parsed = parseMeasuredTrace(text, "x.json");
    EXPECT_FALSE(bool(parsed));
    return parsed ? std::string() : llvm::toString(parsed.takeError());
  };
  EXPECT_NE(error("[1").find("x.json: not a JSON trace"), std::string::npos);
  EXPECT_NE(error("{}").find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(error("{\"traceEvents\":[]}").find("no traced step"),
            std::string::npos);
  // Events without the process's stage.
  std::string events = rank(0, 0, 1, 0);
  events.erase(0, events.find('\n') + 1);
  EXPECT_NE(error(trace(events)).find("rank 0 has no process_name"),
            std::string::npos);
  EXPECT_NE(error("{\"traceEvents\":[{\"ph\":\"X\",\"pid\":0,\"name\":\"a\"}]}")
                .find("event 0 lacks"),
            std::string::npos);
}
