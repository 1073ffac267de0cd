//===- CheckTest.cpp - What the schedule checker refuses ------------------===//

#include "ScheduleTestUtils.h"

#include <algorithm>

using namespace ratrain::schedule;
using namespace ratrain::schedule::test;

namespace {

/// The checker's message for the schedule in `csv`.
std::string checkCSV(llvm::StringRef csv) {
  llvm::Expected<PipelineSchedule> s = readCSV(csv);
  if (!s)
    return "(unreadable) " + llvm::toString(s.takeError());
  return errorText(checkSchedule(*s));
}

/// `s` without the first action equal to `a`.
PipelineSchedule without(PipelineSchedule s, Action a) {
  for (std::vector<Action> &program : s.programs) {
    auto it = std::find(program.begin(), program.end(), a);
    if (it != program.end()) {
      program.erase(it);
      break;
    }
  }
  return s;
}

TEST(CheckTest, NamesMissingAndDuplicateActions) {
  PipelineSchedule zb = generate(ScheduleKind::ZBH1, 4, 1, 6);
  EXPECT_EQ(
      errorText(checkSchedule(without(zb, {2, ActionKind::BackwardWeight, 3}))),
      "stage 2 micro-batch 3 has no W");
  EXPECT_EQ(errorText(checkSchedule(without(zb, {1, ActionKind::Forward, 0}))),
            "stage 1 micro-batch 0 has no F");
  PipelineSchedule noBackward =
      without(without(zb, {3, ActionKind::BackwardWeight, 5}),
              {3, ActionKind::BackwardInput, 5});
  EXPECT_EQ(errorText(checkSchedule(noBackward)),
            "stage 3 micro-batch 5 has no backward (a B, or an I and a W)");
  PipelineSchedule twice = zb;
  twice.programs[0].push_back({0, ActionKind::Forward, 2});
  EXPECT_EQ(errorText(checkSchedule(twice)),
            "stage 0 micro-batch 2 has 2 F actions, expected one");
  PipelineSchedule both = zb;
  both.programs[1].push_back({1, ActionKind::Backward, 4});
  EXPECT_EQ(errorText(checkSchedule(both)),
            "stage 1 micro-batch 4 has both a B and a split backward (I/W)");
}

TEST(CheckTest, RefusesAnIncompleteCSV) {
  EXPECT_EQ(checkCSV("0F0,0F1,0B0\n1F0,1B0,1F1,1B1\n"),
            "stage 0 micro-batch 1 has no backward (a B, or an I and a W)");
  EXPECT_EQ(checkCSV("0F0,0I0\n1F0,1I0,1W0\n"),
            "stage 0 micro-batch 0 has no W");
}

TEST(CheckTest, RefusesAWBeforeItsI) {
  EXPECT_EQ(checkCSV("0F0,0W0,0I0\n1F0,1I0,1W0\n"),
            "rank 0 runs 0W0 before 0I0: a W needs its I first");
}

TEST(CheckTest, RefusesActionsOffTheirStage) {
  PipelineSchedule s = generate(ScheduleKind::OneFOneB, 2, 1, 2);
  PipelineSchedule wrongRank = s;
  wrongRank.programs[1].insert(wrongRank.programs[1].begin(),
                               {0, ActionKind::Forward, 0});
  EXPECT_EQ(errorText(checkSchedule(wrongRank)),
            "rank 1 runs 0F0, but stage 0 is on rank 0");
  PipelineSchedule farMicroBatch = s;
  farMicroBatch.programs[0].push_back({0, ActionKind::Forward, 7});
  EXPECT_EQ(errorText(checkSchedule(farMicroBatch)),
            "rank 0 runs 0F7, but the schedule has micro-batches [0, 2)");
  PipelineSchedule farStage = s;
  farStage.programs[0].push_back({5, ActionKind::Forward, 0});
  EXPECT_EQ(errorText(checkSchedule(farStage)),
            "rank 0 runs 5F0, but the schedule has stages [0, 2)");
  PipelineSchedule shape = s;
  shape.programs.pop_back();
  EXPECT_EQ(errorText(checkSchedule(shape)),
            "the schedule has 1 rank programs for pp = 2");
  PipelineSchedule placement = s;
  placement.stageToRank[1] = 9;
  EXPECT_EQ(errorText(checkSchedule(placement)),
            "stage 1 is placed on rank 9, outside [0, 2)");
  PipelineSchedule empty = s;
  empty.microBatches = 0;
  EXPECT_NE(errorText(checkSchedule(empty)).find("at least 1"),
            std::string::npos);
}

TEST(CheckTest, ExplainsADeadlock) {
  // Rank 0 waits at 0B0 for rank 1's backward, rank 1 at 1F1 for rank 0's
  // second forward, which rank 0 runs only after 0B0.
  EXPECT_EQ(checkCSV("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n"),
            "rank 0 blocks forever at 0B0: waits for 1B0 (rank 1), which rank "
            "1 reaches only after 1F1, which waits for 0F1 (rank 0), which "
            "rank 0 reaches only after 0B0 (a cycle)");
  // Two ranks (stages in a V) each waiting on the other's backward.
  EXPECT_EQ(checkCSV("0F0,0F1,3F0,3F1,0B0,3B0,3B1,0B1\n"
                     "1F0,1F1,2F0,2F1,2B1,2B0,1B0,1B1\n"),
            "rank 0 blocks forever at 0B0: waits for 1B0 (rank 1), which rank "
            "1 reaches only after 2B1, which waits for 3B1 (rank 0), which "
            "rank 0 reaches only after 0B0 (a cycle)");
  // Waiting for an action later on the same rank.
  EXPECT_EQ(checkCSV("0B0,0F0\n1F0,1B0\n"),
            "rank 0 blocks forever at 0B0: waits for 0F0 (rank 0), which "
            "rank 0 runs later");
}

TEST(CheckTest, ChecksExplicitCommunication) {
  PipelineSchedule s =
      withCommunication(generate(ScheduleKind::OneFOneB, 2, 1, 2));
  EXPECT_EQ(errorText(checkSchedule(s)), "");
  EXPECT_EQ(
      errorText(checkSchedule(without(s, {1, ActionKind::RecvForward, 1}))),
      "stage 1 micro-batch 1 has no RECV_F (stage 0 is on rank 0)");
  EXPECT_EQ(
      errorText(checkSchedule(without(s, {0, ActionKind::SendForward, 0}))),
      "stage 0 micro-batch 0 has no SEND_F (stage 1 is on rank 1)");
  // A RECV after the action that needs it.
  EXPECT_EQ(checkCSV("0F0,0SEND_F0,0RECV_B0,0B0\n"
                     "1F0,1RECV_F0,1B0,1SEND_B0\n"),
            "rank 0 blocks forever at 0RECV_B0: waits for 1SEND_B0 (rank 1), "
            "which rank 1 reaches only after 1F0, which waits for 1RECV_F0 "
            "(rank 1), which rank 1 runs later");
  // A RECV whose SEND never comes (rank 0 sends after waiting for rank 1).
  EXPECT_EQ(checkCSV("0F0,0RECV_B0,0SEND_F0,0B0\n"
                     "1RECV_F0,1F0,1B0,1SEND_B0\n"),
            "rank 0 blocks forever at 0RECV_B0: waits for 1SEND_B0 (rank 1), "
            "which rank 1 reaches only after 1RECV_F0, which waits for "
            "0SEND_F0 (rank 0), which rank 0 reaches only after 0RECV_B0 (a "
            "cycle)");
  // No transfer between two stages of one rank, none past the ends.
  EXPECT_EQ(checkCSV("0F0,0SEND_F0,1F0,1B0,0B0\n"),
            "rank 0 runs 0SEND_F0, but stages 0 and 1 are both on rank 0 (no "
            "transfer between them)");
  EXPECT_EQ(checkCSV("0RECV_F0,0F0,0B0\n"),
            "rank 0 runs 0RECV_F0, but there is no stage -1 to exchange with");
}

TEST(CheckTest, WithCommunicationOfEveryKindChecks) {
  for (ScheduleKind kind : kGeneratedKinds)
    for (int64_t pp : {2, 3, 4, 8})
      for (int64_t m : {1, 3, 8, 16}) {
        if (kind == ScheduleKind::Interleaved1F1B && m % pp != 0)
          continue;
        PipelineSchedule s = generate(kind, pp, defaultVirtualStages(kind), m);
        EXPECT_EQ(errorText(checkSchedule(withCommunication(s))), "")
            << stringifyScheduleKind(kind).str() << " pp=" << pp << " m=" << m;
      }
}

} // namespace
