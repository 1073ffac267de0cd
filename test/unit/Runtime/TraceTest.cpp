//===- TraceTest.cpp - The runtime's per-op trace recorder ----------------===//

#include "ratrain/runtime/Trace.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

#include <map>
#include <string>

using namespace ratrain::rt;
using Clock = Tracer::Clock;

TEST(Trace, StepRangesParse) {
  llvm::Expected<TraceRange> one = parseTraceRange("3");
  ASSERT_TRUE(bool(one));
  EXPECT_EQ(one->first, 3u);
  EXPECT_EQ(one->last, 3u);
  llvm::Expected<TraceRange> range = parseTraceRange("2-5");
  ASSERT_TRUE(bool(range));
  EXPECT_EQ(range->first, 2u);
  EXPECT_EQ(range->last, 5u);
  EXPECT_TRUE(range->contains(2));
  EXPECT_TRUE(range->contains(5));
  EXPECT_FALSE(range->contains(6));
  for (const char *bad : {"0", "5-2", "x", "2-", "-3", "2-y", ""}) {
    llvm::Expected<TraceRange> parsed = parseTraceRange(bad);
    ASSERT_FALSE(bool(parsed)) << bad;
    std::string message = llvm::toString(parsed.takeError());
    EXPECT_NE(message.find("--trace-steps"), std::string::npos) << message;
  }
}

TEST(Trace, CommCategoriesAreTheSimulatorsKinds) {
  EXPECT_EQ(getCommCategory("send of ddr[0, +64) on the pipeline group"),
            "p2p");
  EXPECT_EQ(getCommCategory("recv of ddr[0, +64) on the pipeline group"),
            "p2p");
  EXPECT_EQ(getCommCategory("all-reduce of ddr[0, +4) on the world group"),
            "all-reduce");
  EXPECT_EQ(getCommCategory("reduce-scatter of x"), "reduce-scatter");
  EXPECT_EQ(getCommCategory("all-gather of x"), "all-gather");
  EXPECT_EQ(getCommCategory("dma ddr[0, +64) <- gsm[0]"), "dma");
  EXPECT_EQ(getCommCategory("reload of host 'k' into ddr[0, +8)"), "offload");
  EXPECT_EQ(getCommCategory("offload of ddr[0, +8) to host 'k'"), "offload");
  EXPECT_EQ(getCommCategory("barrier on the world group"), "barrier");
  EXPECT_EQ(getCommCategory("something"), "other");
}

namespace {
/// Parses a one-rank trace; events by name (the last one of each name).
struct Parsed {
  llvm::json::Value root = nullptr;
  std::vector<const llvm::json::Object *> events;
  std::map<std::string, int> count;
};
Parsed parse(const std::string &text) {
  Parsed parsed;
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  EXPECT_TRUE(bool(value)) << llvm::toString(value.takeError()) << "\n" << text;
  if (!value)
    return parsed;
  parsed.root = std::move(*value);
  const llvm::json::Array *events =
      parsed.root.getAsObject()->getArray("traceEvents");
  EXPECT_NE(events, nullptr);
  for (const llvm::json::Value &event : *events) {
    parsed.events.push_back(event.getAsObject());
    ++parsed.count[event.getAsObject()->getString("name")->str()];
  }
  return parsed;
}
} // namespace

TEST(Trace, RecordsOnlyTheStepsInRange) {
  Tracer tracer;
  tracer.setRange({2, 2});
  tracer.beginStep(1);
  EXPECT_FALSE(tracer.recording());
  tracer.beginSpan("fwd L0 mb0", TracePhase::Forward);
  tracer.kernel("gemm", Clock::now(), Clock::now());
  tracer.endSpan();
  tracer.endStep();
  EXPECT_FALSE(tracer.hasEvents());
  tracer.beginStep(2);
  EXPECT_TRUE(tracer.recording());
  tracer.beginSpan("fwd L0 mb0", TracePhase::Forward);
  tracer.endSpan();
  tracer.endStep();
  EXPECT_FALSE(tracer.recording());
  EXPECT_TRUE(tracer.hasEvents());
  tracer.beginStep(3);
  EXPECT_FALSE(tracer.recording());
}

