//===- CSVTest.cpp - Schedules as torch CSV, explicit communication -------===//

#include "ScheduleTestUtils.h"

#include "ratrain/Model/Limits.h"

#include <random>

using namespace ratrain::schedule;
using namespace ratrain::schedule::test;

namespace {

/// The error of reading `text` ("(no error)" when it reads).
std::string readError(llvm::StringRef text) {
  llvm::Expected<PipelineSchedule> s = readCSV(text);
  if (s)
    return "(no error)";
  return llvm::toString(s.takeError());
}

void expectSameSchedule(const PipelineSchedule &read,
                        const PipelineSchedule &written) {
  EXPECT_EQ(read.kind, ScheduleKind::Custom);
  EXPECT_EQ(read.ranks, written.ranks);
  EXPECT_EQ(read.virtualStages, written.virtualStages);
  EXPECT_EQ(read.microBatches, written.microBatches);
  EXPECT_EQ(read.stageToRank, written.stageToRank);
  EXPECT_EQ(read.programs, written.programs);
}

TEST(CSVTest, ActionText) {
  EXPECT_EQ((Action{3, ActionKind::BackwardInput, 12}).str(), "3I12");
  EXPECT_EQ((Action{0, ActionKind::SendForward, 1}).str(), "0SEND_F1");
  for (llvm::StringRef text : {"0F0", "1B2", "3I12", "4W5", "0SEND_F1",
                               "1RECV_F1", "2SEND_B7", "0RECV_B3", "007F010"}) {
    llvm::Expected<Action> a = Action::parse(text);
    ASSERT_TRUE(static_cast<bool>(a)) << llvm::toString(a.takeError());
    EXPECT_EQ(Action::parse(a->str())->str(), a->str());
  }
  EXPECT_EQ(Action::parse("007F010")->str(), "7F10");
  for (llvm::StringRef text : {"", "F1", "0F", "0X1", "0F1x", "-1F0", "0 F1",
                               "0SEND1", "0f1", "1F-1", "0FF1"}) {
    llvm::Expected<Action> a = Action::parse(text);
    EXPECT_FALSE(static_cast<bool>(a)) << text.str();
    if (!a)
      EXPECT_NE(llvm::toString(a.takeError()).find("bad action"),
                std::string::npos);
  }
}

TEST(CSVTest, RoundTripsEveryKind) {
  for (ScheduleKind kind : kGeneratedKinds) {
    for (int64_t pp : {1, 2, 4, 8}) {
      for (int64_t m : {8, 16}) {
        SCOPED_TRACE(stringifyScheduleKind(kind).str() +
                     " pp=" + std::to_string(pp) + " m=" + std::to_string(m));
        PipelineSchedule s = generate(kind, pp, defaultVirtualStages(kind), m);
        for (bool communicate : {false, true}) {
          PipelineSchedule written = communicate ? withCommunication(s) : s;
          llvm::Expected<PipelineSchedule> read = readCSV(writeCSV(written));
          ASSERT_TRUE(static_cast<bool>(read))
              << llvm::toString(read.takeError());
          expectSameSchedule(*read, written);
          EXPECT_EQ(read->hasCommunication(), communicate && pp > 1);
          EXPECT_EQ(errorText(checkSchedule(*read)), "");
          EXPECT_EQ(writeCSV(*read), writeCSV(written));
        }
      }
    }
  }
}

TEST(CSVTest, ExplicitCommunicationKeepsTheTiming) {
  for (ScheduleKind kind : kGeneratedKinds) {
    PipelineSchedule s = generate(kind, 4, defaultVirtualStages(kind), 8);
    PipelineSchedule explicitSchedule = withCommunication(s);
    ActionCosts costs = uniformCosts(s.numStages(), 1.0, 0.25);
    EXPECT_DOUBLE_EQ(simulateSchedule(s, costs).makespan,
                     simulateSchedule(explicitSchedule, costs).makespan);
    // Idempotent: the transfers are placed anew.
    EXPECT_EQ(withCommunication(explicitSchedule).programs,
              explicitSchedule.programs);
  }
}

TEST(CSVTest, PlacesTransfersAroundTheirActions) {
  PipelineSchedule s =
      withCommunication(generate(ScheduleKind::OneFOneB, 2, 1, 2));
  EXPECT_EQ(writeCSV(s),
            "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
            "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n");
  // Two stages of one rank exchange nothing.
  PipelineSchedule one =
      withCommunication(generate(ScheduleKind::ZBV, 1, 2, 1));
  EXPECT_FALSE(one.hasCommunication());
}

TEST(CSVTest, ReadsAHandWrittenSchedule) {
  // ZB-H1-like on two ranks, two micro-batches: blanks, comments, quotes,
  // CRLF and empty cells are fine.
  const char *text = "# a hand-written schedule: rank 0 then rank 1\n"
                     "\n"
                     " 0F0, 0F1 ,0I0,0W0,,0I1,\"0W1\"\r\n"
                     "# rank 1\n"
                     "1F0,1I0,1F1,1I1,1W0,1W1\n";
  llvm::Expected<PipelineSchedule> s = readCSV(text);
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  EXPECT_EQ(s->kind, ScheduleKind::Custom);
  EXPECT_EQ(s->ranks, 2);
  EXPECT_EQ(s->virtualStages, 1);
  EXPECT_EQ(s->microBatches, 2);
  EXPECT_EQ(s->stageToRank, (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(s->splitsBackward());
  EXPECT_EQ(errorText(checkSchedule(*s)), "");
  ScheduleTiming t = simulateSchedule(*s, uniformCosts(2, 1.0));
  // Rank 0: F0 [0,1] F1 [1,2]; rank 1: F0 [1,2] I0 [2,3] F1 [3,4] I1 [4,5]
  // W0 W1 [5,7]; rank 0: I0 [3,4] W0 [4,5] I1 [5,6] W1 [6,7].
  EXPECT_DOUBLE_EQ(t.makespan, 7.0);
}

TEST(CSVTest, ReadsVirtualStagesFromTheRows) {
  // Stages 0 and 3 on row 0, 1 and 2 on row 1: a V of two ranks.
  llvm::Expected<PipelineSchedule> s =
      readCSV("0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n");
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  EXPECT_EQ(s->virtualStages, 2);
  EXPECT_EQ(s->stageToRank, (std::vector<int64_t>{0, 1, 1, 0}));
  // Rank 0 blocks at 3F0 until rank 1 ran 2F0, which is fine.
  EXPECT_EQ(errorText(checkSchedule(*s)), "");
}

TEST(CSVTest, RefusesBadFiles) {
  EXPECT_NE(readError("").find("no rows"), std::string::npos);
  EXPECT_NE(readError("# only a comment\n\n  \n").find("no rows"),
            std::string::npos);
  std::string bad = readError("0F0,0B0\n1F0,1X0\n");
  EXPECT_NE(bad.find("row 1 (line 2), column 2"), std::string::npos) << bad;
  EXPECT_NE(bad.find("'1X0'"), std::string::npos) << bad;
  std::string twice = readError("0F0,1F0\n1B0\n");
  EXPECT_NE(twice.find("stage 1"), std::string::npos) << twice;
  EXPECT_NE(twice.find("belongs to one rank"), std::string::npos) << twice;
  std::string uneven = readError("0F0,1F0,2F0\n3F0\n");
  EXPECT_NE(uneven.find("row 0 runs 3 stages"), std::string::npos) << uneven;
  std::string multiple = readError("0F0,1F0,2F0\n3F0,4F0\n");
  EXPECT_NE(multiple.find("5 stages over 2 rows"), std::string::npos)
      << multiple;
  std::string gap = readError("0F0\n2F0\n");
  EXPECT_NE(gap.find("stage 1 appears in no row"), std::string::npos) << gap;
  std::string bigStage = readError("999999999F0\n");
  EXPECT_NE(bigStage.find(std::to_string(ratrain::limits::kMaxModelLayers - 1)),
            std::string::npos)
      << bigStage;
  std::string bigMicroBatch = readError("0F99999999999999999999999\n");
  EXPECT_NE(
      bigMicroBatch.find(std::to_string(ratrain::limits::kMaxMicroBatches - 1)),
      std::string::npos)
      << bigMicroBatch;
  // Stages x micro-batches above the limit.
  std::string wide;
  for (int c = 0; c < 65; ++c)
    wide += std::to_string(c) + "F" + (c == 64 ? "16383" : "0") + ",";
  std::string big = readError(wide);
  EXPECT_NE(big.find(std::to_string(ratrain::limits::kMaxScheduleSize)),
            std::string::npos)
      << big;
  EXPECT_NE(readError(",,,\n0F0,1F0\n").find("row 0 runs 0 stages"),
            std::string::npos);
}

TEST(CSVTest, NeverCrashesOnMangledInput) {
  // Mutations of valid CSVs: whatever reads must check, simulate and count
  // without crashing (checkSchedule may refuse it).
  std::mt19937 rng(12);
  const std::string alphabet = "0123456789FIWB_SENDRCV,\n# \"x-";
  std::vector<std::string> seeds;
  for (ScheduleKind kind : kGeneratedKinds)
    for (bool communicate : {false, true}) {
      PipelineSchedule s = generate(kind, 3, defaultVirtualStages(kind), 6);
      seeds.push_back(writeCSV(communicate ? withCommunication(s) : s));
    }
  int64_t read = 0, accepted = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::string text = seeds[iteration % seeds.size()];
    int edits = 1 + rng() % 4;
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
      case 0:
        text[at] = alphabet[rng() % alphabet.size()];
        break;
      case 1:
        text.erase(at, 1 + rng() % 8);
        break;
      default:
        text.insert(at, 1, alphabet[rng() % alphabet.size()]);
        break;
      }
    }
    llvm::Expected<PipelineSchedule> s = readCSV(text);
    if (!s) {
      llvm::consumeError(s.takeError());
      continue;
    }
    ++read;
    llvm::Error err = checkSchedule(*s);
    if (!err)
      ++accepted;
    llvm::consumeError(std::move(err));
    ScheduleTiming t = simulateSchedule(*s, uniformCosts(s->numStages(), 1.0));
    (void)t;
    ScheduleMemory mem = scheduleMemory(*s);
    (void)mem;
    (void)withCommunication(*s);
  }
  EXPECT_GT(read, 100);
  EXPECT_GT(accepted, 0);
}

} // namespace
