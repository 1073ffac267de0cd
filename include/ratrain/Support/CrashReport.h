//===- CrashReport.h - Crash dumps that point at RATrain --------*- C++ -*-===//
//
// LLVM's crash handler (a stack dump on SIGSEGV, SIGABRT, ...) opens with a
// request to report the bug to LLVM. Every RATrain tool replaces it with
// kBugReportMessage: tools with their own main construct an InitTool first
// thing; ratrain-opt and ratrain-translate, whose MLIR mains set up the
// handler themselves, call setBugReportMessage().
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_SUPPORT_CRASHREPORT_H
#define RATRAIN_SUPPORT_CRASHREPORT_H

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/PrettyStackTrace.h"

namespace ratrain {

/// What a crash dump asks of the user (docs/developing.md, "Reporting
/// bugs").
inline constexpr const char *kBugReportMessage =
    "PLEASE report this crash to the RATrain project (see \"Reporting bugs\" "
    "in docs/developing.md) with the stack dump below, the command line and "
    "the input files that caused it.\n";

/// Points LLVM's crash handler at the RATrain project.
inline void setBugReportMessage() { llvm::setBugReportMsg(kBugReportMessage); }

/// llvm::InitLLVM (stack dumps on crashes, argument handling, llvm_shutdown
/// at exit) with the RATrain bug-report message.
class InitTool {
public:
  InitTool(int &argc, char **&argv) : init(argc, argv) {
    setBugReportMessage();
  }

private:
  llvm::InitLLVM init;
};

} // namespace ratrain

#endif // RATRAIN_SUPPORT_CRASHREPORT_H
