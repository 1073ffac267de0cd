//===- Token.h - Completion tokens of asynchronous operations ---*- C++ -*-===//
//
// Every asynchronous runtime operation (collective, point-to-point transfer,
// DMA) returns a Token, the runtime image of an `!mt3k.token`. Tokens live in
// a fixed pool allocated at start-up, so issuing an operation allocates
// nothing. A token must be waited (or tested until it reports completion) by
// the thread that issued it; that releases its slot. Too many outstanding
// tokens is a fatal error that points at a missing wait.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_TOKEN_H
#define RATRAIN_RUNTIME_TOKEN_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace ratrain::rt {

class Tracer;

/// Handle of an asynchronous operation. A default-constructed token is
/// already complete (useful for "no dependency").
struct Token {
  uint32_t index = UINT32_MAX;
  uint32_t generation = 0;
  bool valid() const { return index != UINT32_MAX; }
};

/// The fixed pool of token slots shared by the communication and DMA engines.
class TokenPool {
public:
  using Clock = std::chrono::steady_clock;
  /// Maximum length of an operation description, including the NUL.
  static constexpr unsigned kWhatBytes = 192;

  explicit TokenPool(uint32_t capacity);

  /// Takes a free slot for an operation described by `what` (copied,
  /// truncated to kWhatBytes). Fatal when `capacity` operations are
  /// outstanding.
  /// `timeoutSeconds` overrides the engine's watchdog limit for this
  /// operation (negative: the engine's default).
  Token acquire(const char *what, double timeoutSeconds = -1);
  /// Marks the operation of slot `index` complete and wakes waiters. Called by
  /// engines, possibly from helper threads.
  void complete(uint32_t index);

  /// True when the operation finished; releases the slot the first time it
  /// reports completion. Invalid and already released tokens are complete.
  bool test(Token token);
  /// Blocks until the operation of `token` completes or `deadline` passes
  /// (does not release the slot; call test()).
  void sleepUntilDone(Token token, Clock::time_point deadline);

  /// Description and issue time of a pending token (for timeout messages).
  const char *what(Token token) const { return slots[token.index].what; }
  Clock::time_point issued(Token token) const {
    return slots[token.index].issued;
  }
  /// Description and issue time by slot index (engines).
  const char *what(uint32_t index) const { return slots[index].what; }
  Clock::time_point issued(uint32_t index) const { return slots[index].issued; }
  /// The operation's own watchdog limit, or `fallback` when it has none.
  double timeout(uint32_t index, double fallback) const {
    return slots[index].timeout < 0 ? fallback : slots[index].timeout;
  }

  uint32_t capacity() const { return uint32_t(slots.size()); }
  /// Number of acquired, not yet released slots.
  uint32_t outstanding() const;

  /// The description of `token`'s operation while it has not completed;
  /// null once it has (or for an invalid token).
  const char *pendingWhat(Token token) const;
  /// The per-op trace: told of each operation (issue and completion time)
  /// when the pool releases it.
  void setTracer(Tracer *t) { tracer = t; }

private:
  enum State : uint8_t { Free, Pending, Done };
  struct Slot {
    std::atomic<uint32_t> generation{0};
    std::atomic<uint8_t> state{Free};
    Clock::time_point issued;
    Clock::time_point completedAt;
    double timeout = -1;
    char what[kWhatBytes] = {};
  };
  void release(uint32_t index);

  std::vector<Slot> slots;
  std::vector<uint32_t> freeList;
  Tracer *tracer = nullptr;
  mutable std::mutex mutex;
  std::condition_variable completed;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_TOKEN_H