TEST(Trace, EventsFormAChromeTrace) {
  Tracer tracer;
  tracer.setRange({1, 2});
  Clock::time_point origin = Clock::now();
  for (uint64_t step = 1; step <= 2; ++step) {
    tracer.beginStep(step);
    tracer.beginSpan("fwd L1 mb0", TracePhase::Forward);
    Clock::time_point t = Clock::now();
    tracer.kernel("gemm", t, t + std::chrono::microseconds(5),
                  "NT 256x688x256");
    tracer.kernel("rmsnormForward", t + std::chrono::microseconds(5),
                  t + std::chrono::microseconds(7));
    tracer.endSpan();
    tracer.wait("recv of ddr[0, +64) on the pipeline group", t,
                t + std::chrono::microseconds(3));
    tracer.async("send of ddr[0, +64) on the pipeline group", t,
                 t + std::chrono::microseconds(9));
    // A span still open at the end of the step is closed by it.
    tracer.beginSpan("update L1", TracePhase::Update);
    tracer.endStep();
  }
  std::string events = tracer.takeEvents(3, "stage 1 (rank 3)", 1, 1, origin);
  EXPECT_FALSE(tracer.hasEvents());
  Parsed trace = parse(Tracer::assemble({events}, "tiny"));
  EXPECT_EQ(trace.count["process_name"], 1);
  EXPECT_EQ(trace.count["thread_name"], 5);
  EXPECT_EQ(trace.count["step 1"], 1);
  EXPECT_EQ(trace.count["step 2"], 1);
  EXPECT_EQ(trace.count["fwd L1 mb0"], 2);
  EXPECT_EQ(trace.count["update L1"], 2);
  EXPECT_EQ(trace.count["gemm"], 2);
  EXPECT_EQ(trace.count["wait p2p"], 2);
  // An asynchronous operation: a begin and an end with the same id.
  EXPECT_EQ(trace.count["send of ddr[0, +64) on the pipeline group"], 4);
  std::map<std::string, int> asyncIds;
  for (const llvm::json::Object *event : trace.events) {
    llvm::StringRef ph = *event->getString("ph");
    EXPECT_EQ(event->getInteger("pid"), 3);
    if (ph == "M")
      continue;
    ASSERT_TRUE(event->getNumber("ts")) << "an event without ts";
    EXPECT_GE(*event->getNumber("ts"), 0.0);
    if (ph == "b" || ph == "e") {
      asyncIds[event->getString("id")->str()] += ph == "b" ? 1 : 10;
      continue;
    }
    ASSERT_EQ(ph, "X");
    ASSERT_TRUE(event->getNumber("dur"));
    EXPECT_GE(*event->getNumber("dur"), 0.0);
    const llvm::json::Object *args = event->getObject("args");
    ASSERT_NE(args, nullptr);
    EXPECT_TRUE(args->getInteger("step"));
    llvm::StringRef name = *event->getString("name");
    llvm::StringRef cat = *event->getString("cat");
    if (name == "fwd L1 mb0")
      EXPECT_EQ(cat, "forward");
    if (name == "update L1")
      EXPECT_EQ(cat, "update");
    if (name == "gemm") {
      EXPECT_EQ(cat, "kernel");
      EXPECT_EQ(args->getString("shape"), "NT 256x688x256");
    }
    if (name == "rmsnormForward") // No shape given: no shape argument.
      EXPECT_EQ(args->getString("shape"), std::nullopt);
    if (name == "wait p2p") {
      EXPECT_EQ(cat, "p2p");
      EXPECT_EQ(event->getInteger("tid"), Tracer::BlockedThread);
    }
  }
  EXPECT_EQ(asyncIds.size(), 2u);
  for (const auto &[id, pairs] : asyncIds)
    EXPECT_EQ(pairs, 11) << id;
}
