//===- SimulateTest.cpp - Timing and memory of the schedule kinds ---------===//
//
// Under F = I = W = 1 per (full) stage, B = 2, no transfer time: 1F1B's bubble
// is (p - 1) / (m + p - 1); ZB-H1 idles about a third of that; interleaving v
// chunks divides it by about v; ZB-V nearly removes it. Chunked kinds cost
// 1/v per chunk so a rank does the same work under every kind.
//
//===----------------------------------------------------------------------===//

#include "ScheduleTestUtils.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

using namespace ratrain::schedule;
using namespace ratrain::schedule::test;

namespace {

/// Simulates `kind` with a rank's work F = I = W = 1 per micro-batch.
ScheduleTiming simulate(ScheduleKind kind, int64_t pp, int64_t v, int64_t m,
                        double transfer = 0) {
  PipelineSchedule s = generate(kind, pp, v, m);
  return simulateSchedule(s, uniformCosts(pp * v, 1.0 / v, transfer));
}

/// Idle seconds of a rank, on average.
double idle(const ScheduleTiming &t) {
  double busy = 0;
  for (double b : t.busy)
    busy += b;
  return t.makespan - busy / t.busy.size();
}

TEST(SimulateTest, OneFOneBBubbleIsExact) {
  for (int64_t p : {1, 2, 3, 4, 8, 16, 32})
    for (int64_t m : {1, 2, 5, 8, 16, 32, 64}) {
      ScheduleTiming t = simulate(ScheduleKind::OneFOneB, p, 1, m);
      EXPECT_NEAR(t.bubbleFraction, double(p - 1) / double(m + p - 1), 1e-12)
          << "p=" << p << " m=" << m;
      EXPECT_DOUBLE_EQ(t.makespan, 3.0 * (m + p - 1));
      for (double b : t.busy)
        EXPECT_DOUBLE_EQ(b, 3.0 * m);
    }
}

TEST(SimulateTest, ZBH1FillsTheBubbleWithW) {
  for (int64_t p : {2, 3, 4, 8, 16, 32})
    for (int64_t m : {1, 2, 4, 8, 16, 32, 64}) {
      ScheduleTiming one = simulate(ScheduleKind::OneFOneB, p, 1, m);
      ScheduleTiming zb = simulate(ScheduleKind::ZBH1, p, 1, m);
      EXPECT_LT(zb.bubbleFraction, one.bubbleFraction)
          << "p=" << p << " m=" << m;
      // 1F1B idles 3 (p - 1). Under 1F1B's per-rank cap (p - s in flight,
      // freed by W) the last stage runs F I W serially, so rank 0's last I
      // ends 2p + 3(m - 1) at the earliest: ZB-H1 idles 2 (p - 1), which the
      // list scheduler reaches.
      if (m >= p)
        EXPECT_DOUBLE_EQ(idle(zb), 2.0 * (p - 1)) << "p=" << p << " m=" << m;
      EXPECT_LE(idle(zb), 2 * idle(one) / 3 + 1e-9) << "p=" << p << " m=" << m;
    }
}

TEST(SimulateTest, InterleavingDividesTheBubble) {
  for (int64_t p : {2, 4, 8})
    for (int64_t v : {2, 4})
      for (int64_t m : {p, 2 * p, 4 * p, 8 * p}) {
        ScheduleTiming one = simulate(ScheduleKind::OneFOneB, p, 1, m);
        ScheduleTiming inter = simulate(ScheduleKind::Interleaved1F1B, p, v, m);
        // Megatron: (p - 1) (F + B) / v.
        EXPECT_NEAR(idle(inter), idle(one) / v, 1e-9)
            << "p=" << p << " v=" << v << " m=" << m;
        EXPECT_LT(inter.bubbleFraction, one.bubbleFraction);
      }
}

TEST(SimulateTest, ZBVNearlyRemovesTheBubble) {
  // Under the 2p-chunk cap: under 7% at m = 2p, under 5% from m = 3p.
  for (int64_t p : {4, 8})
    for (int64_t m : {2 * p, 3 * p, 4 * p, 8 * p}) {
      ScheduleTiming zbv = simulate(ScheduleKind::ZBV, p, 2, m);
      EXPECT_LT(zbv.bubbleFraction, m >= 3 * p ? 0.05 : 0.07)
          << "p=" << p << " m=" << m;
      std::printf("zbv p=%lld m=%lld bubble %.4f\n", (long long)p, (long long)m,
                  zbv.bubbleFraction);
    }
  for (int64_t p : {2, 3, 16, 32})
    for (int64_t m : {int64_t(1), p, 2 * p}) {
      ScheduleTiming one = simulate(ScheduleKind::OneFOneB, p, 1, m);
      ScheduleTiming zbv = simulate(ScheduleKind::ZBV, p, 2, m);
      EXPECT_LT(zbv.bubbleFraction, one.bubbleFraction)
          << "p=" << p << " m=" << m;
    }
}

TEST(SimulateTest, ZeroBubbleKindsKeepOneFOneBMemory) {
  for (int64_t p : {1, 2, 3, 4, 8, 16, 32})
    for (int64_t m : {1, 2, 3, 8, 16, 32, 64}) {
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
      std::vector<double> full(p, 1.0), none(2 * p, 0.0), half(2 * p, 0.5);
      ScheduleMemory one =
          scheduleMemory(generate(ScheduleKind::OneFOneB, p, 1, m), full, none);
      ScheduleMemory zb =
          scheduleMemory(generate(ScheduleKind::ZBH1, p, 1, m), full, none);
      ScheduleMemory zbv =
          scheduleMemory(generate(ScheduleKind::ZBV, p, 2, m), half, none);
      for (int64_t r = 0; r < p; ++r) {
        EXPECT_DOUBLE_EQ(one.peakWeighted[r], double(std::min(p - r, m)));
        EXPECT_LE(zb.peakWeighted[r], one.peakWeighted[r]) << "rank " << r;
        EXPECT_EQ(zb.peakActivations[r][r], std::min(p - r, m));
      }
      // ZB-V's chunks hold half a rank's layers: no rank holds more than
      // 1F1B's first rank.
      double oneMax =
          *std::max_element(one.peakWeighted.begin(), one.peakWeighted.end());
      for (int64_t r = 0; r < p; ++r)
        EXPECT_LE(zbv.peakWeighted[r], oneMax) << "rank " << r;
    }
}

TEST(SimulateTest, CountsDeferredResults) {
  // The last ZB-H1 stage runs F I W in a row: one activation and one
  // deferred result at its peak.
  ScheduleMemory mem = scheduleMemory(generate(ScheduleKind::ZBH1, 4, 1, 8));
  EXPECT_DOUBLE_EQ(mem.peakWeighted[3], 2.0);
  EXPECT_EQ(mem.peakActivations[3][3], 1);
  EXPECT_EQ(mem.peakDeferred[3][3], 1);
  EXPECT_EQ(mem.peakActivations[3][0], 0);
  // 1F1B never defers.
  ScheduleMemory one =
      scheduleMemory(generate(ScheduleKind::OneFOneB, 4, 1, 8));
  for (const std::vector<int64_t> &deferred : one.peakDeferred)
    for (int64_t d : deferred)
      EXPECT_EQ(d, 0);
}

TEST(SimulateTest, TransfersCostBetweenRanksOnly) {
  // pp = 2, m = 1: F [0,1] on rank 0, 0.5 s transfer, F [1.5,2.5] and B
  // [2.5,4.5] on rank 1, transfer, B [5,7] on rank 0.
  PipelineSchedule s = generate(ScheduleKind::OneFOneB, 2, 1, 1);
  ScheduleTiming t = simulateSchedule(s, uniformCosts(2, 1.0, 0.5), true);
  EXPECT_DOUBLE_EQ(t.makespan, 7.0);
  ASSERT_EQ(t.actions.size(), 4u);
  std::vector<std::pair<double, double>> times;
  for (const TimedAction &a : t.actions)
    if (a.action == Action{0, ActionKind::Backward, 0})
      EXPECT_DOUBLE_EQ(a.start, 5.0);
    else if (a.action == Action{1, ActionKind::Forward, 0})
      EXPECT_DOUBLE_EQ(a.start, 1.5);
  EXPECT_DOUBLE_EQ(t.busy[0], 3.0);
  EXPECT_DOUBLE_EQ(t.bubbleFraction, 1.0 - 6.0 / 14.0);
  // Two stages of one rank (ZB-V on one rank) pay no transfer.
  ScheduleTiming v = simulateSchedule(generate(ScheduleKind::ZBV, 1, 2, 2),
                                      uniformCosts(2, 1.0, 100.0));
  EXPECT_DOUBLE_EQ(v.makespan, 12.0);
  EXPECT_DOUBLE_EQ(v.bubbleFraction, 0.0);
  // Without keepActions the timeline stays empty.
  EXPECT_TRUE(simulateSchedule(s, uniformCosts(2, 1.0)).actions.empty());
}

TEST(SimulateTest, RefusedSchedulesDoNotCrash) {
  PipelineSchedule s = generate(ScheduleKind::OneFOneB, 2, 1, 2);
  std::swap(s.programs[0], s.programs[1]);
  ScheduleTiming t = simulateSchedule(s, uniformCosts(2, 1.0));
  EXPECT_TRUE(std::isinf(t.makespan));
  EXPECT_TRUE(scheduleMemory(s).peakWeighted.empty());
  // 2000 ranks of one stage: 4M rank x stage counts, above the limit.
  std::string wide;
  for (int r = 0; r < 2000; ++r)
    wide += std::to_string(r) + "F0," + std::to_string(r) + "B0\n";
  llvm::Expected<PipelineSchedule> many = readCSV(wide);
  ASSERT_TRUE(static_cast<bool>(many)) << llvm::toString(many.takeError());
  EXPECT_EQ(errorText(checkSchedule(*many)), "");
  EXPECT_TRUE(scheduleMemory(*many).peakWeighted.empty());
  EXPECT_GT(simulateSchedule(*many, uniformCosts(2000, 1.0)).makespan, 0);
  // The list scheduler's quadratic time is bounded.
  llvm::Expected<PipelineSchedule> huge =
      generateSchedule(ScheduleKind::ZBH1, kMaxListScheduledRanks + 1, 1, 1);
  ASSERT_FALSE(static_cast<bool>(huge));
  EXPECT_NE(llvm::toString(huge.takeError())
                .find(std::to_string(kMaxListScheduledRanks)),
            std::string::npos);
}

/// Not a timed test: prints the bubble of each kind and how long the
/// planner's generate + simulate takes at LLaMA-2-70B's pp = 32, m = 32.
TEST(SimulateTest, PrintBubblesAndSpeed) {
  struct Case {
    ScheduleKind kind;
    int64_t v;
  } cases[] = {{ScheduleKind::OneFOneB, 1},
               {ScheduleKind::ZBH1, 1},
               {ScheduleKind::Interleaved1F1B, 2},
               {ScheduleKind::Interleaved1F1B, 4},
               {ScheduleKind::ZBV, 2}};
  for (auto [p, m] : {std::pair<int64_t, int64_t>{4, 8},
                      {8, 16},
                      {8, 32},
                      {32, 32},
                      {32, 64}})
    for (Case c : cases) {
      ScheduleTiming t = simulate(c.kind, p, c.v, m);
      std::printf("bubble %-16s v=%lld pp=%-2lld m=%-2lld: %.4f\n",
                  stringifyScheduleKind(c.kind).str().c_str(), (long long)c.v,
                  (long long)p, (long long)m, t.bubbleFraction);
    }
  for (Case c : cases) {
    const int64_t p = 32, m = 32, iterations = 200;
    ActionCosts costs = uniformCosts(p * c.v, 1.0 / c.v);
    auto begin = std::chrono::steady_clock::now();
    double sink = 0;
    for (int64_t i = 0; i < iterations; ++i) {
      llvm::Expected<PipelineSchedule> s = generateSchedule(c.kind, p, c.v, m);
      ASSERT_TRUE(static_cast<bool>(s));
      sink += simulateSchedule(*s, costs).makespan;
    }
    double us = std::chrono::duration<double, std::micro>(
                    std::chrono::steady_clock::now() - begin)
                    .count() /
                iterations;
    std::printf("generate+simulate %-16s pp=32 v=%lld m=32: %.1f us\n",
                stringifyScheduleKind(c.kind).str().c_str(), (long long)c.v,
                us);
    EXPECT_GT(sink, 0);
  }
}

} // namespace
