//===- SessionOptionsTest.cpp - Training-program flags --------------------===//

#include "ratrain/runtime/Session.h"

#include "gtest/gtest.h"

using namespace ratrain::rt;

namespace {
llvm::Expected<SessionOptions> parse(std::vector<const char *> args) {
  args.insert(args.begin(), "prog");
  SessionOptions defaults;
  defaults.seqLen = 64;
  defaults.steps = 5;
  return SessionOptions::parse(int(args.size()),
                               const_cast<char **>(args.data()), defaults);
}
std::string error(std::vector<const char *> args) {
  auto result = parse(std::move(args));
  return result ? std::string() : llvm::toString(result.takeError());
}
} // namespace

TEST(SessionOptions, ParsesFlagsOverDefaults) {
  auto options =
      parse({"--data", "c.tok", "--steps=20", "--ckpt", "out", "--save-every",
             "5", "--resume", "--seed", "7", "--log", "steps.jsonl"});
  ASSERT_TRUE(bool(options)) << llvm::toString(options.takeError());
  EXPECT_EQ(options->dataPath, "c.tok");
  EXPECT_EQ(options->steps, 20u);
  EXPECT_EQ(options->checkpointDir, "out");
  EXPECT_EQ(options->saveEvery, 5u);
  EXPECT_TRUE(options->resume);
  EXPECT_EQ(options->seed, 7u);
  EXPECT_EQ(options->logPath, "steps.jsonl");
  EXPECT_EQ(options->seqLen, 64); // From the program, not a flag.
  auto defaults = parse({});
  ASSERT_TRUE(bool(defaults));
  EXPECT_EQ(defaults->steps, 5u);
  EXPECT_EQ(defaults->logPath, "-");
}

TEST(SessionOptions, ErrorsNameTheFlag) {
  EXPECT_EQ(error({"--steps", "ten"}),
            "--steps: 'ten' is not a non-negative integer");
  EXPECT_EQ(error({"--bogus", "1"}), "unknown flag '--bogus'");
  EXPECT_EQ(error({"--data"}), "--data needs a value");
  EXPECT_EQ(error({"--resume"}), "--resume needs --ckpt DIR");
  EXPECT_EQ(error({"stray"}), "unexpected argument 'stray'");
  // Validation needs held-out data, and that data needs an interval.
  EXPECT_EQ(error({"--eval-every", "5"}),
            "--eval-every needs held-out data: --eval-data FILE or "
            "--eval-split FRACTION");
  EXPECT_EQ(error({"--eval-split", "0.1"}),
            "--eval-data and --eval-split need --eval-every N");
  EXPECT_EQ(error({"--eval-every", "5", "--eval-split", "1"}),
            "--eval-split: 1 is not below 1 (a fraction of the training "
            "data)");
  EXPECT_EQ(error({"--eval-every", "5", "--eval-split", "0.1", "--eval-data",
                   "x.tok"}),
            "--eval-data and --eval-split exclude each other");
  EXPECT_EQ(
      error({"--eval-every", "5", "--eval-split", "0.1", "--eval-steps", "0"}),
      "--eval-steps: 0 validation steps per evaluation");
}

TEST(SessionOptions, TraceStepsDefaultToTwoToFourWithinTheRun) {
  auto options = parse({"--trace", "t.json"});
  ASSERT_TRUE(bool(options)) << llvm::toString(options.takeError());
  EXPECT_EQ(options->tracePath, "t.json");
  EXPECT_EQ(options->traceSteps.first, 2u);
  EXPECT_EQ(options->traceSteps.last, 4u);
  auto short_ = parse({"--trace", "t.json", "--steps", "1"});
  ASSERT_TRUE(bool(short_));
  EXPECT_EQ(short_->traceSteps.first, 1u);
  EXPECT_EQ(short_->traceSteps.last, 1u);
  auto chosen = parse({"--trace", "t.json", "--trace-steps=3-5"});
  ASSERT_TRUE(bool(chosen));
  EXPECT_EQ(chosen->traceSteps.first, 3u);
  EXPECT_EQ(chosen->traceSteps.last, 5u);
  EXPECT_FALSE(parse({})->traceSteps.contains(2)); // Off without --trace.
}

TEST(SessionOptions, TraceErrorsNameTheFlag) {
  EXPECT_EQ(error({"--trace-steps", "3"}), "--trace-steps needs --trace FILE");
  EXPECT_EQ(error({"--trace", "t.json", "--trace-steps", "9"}),
            "--trace-steps 9-9: the run has only 5 steps (--steps)");
  EXPECT_EQ(error({"--trace", "t.json", "--trace-steps", "4-2"}),
            "--trace-steps: '4-2' is not a step N or a range FIRST-LAST of "
            "steps (1-based, FIRST <= LAST)");
}

TEST(SessionOptions, HelpNamesOnlyFlagsTheParserTakes) {
  std::vector<const char *> help = {"prog", "--data", "x", "--help"};
  EXPECT_TRUE(SessionOptions::wantsHelp(int(help.size()),
                                        const_cast<char **>(help.data())));
  std::vector<const char *> shortHelp = {"prog", "-h"};
  EXPECT_TRUE(SessionOptions::wantsHelp(int(shortHelp.size()),
                                        const_cast<char **>(shortHelp.data())));
  std::vector<const char *> none = {"prog", "--steps", "3"};
  EXPECT_FALSE(SessionOptions::wantsHelp(int(none.size()),
                                         const_cast<char **>(none.data())));

  // Every flag the help text names is one the parser knows (it may then
  // refuse the value "1" or the combination, but not the flag).
  llvm::StringRef text = SessionOptions::flagsHelp();
  int named = 0;
  for (size_t at = text.find("--"); at != llvm::StringRef::npos;
       at = text.find("--", at + 2)) {
    std::string flag =
        text.substr(at)
            .take_while([](char c) { return c == '-' || std::isalpha(c); })
            .str();
    if (flag == "--help")
      continue;
    ++named;
    std::string message = error({flag.c_str(), "1"});
    EXPECT_EQ(message.find("unknown flag"), std::string::npos)
        << flag << ": " << message;
  }
  EXPECT_GE(named, 19); // every flag of parse(), --resume included
}
