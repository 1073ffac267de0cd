//===- CollectiveScheduleTest.cpp - Rounds and staging of collectives ----===//
//
// The staging decisions of buildSchedule (runtime/src/CollectiveSchedule.h)
// and the byte ranges a lazily staged reduce-scatter tracks. The rounds
// themselves run in the e2e tests (e2e.runtime.comm, collective-levels).
//
//===----------------------------------------------------------------------===//

#include "CollectiveSchedule.h"

#include "gtest/gtest.h"

using namespace ratrain::rt;

namespace {

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

CollectiveShape ringShape(CollectiveKind kind, int members, int index) {
  CollectiveShape shape;
  shape.kind = kind;
  shape.algorithm = CollectiveAlgorithm::Ring;
  shape.elemBytes = 2;
  shape.count = 100;
  shape.size = members;
  shape.rank = index;
  shape.levels = 1;
  shape.members[0] = members;
  shape.index[0] = index;
  return shape;
}

} // namespace

TEST(StagedRanges, TracksMergedRanges) {
  StagedRanges staged;
  EXPECT_TRUE(staged.untouched(0, 100));
  EXPECT_EQ(staged.gaps(0, 100), (Ranges{{0, 100}}));
  staged.add(20, 40);
  staged.add(60, 80);
  EXPECT_TRUE(staged.untouched(0, 20));
  EXPECT_TRUE(staged.untouched(40, 60));
  EXPECT_FALSE(staged.untouched(39, 41));
  EXPECT_EQ(staged.gaps(0, 100), (Ranges{{0, 20}, {40, 60}, {80, 100}}));
  EXPECT_EQ(staged.gaps(25, 70), (Ranges{{40, 60}}));
  EXPECT_EQ(staged.gaps(20, 40), Ranges{});
  // Touching and overlapping ranges merge.
  staged.add(40, 60);
  EXPECT_EQ(staged.gaps(0, 100), (Ranges{{0, 20}, {80, 100}}));
  staged.add(10, 90);
  EXPECT_EQ(staged.gaps(0, 100), (Ranges{{0, 10}, {90, 100}}));
  staged.add(5, 5); // empty: no change
  EXPECT_EQ(staged.gaps(0, 100), (Ranges{{0, 10}, {90, 100}}));
  staged.clear();
  EXPECT_TRUE(staged.untouched(0, 100));
}

TEST(CollectiveSchedule, OneLevelRingsStageInRankOrder) {
  Schedule schedule;
  buildSchedule(ringShape(CollectiveKind::ReduceScatter, 4, 1), schedule);
  EXPECT_EQ(schedule.work, WorkBuffer::Staging);
  EXPECT_TRUE(schedule.lazyStaging);
  EXPECT_TRUE(schedule.order.empty());
  ASSERT_EQ(schedule.rounds.size(), 3u);
  // Every round reduces a block the rank has not reduced before, and sends
  // the block it reduced in the round before (round 0: an untouched one).
  for (size_t s = 0; s < schedule.rounds.size(); ++s) {
    EXPECT_TRUE(schedule.rounds[s].reduce);
    if (s > 0)
      EXPECT_EQ(schedule.rounds[s].sendOffset,
                schedule.rounds[s - 1].recvOffset);
  }
  buildSchedule(ringShape(CollectiveKind::AllGather, 4, 1), schedule);
  EXPECT_EQ(schedule.work, WorkBuffer::Result);
  EXPECT_FALSE(schedule.lazyStaging);
  buildSchedule(ringShape(CollectiveKind::AllReduce, 4, 1), schedule);
  EXPECT_EQ(schedule.work, WorkBuffer::Result);
  EXPECT_FALSE(schedule.lazyStaging);
}

TEST(CollectiveSchedule, LevelOrderStagingCopiesAsBefore) {
  // Two levels of 2: group rank 1 is staged at position 2.
  CollectiveShape shape = ringShape(CollectiveKind::ReduceScatter, 4, 1);
  shape.algorithm = CollectiveAlgorithm::Hierarchical;
  shape.levels = 2;
  shape.members[0] = shape.members[1] = 2;
  shape.index[0] = 1;
  shape.index[1] = 0;
  Schedule schedule;
  buildSchedule(shape, schedule);
  EXPECT_EQ(schedule.work, WorkBuffer::Staging);
  EXPECT_FALSE(schedule.lazyStaging);
  ASSERT_EQ(schedule.order.size(), 4u);
  EXPECT_EQ(schedule.order[1], 2);
  shape.kind = CollectiveKind::AllGather;
  buildSchedule(shape, schedule);
  EXPECT_EQ(schedule.work, WorkBuffer::Staging);
  // Ranks already in level order: the identity, staged lazily.
  shape.kind = CollectiveKind::ReduceScatter;
  shape.levelOrderRanks = true;
  buildSchedule(shape, schedule);
  EXPECT_TRUE(schedule.lazyStaging);
  EXPECT_TRUE(schedule.order.empty());
}
