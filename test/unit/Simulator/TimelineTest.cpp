//===- TimelineTest.cpp - Chrome trace and SVG output ---------------------===//

#include "TestMachine.h"

#include "ratrain/Simulator/Synthetic1F1B.h"
#include "ratrain/Simulator/Timeline.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

#include <set>

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::testing;

namespace {

SimProgram smallProgram() {
  Synthetic1F1BConfig config;
  config.stages = 3;
  config.microBatches = 4;
  config.layersPerStage = 2;
  config.dataParallel = 2;
  config.dpMembersPerNode = 2;
  config.activationBytes = 2;
  config.gradientBytesPerLayer = 8;
  config.updateSeconds = 0.25;
  config.placement = LifecyclePlacement::PerLayer;
  SimProgram program = buildSynthetic1F1B(config);
  program.stages[0].addDma(8, 1, "prefetch <&>"); // escaping in outputs
  return program;
}

TEST(ChromeTrace, IsValidJsonWithOneProcessPerStage) {
  SimProgram program = smallProgram();
  SimOptions options;
  options.iterations = 2;
  options.recordTrace = true;
  SimReport report = expectOk(simulate(program, makeTestMachine(), options));
  ASSERT_FALSE(report.trace.empty());
  std::string text;
  llvm::raw_string_ostream os(text);
  writeChromeTrace(report, program, os);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Array *events =
      parsed->getAsObject()->getArray("traceEvents");
  ASSERT_NE(events, nullptr);
  std::set<int64_t> processes;
  size_t complete = 0;
  bool sawDma = false, sawCompute = false;
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object *event = value.getAsObject();
    std::optional<llvm::StringRef> phase = event->getString("ph");
    ASSERT_TRUE(phase.has_value());
    if (*phase == "M" && event->getString("name") == "process_name")
      processes.insert(*event->getInteger("pid"));
    if (*phase != "X")
      continue;
    ++complete;
    EXPECT_GE(*event->getNumber("dur"), 0.0);
    if (event->getString("name") == "prefetch <&>")
      sawDma = true;
    if (event->getString("cat") == "forward")
      sawCompute = true;
  }
  EXPECT_EQ(processes.size(), 3u);
  EXPECT_EQ(complete, report.trace.size());
  EXPECT_TRUE(sawDma);
  EXPECT_TRUE(sawCompute);
}

TEST(ChromeTrace, TraceIterationsKeepsOnlyTheLastOnes) {
  SimProgram program = smallProgram();
  SimOptions options;
  options.iterations = 3;
  options.recordTrace = true;
  options.traceIterations = 1;
  SimReport report = expectOk(simulate(program, makeTestMachine(), options));
  ASSERT_FALSE(report.trace.empty());
  for (const TraceInterval &interval : report.trace)
    EXPECT_EQ(interval.iteration, 2u);
}

TEST(SvgTimeline, HasLanesLegendAndAxis) {
  SimProgram program = smallProgram();
  SimOptions options;
  options.recordTrace = true;
  SimReport report = expectOk(simulate(program, makeTestMachine(), options));
  std::string text;
  llvm::raw_string_ostream os(text);
  SvgOptions svg;
  svg.title = "small <1F1B>";
  writeSvgTimeline(report, program, os, svg);
  EXPECT_EQ(text.rfind("<svg ", 0), 0u);
  EXPECT_NE(text.find("</svg>"), std::string::npos);
  EXPECT_NE(text.find("small &lt;1F1B&gt;"), std::string::npos);
  for (const char *name :
       {">forward<", ">backward<", ">update<", ">all-reduce<", ">p2p<",
        ">stage 0<", ">stage 2<", ">time<", "end of iteration 3"})
    EXPECT_NE(text.find(name), std::string::npos) << name;
  // Forward compute is drawn in its legend colour.
  EXPECT_NE(text.find("fill=\"#4e79a7\"/>"), std::string::npos);
}

} // namespace
