//===- Error.cpp - Runtime error reporting --------------------------------===//

#include "ratrain/runtime/Error.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

#include <unistd.h>

using namespace ratrain::rt;

namespace {
std::mutex prefixMutex;
std::string fatalPrefix;
std::atomic<AbortHook> abortHook{nullptr};
std::atomic<bool> inFatal{false};
std::mutex cleanupMutex;
uint64_t nextCleanupId = 1;
std::vector<std::pair<uint64_t, std::function<void()>>> cleanups;
} // namespace

uint64_t ratrain::rt::addFatalCleanup(std::function<void()> cleanup) {
  std::lock_guard<std::mutex> lock(cleanupMutex);
  cleanups.emplace_back(nextCleanupId, std::move(cleanup));
  return nextCleanupId++;
}

void ratrain::rt::removeFatalCleanup(uint64_t id) {
  std::lock_guard<std::mutex> lock(cleanupMutex);
  cleanups.erase(std::remove_if(cleanups.begin(), cleanups.end(),
                                [id](const auto &c) { return c.first == id; }),
                 cleanups.end());
}

llvm::Error ratrain::rt::makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

void ratrain::rt::setFatalPrefix(const std::string &prefix) {
  std::lock_guard<std::mutex> lock(prefixMutex);
  fatalPrefix = prefix;
}

void ratrain::rt::setAbortHook(AbortHook hook) { abortHook.store(hook); }

void ratrain::rt::fatal(const llvm::Twine &message) {
  std::string text = message.str();
  // A second fatal error (e.g. from the progress thread while the main thread
  // is already aborting) only prints; the first one terminates the job.
  bool first = !inFatal.exchange(true);
  {
    std::lock_guard<std::mutex> lock(prefixMutex);
    if (fatalPrefix.empty())
      std::fprintf(stderr, "error: %s\n", text.c_str());
    else
      std::fprintf(stderr, "error: %s: %s\n", fatalPrefix.c_str(),
                   text.c_str());
  }
  std::fflush(stdout);
  std::fflush(stderr);
  if (!first) {
    // Let the first fatal error finish taking the job down.
    for (;;)
      pause();
  }
  {
    std::lock_guard<std::mutex> lock(cleanupMutex);
    for (auto &[id, cleanup] : cleanups)
      cleanup();
  }
  if (AbortHook hook = abortHook.load())
    hook(kFatalExitCode);
  std::_Exit(kFatalExitCode);
}

void ratrain::rt::exitOnError(llvm::Error error) {
  if (!error)
    return;
  fatal(llvm::toString(std::move(error)));
}
