//===- RuntimeOptionsTest.cpp - Runtime options from the environment ------===//

#include "ratrain/runtime/Runtime.h"

#include "gtest/gtest.h"

#include <cstdlib>

using namespace ratrain::rt;

TEST(RuntimeOptions, ProgressThreadNiceFollowsRanksPerCpu) {
  // A CPU for every rank: the progress thread yields to its rank's kernels.
  EXPECT_EQ(automaticProgressNice(1, 2), 19);
  EXPECT_EQ(automaticProgressNice(2, 2), 19);
  EXPECT_EQ(automaticProgressNice(16, 64), 19);
  // Ranks share CPUs: a waiting rank's messages must still move while the
  // other ranks compute on its CPU.
  EXPECT_EQ(automaticProgressNice(4, 2), 0);
  EXPECT_EQ(automaticProgressNice(3, 2), 0);
}

TEST(RuntimeOptions, ProgressNiceFromTheEnvironment) {
  RuntimeOptions options;
  EXPECT_EQ(options.progressNice, -1); // automatic
  setenv("RATRAIN_PROGRESS_NICE", "7", 1);
  options.applyEnvironment();
  EXPECT_EQ(options.progressNice, 7);
  setenv("RATRAIN_PROGRESS_NICE", "", 1); // empty: unchanged
  options.applyEnvironment();
  EXPECT_EQ(options.progressNice, 7);
  unsetenv("RATRAIN_PROGRESS_NICE");
}

TEST(RuntimeOptions, ProgressNiceOutsideZeroToNineteenIsAnError) {
  for (const char *bad : {"20", "2.5"}) {
    EXPECT_EXIT(
        {
          setenv("RATRAIN_PROGRESS_NICE", bad, 1);
          RuntimeOptions().applyEnvironment();
        },
        testing::ExitedWithCode(1),
        "RATRAIN_PROGRESS_NICE='.*' must be a whole number from 0 to 19");
  }
  EXPECT_EXIT(
      {
        setenv("RATRAIN_PROGRESS_NICE", "-1", 1);
        RuntimeOptions().applyEnvironment();
      },
      testing::ExitedWithCode(1),
      "RATRAIN_PROGRESS_NICE='-1' is not a non-negative number");
}

TEST(RuntimeOptions, ProgressAssistFromTheEnvironment) {
  RuntimeOptions options;
  EXPECT_EQ(options.progressAssist, -1); // automatic
  for (auto [text, value] : {std::pair<const char *, int>{"0", 0},
                             {"1", 1},
                             {"", 1}, // empty: unchanged
                             {"auto", -1}}) {
    setenv("RATRAIN_PROGRESS_ASSIST", text, 1);
    options.applyEnvironment();
    EXPECT_EQ(options.progressAssist, value) << "'" << text << "'";
  }
  unsetenv("RATRAIN_PROGRESS_ASSIST");
  EXPECT_EXIT(
      {
        setenv("RATRAIN_PROGRESS_ASSIST", "yes", 1);
        RuntimeOptions().applyEnvironment();
      },
      testing::ExitedWithCode(1),
      "RATRAIN_PROGRESS_ASSIST='yes' must be 'auto', '0' or '1'");
}
