//===- EmittedProgramStaging.h - fp32 staging of kernel operands -*- C++
//-*-===//
//
// Where a host kernel has no native 16-bit variant (or the operands' types
// are mixed), the helpers of EmittedProgram.h read 16-bit operands through
// converted fp32 copies and write 16-bit results back from fp32 ones. The
// copies live in grow-only staging slots reused from call to call, so a
// training step allocates nothing once the first one has run (no allocation,
// zeroing or page faults on the training path).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_EMITTEDPROGRAMSTAGING_H
#define RATRAIN_RUNTIME_EMITTEDPROGRAMSTAGING_H

#include "ratrain/kernels/Kernels.h"
#include "ratrain/runtime/EmittedProgram.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <vector>

namespace ratrain::rt::emit {

/// Grow-only fp32 staging buffers: the operands live in a kernel call at
/// once take slots 0, 1, ... in LIFO order (In and Out are scoped objects),
/// and a slot is reallocated only when an operand is larger than any before
/// it.
class Staging {
public:
  /// The next slot, with room for at least `n` floats (uninitialized).
  float *acquire(uint64_t n);
  /// Gives back the most recently acquired slot.
  void release() { --depth; }
  /// Slots in use.
  size_t inUse() const { return depth; }
  /// Capacity of slot `i` in floats (0 when it was never acquired).
  uint64_t capacity(size_t i) const {
    return i < slots.size() ? slots[i].capacity : 0;
  }

private:
  struct Slot {
    std::unique_ptr<float[]> data;
    uint64_t capacity = 0;
  };
  std::vector<Slot> slots;
  size_t depth = 0;
};
/// This thread's staging slots.
Staging &staging();

/// A staging slot for one scope.
class Scratch {
public:
  explicit Scratch(uint64_t n) : p(staging().acquire(n)) {}
  ~Scratch() { staging().release(); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  float *data() const { return p; }

private:
  float *p;
};

bool isHalf(ElemType t);
kernels::Half half(ElemType t);
/// True when the byte ranges of `a` and `b` overlap.
bool overlaps(const Tensor &a, const Tensor &b);
/// Checks a kernel's status (fatal, naming `kernel`), then drives outstanding
/// communication once: with RATRAIN_PROGRESS=inline requests only progress
/// inside runtime calls (a no-op with the progress thread).
void check(int status, const char *kernel);

/// The 16-bit type all of `tensors` have, if they share one: a helper then
/// runs the kernel's native 16-bit variant and stages nothing.
std::optional<kernels::Half>
commonHalf(std::initializer_list<const Tensor *> tensors);

/// Read access to a 16-bit operand as its own bits: the buffer itself, or a
/// copy when it overlaps one of the kernel's `outputs` (the native kernels,
/// unlike the staged path, would read what they already overwrote).
struct HalfIn {
  const uint16_t *p = nullptr;
  std::optional<Scratch> copied;
  HalfIn(const Tensor &t, std::initializer_list<const Tensor *> outputs = {});
};

/// Read access as fp32: the buffer itself, or a converted copy (also a copy
/// when `copy` is set, for kernels that must not alias an output).
struct In {
  const float *p = nullptr;
  std::optional<Scratch> staged;
  explicit In(const Tensor &t, bool copy = false);
};
/// Write access as fp32; a 16-bit buffer is written back when done.
struct Out {
  Tensor t;
  float *p = nullptr;
  std::optional<Scratch> staged;
  /// `load`: the staged copy starts as the buffer's values (accumulation).
  Out(const Tensor &tensor, bool load);
  /// Converts back before `staged` releases its slot.
  ~Out();
  Out(const Out &) = delete;
  Out &operator=(const Out &) = delete;
};

} // namespace ratrain::rt::emit

#endif // RATRAIN_RUNTIME_EMITTEDPROGRAMSTAGING_H
