//===- CrashReportTest.cpp - Crash dumps point at RATrain -----------------===//

#include "ratrain/Support/CrashReport.h"

#include "gtest/gtest.h"

#include <csignal>

namespace {
/// What a tool's main does first, then a crash.
[[noreturn]] void crashInATool() {
  int argc = 1;
  char name[] = "ratrain-tool";
  char *args[] = {name, nullptr};
  char **argv = args;
  ratrain::InitTool init(argc, argv);
  std::raise(SIGSEGV);
  std::abort();
}
} // namespace

TEST(CrashReport, TheCrashHandlerPointsAtRATrain) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(crashInATool(), "PLEASE report this crash to the RATrain "
                               "project \\(see \"Reporting bugs\" in "
                               "docs/developing.md\\)");
}

TEST(CrashReport, TheMessageDoesNotMentionLLVM) {
  EXPECT_EQ(std::string(ratrain::kBugReportMessage).find("llvm"),
            std::string::npos);
}
