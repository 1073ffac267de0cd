//===- GenerateTest.cpp - The generated schedule kinds --------------------===//

#include "ScheduleTestUtils.h"

#include "ratrain/Model/Limits.h"

using namespace ratrain::schedule;
using namespace ratrain::schedule::test;

namespace {

const int64_t kRanks[] = {1, 2, 3, 4, 8, 16, 32};
const int64_t kMicroBatches[] = {1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 32, 48, 64};

/// The (v, m) pairs to try for `kind` on `pp` ranks.
std::vector<std::pair<int64_t, int64_t>> shapes(ScheduleKind kind, int64_t pp) {
  std::vector<std::pair<int64_t, int64_t>> result;
  for (int64_t m : kMicroBatches) {
    if (kind != ScheduleKind::Interleaved1F1B) {
      result.push_back({defaultVirtualStages(kind), m});
      continue;
    }
    for (int64_t v : {2, 3, 4})
      if (m % std::max<int64_t>(1, m / pp) == 0)
        result.push_back({v, m});
  }
  if (kind == ScheduleKind::Interleaved1F1B)
    for (int64_t v : {2, 4})
      result.push_back({v, 2 * pp}); // some pp have no listed multiple
  return result;
}

/// Per stage, the micro-batches of `kind` actions in program order.
std::vector<std::vector<int64_t>> orderOf(const PipelineSchedule &s,
                                          ActionKind kind) {
  std::vector<std::vector<int64_t>> order(s.numStages());
  for (const std::vector<Action> &program : s.programs)
    for (const Action &a : program)
      if (a.kind == kind)
        order[a.stage].push_back(a.microBatch);
  return order;
}

TEST(GenerateTest, EveryKindPassesTheChecker) {
  int64_t checked = 0;
  for (ScheduleKind kind : kGeneratedKinds) {
    for (int64_t pp : kRanks) {
      for (auto [v, m] : shapes(kind, pp)) {
        SCOPED_TRACE(stringifyScheduleKind(kind).str() +
                     " pp=" + std::to_string(pp) + " v=" + std::to_string(v) +
                     " m=" + std::to_string(m));
        PipelineSchedule s = generate(kind, pp, v, m);
        ASSERT_EQ(s.kind, kind);
        ASSERT_EQ(s.ranks, pp);
        ASSERT_EQ(s.virtualStages, v);
        ASSERT_EQ(s.microBatches, m);
        EXPECT_EQ(errorText(checkSchedule(s)), "");
        EXPECT_EQ(s.splitsBackward(),
                  kind == ScheduleKind::ZBH1 || kind == ScheduleKind::ZBV);
        EXPECT_FALSE(s.hasCommunication());
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 200);
}

TEST(GenerateTest, GradientsAccumulateInMicroBatchOrder) {
  // Per stage, the B/I and the W actions in ascending micro-batch order, as
  // under 1F1B, so the summed weight gradients are bit-identical.
  for (ScheduleKind kind : kGeneratedKinds) {
    for (int64_t pp : kRanks) {
      for (auto [v, m] : shapes(kind, pp)) {
        SCOPED_TRACE(stringifyScheduleKind(kind).str() +
                     " pp=" + std::to_string(pp) + " v=" + std::to_string(v) +
                     " m=" + std::to_string(m));
        PipelineSchedule s = generate(kind, pp, v, m);
        std::vector<int64_t> ascending(m);
        for (int64_t k = 0; k < m; ++k)
          ascending[k] = k;
        bool split = s.splitsBackward();
        auto gradients = orderOf(s, split ? ActionKind::BackwardInput
                                          : ActionKind::Backward);
        auto weights = orderOf(s, ActionKind::BackwardWeight);
        auto forwards = orderOf(s, ActionKind::Forward);
        for (int64_t c = 0; c < s.numStages(); ++c) {
          EXPECT_EQ(forwards[c], ascending) << "stage " << c;
          EXPECT_EQ(gradients[c], ascending) << "stage " << c;
          if (split)
            EXPECT_EQ(weights[c], ascending) << "stage " << c;
        }
      }
    }
  }
}

TEST(GenerateTest, OneFOneBIsTheFormula) {
  // Stage s of p: min(p - s - 1, m) warm-up F, then (F, B) pairs, then B.
  for (int64_t p : kRanks) {
    for (int64_t m : kMicroBatches) {
      PipelineSchedule s = generate(ScheduleKind::OneFOneB, p, 1, m);
      ASSERT_EQ(s.programs.size(), static_cast<size_t>(p));
      for (int64_t r = 0; r < p; ++r) {
        std::vector<Action> expected;
        int64_t w = std::min(p - r - 1, m);
        for (int64_t k = 0; k < w; ++k)
          expected.push_back({r, ActionKind::Forward, k});
        for (int64_t k = 0; k < m - w; ++k) {
          expected.push_back({r, ActionKind::Forward, w + k});
          expected.push_back({r, ActionKind::Backward, k});
        }
        for (int64_t k = m - w; k < m; ++k)
          expected.push_back({r, ActionKind::Backward, k});
        EXPECT_EQ(s.programs[r], expected)
            << "p=" << p << " m=" << m << " rank " << r;
        EXPECT_EQ(s.stageToRank[r], r);
      }
    }
  }
}

TEST(GenerateTest, InterleavedFollowsMegatron) {
  // pp = 2, v = 2, m = 4: rank 0 warms up with (v - 1) pp + 2 (pp - 1) = 4
  // forwards over its chunks 0 (stage 0) and 1 (stage 2) in groups of pp.
  PipelineSchedule s = generate(ScheduleKind::Interleaved1F1B, 2, 2, 4);
  EXPECT_EQ(s.stageToRank, (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(writeCSV(s), "0F0,0F1,2F0,2F1,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,"
                         "2B2,2B3,0B2,0B3\n"
                         "1F0,1F1,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,"
                         "3F3,3B3,1B2,1B3\n");
}

TEST(GenerateTest, InterleavedSplitsOtherMicroBatchCountsIntoRounds) {
  // m = 6 on pp = 4 is one round of 6: both chunks of rank 0 forward all six
  // in turn (warm-up (v - 1) 6 + 2 (pp - 1) = 12 = all forwards).
  PipelineSchedule s = generate(ScheduleKind::Interleaved1F1B, 4, 2, 6);
  EXPECT_EQ(errorText(checkSchedule(s)), "");
  std::vector<Action> firstEight(s.programs[0].begin(),
                                 s.programs[0].begin() + 8);
  EXPECT_EQ(firstEight, (std::vector<Action>{{0, ActionKind::Forward, 0},
                                             {0, ActionKind::Forward, 1},
                                             {0, ActionKind::Forward, 2},
                                             {0, ActionKind::Forward, 3},
                                             {0, ActionKind::Forward, 4},
                                             {0, ActionKind::Forward, 5},
                                             {4, ActionKind::Forward, 0},
                                             {4, ActionKind::Forward, 1}}));
  for (int64_t m = 1; m <= 40; ++m)
    for (int64_t pp : {3, 4, 8}) {
      llvm::Expected<PipelineSchedule> t =
          generateSchedule(ScheduleKind::Interleaved1F1B, pp, 2, m);
      if (!t) {
        llvm::consumeError(t.takeError());
        EXPECT_NE(m % std::max<int64_t>(1, m / pp), 0);
        continue;
      }
      EXPECT_EQ(errorText(checkSchedule(*t)), "") << "pp=" << pp << " m=" << m;
    }
}

TEST(GenerateTest, ZBVPlacesStagesInAV) {
  PipelineSchedule s = generate(ScheduleKind::ZBV, 4, 2, 8);
  EXPECT_EQ(s.stageToRank, (std::vector<int64_t>{0, 1, 2, 3, 3, 2, 1, 0}));
  EXPECT_EQ(s.stagesOfRank(1), (std::vector<int64_t>{1, 6}));
  EXPECT_EQ(stagePlacement(ScheduleKind::Interleaved1F1B, 3, 2),
            (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
}

TEST(GenerateTest, ZBH1LastStageRunsFIW) {
  // The last stage holds one micro-batch at a time: F, I, W each.
  PipelineSchedule s = generate(ScheduleKind::ZBH1, 4, 1, 3);
  EXPECT_EQ(writeCSV(s).substr(writeCSV(s).rfind("3F0")),
            "3F0,3I0,3W0,3F1,3I1,3W1,3F2,3I2,3W2\n");
}

TEST(GenerateTest, RefusesWhatItCannotBuild) {
  auto error = [](ScheduleKind kind, int64_t pp, int64_t v, int64_t m) {
    llvm::Expected<PipelineSchedule> s = generateSchedule(kind, pp, v, m);
    if (s)
      return std::string("(no error)");
    return llvm::toString(s.takeError());
  };
  EXPECT_NE(error(ScheduleKind::OneFOneB, 4, 2, 8).find("v = 1"),
            std::string::npos);
  EXPECT_NE(error(ScheduleKind::ZBH1, 4, 2, 8).find("v = 2"),
            std::string::npos);
  EXPECT_NE(error(ScheduleKind::ZBV, 4, 3, 8).find("v = 2"), std::string::npos);
  EXPECT_NE(error(ScheduleKind::Interleaved1F1B, 4, 1, 8).find("v >= 2"),
            std::string::npos);
  // m = 9 on pp = 4: two rounds of 4.5 micro-batches.
  EXPECT_NE(error(ScheduleKind::Interleaved1F1B, 4, 2, 9)
                .find("m must be a multiple of 2"),
            std::string::npos);
  EXPECT_NE(error(ScheduleKind::Custom, 4, 1, 8).find("CSV"),
            std::string::npos);
  EXPECT_NE(error(ScheduleKind::OneFOneB, 0, 1, 8).find("at least 1"),
            std::string::npos);
  EXPECT_NE(error(ScheduleKind::OneFOneB, 4, 1, 0).find("at least 1"),
            std::string::npos);
  EXPECT_NE(error(ScheduleKind::OneFOneB, int64_t(1) << 40, 1, 1)
                .find(std::to_string(ratrain::limits::kMaxModelLayers)),
            std::string::npos);
  EXPECT_NE(error(ScheduleKind::OneFOneB, 4, 1, int64_t(1) << 40)
                .find(std::to_string(ratrain::limits::kMaxMicroBatches)),
            std::string::npos);
  EXPECT_NE(error(ScheduleKind::Interleaved1F1B, 1024, 64, 1024)
                .find(std::to_string(ratrain::limits::kMaxScheduleSize)),
            std::string::npos);
}

TEST(GenerateTest, KindNames) {
  for (ScheduleKind kind :
       {ScheduleKind::OneFOneB, ScheduleKind::Interleaved1F1B,
        ScheduleKind::ZBH1, ScheduleKind::ZBV, ScheduleKind::Custom})
    EXPECT_EQ(parseScheduleKind(stringifyScheduleKind(kind)), kind);
  EXPECT_EQ(stringifyScheduleKind(ScheduleKind::ZBH1), "zb-h1");
  EXPECT_EQ(parseScheduleKind("zb-h2"), std::nullopt);
}

} // namespace
