//===- SyncPhasesTest.cpp - Which step averages which layer --------------===//

#include "ratrain/Planner/SyncPhases.h"

#include "gtest/gtest.h"

using namespace ratrain;

TEST(SyncPhases, EqualLayersGoRoundRobin) {
  std::vector<int64_t> bytes(7, 100);
  EXPECT_EQ(assignSyncPhases(bytes, 3),
            (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0}));
  // A period of one step: every layer every step.
  EXPECT_EQ(assignSyncPhases(bytes, 1), std::vector<int64_t>(7, 0));
}

TEST(SyncPhases, LargestFirstToTheLightestPhase) {
  // An embedding of 500, four decoders of 200 and a head of 300 over 2
  // phases: 500 -> 0, 300 -> 1, then each decoder to the lighter phase
  // (1; 0 on the tie at 500; 1; 0 on the tie at 700).
  std::vector<int64_t> phases =
      assignSyncPhases({500, 200, 200, 200, 200, 300}, 2);
  EXPECT_EQ(phases, (std::vector<int64_t>{0, 1, 0, 1, 0, 1}));
  int64_t load[2] = {0, 0};
  int64_t bytes[] = {500, 200, 200, 200, 200, 300};
  for (size_t i = 0; i < phases.size(); ++i)
    load[phases[i]] += bytes[i];
  EXPECT_EQ(load[0], 900);
  EXPECT_EQ(load[1], 700);
}

TEST(SyncPhases, MorePhasesThanLayersLeavesStepsWithoutAveraging) {
  EXPECT_EQ(assignSyncPhases({10, 30, 20}, 8), (std::vector<int64_t>{2, 0, 1}));
}
