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
}
