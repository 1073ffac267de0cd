//===- Token.cpp - Completion tokens of asynchronous operations -----------===//

#include "ratrain/runtime/Token.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Trace.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstring>

using namespace ratrain::rt;

TokenPool::TokenPool(uint32_t capacity) : slots(capacity) {
  freeList.reserve(capacity);
  for (uint32_t i = capacity; i > 0; --i)
    freeList.push_back(i - 1);
}

Token TokenPool::acquire(const char *what, double timeoutSeconds) {
  std::unique_lock<std::mutex> lock(mutex);
  if (freeList.empty()) {
    lock.unlock();
    fatal(llvm::formatv("{0} asynchronous operations are outstanding, the "
                        "most the token pool holds; the program issues "
                        "operations without waiting for their tokens (while "
                        "issuing: {1})",
                        slots.size(), what));
  }
  uint32_t index = freeList.back();
  freeList.pop_back();
  lock.unlock();
  Slot &slot = slots[index];
  std::strncpy(slot.what, what, kWhatBytes - 1);
  slot.what[kWhatBytes - 1] = '\0';
  slot.issued = Clock::now();
  slot.timeout = timeoutSeconds;
  slot.state.store(Pending, std::memory_order_release);
  return Token{index, slot.generation.load(std::memory_order_relaxed)};
}

void TokenPool::complete(uint32_t index) {
  slots[index].completedAt = Clock::now();
  slots[index].state.store(Done, std::memory_order_release);
  // Taking the lock orders the store before a waiter's check-then-sleep.
  std::lock_guard<std::mutex> lock(mutex);
  completed.notify_all();
}

bool TokenPool::test(Token token) {
  if (!token.valid())
    return true;
  if (token.index >= slots.size())
    fatal(llvm::formatv("invalid token index {0}", token.index));
  Slot &slot = slots[token.index];
  if (slot.generation.load(std::memory_order_relaxed) != token.generation)
    return true; // Completed and released earlier.
  if (slot.state.load(std::memory_order_acquire) != Done)
    return false;
  release(token.index);
  return true;
}

void TokenPool::release(uint32_t index) {
  Slot &slot = slots[index];
  if (tracer && tracer->recording())
    tracer->async(slot.what, slot.issued, slot.completedAt);
  slot.generation.fetch_add(1, std::memory_order_relaxed);
  slot.state.store(Free, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex);
  freeList.push_back(index);
}

void TokenPool::sleepUntilDone(Token token, Clock::time_point deadline) {
  if (!token.valid())
    return;
  Slot &slot = slots[token.index];
  std::unique_lock<std::mutex> lock(mutex);
  completed.wait_until(lock, deadline, [&] {
    return slot.generation.load(std::memory_order_relaxed) !=
               token.generation ||
           slot.state.load(std::memory_order_acquire) == Done;
  });
}

const char *TokenPool::pendingWhat(Token token) const {
  if (!token.valid() || token.index >= slots.size())
    return nullptr;
  const Slot &slot = slots[token.index];
  if (slot.generation.load(std::memory_order_relaxed) != token.generation ||
      slot.state.load(std::memory_order_acquire) == Done)
    return nullptr;
  return slot.what;
}

uint32_t TokenPool::outstanding() const {
  std::lock_guard<std::mutex> lock(mutex);
  return uint32_t(slots.size() - freeList.size());
}
