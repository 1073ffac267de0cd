//===- Error.h - Runtime error reporting ------------------------*- C++ -*-===//
//
// Two kinds of failure in the runtime:
//  - recoverable input errors (files, checkpoints, data, configuration) are
//    returned as llvm::Error / llvm::Expected with a message that names the
//    file, tensor or field;
//  - violations on the training path (an arena access outside the planned
//    capacity, an MPI failure, a communication timeout) are fatal: the rank
//    prints `error: rank R (stage S, dp D): <what>` and the whole job is
//    aborted with a non-zero exit code (MPI_Abort once MPI is up).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_ERROR_H
#define RATRAIN_RUNTIME_ERROR_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <string>

namespace ratrain::rt {

/// Exit code of every fatal runtime error.
constexpr int kFatalExitCode = 1;

/// Creates an llvm::Error carrying `message`.
llvm::Error makeError(const llvm::Twine &message);

/// Prints `error: <prefix>: <message>` to stderr and terminates the job with
/// kFatalExitCode. Without a registered abort hook the process exits; with one
/// (the MPI runtime registers MPI_Abort) the hook is called.
[[noreturn]] void fatal(const llvm::Twine &message);

/// Reports `error` through fatal() when it is set; otherwise consumes it.
void exitOnError(llvm::Error error);

/// Unwraps `value`, calling fatal() with its message on error.
template <typename T> T exitOnError(llvm::Expected<T> value) {
  if (!value)
    exitOnError(value.takeError());
  return std::move(*value);
}

/// Sets the prefix that fatal() prints before every message, e.g.
/// "rank 3 (stage 1, dp 1)". Empty by default.
void setFatalPrefix(const std::string &prefix);

/// Called by fatal() after printing; must not return. Used by the MPI runtime
/// to call MPI_Abort so that every rank of the job goes down.
using AbortHook = void (*)(int exitCode);
void setAbortHook(AbortHook hook);

/// Work of this process that fatal() does before the job goes down:
/// removing its scratch files (the offload store's storage tier), which no
/// later run reads. Every registered cleanup runs once, on the first fatal
/// error, in the order registered, after the message is printed and before
/// the abort hook; it may run on any thread while others still work, and
/// must not call fatal(). Returns the id removeFatalCleanup takes.
uint64_t addFatalCleanup(std::function<void()> cleanup);
/// Unregisters a cleanup (its owner is going away).
void removeFatalCleanup(uint64_t id);

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_ERROR_H
