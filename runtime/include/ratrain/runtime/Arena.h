//===- Arena.h - Fixed-capacity memory arenas -------------------*- C++ -*-===//
//
// One contiguous allocation per memory space of exactly the capacity the
// planner assigned (DDR per rank; GSM and AM as modelled on MT-3000). Every
// tensor of the training program is a Buffer at the offset the compiler
// assigned: there are no other allocations on the training path, and an
// access outside the capacity is an error that names offset, size and
// capacity.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_ARENA_H
#define RATRAIN_RUNTIME_ARENA_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ratrain::rt {

/// The memory levels of an MT-3000 cluster. On a host they are all ordinary
/// memory, each in its own arena, so programs keep the shape they have on the
/// device (DMA between levels, fixed offsets).
enum class MemorySpace { DDR, GSM, AM };

/// "ddr", "gsm", "am".
llvm::StringRef stringifyMemorySpace(MemorySpace space);

/// A view of `bytes` bytes at `offset` in an arena. Cheap to copy; does not
/// own memory.
struct Buffer {
  std::byte *data = nullptr;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  MemorySpace space = MemorySpace::DDR;

  /// The data as an array of T (the compiler keeps offsets aligned).
  template <typename T> T *as() const { return reinterpret_cast<T *>(data); }
  /// Number of whole T elements in the buffer.
  template <typename T> uint64_t count() const { return bytes / sizeof(T); }
  /// A sub-view [offset, offset + bytes) relative to this buffer; out of
  /// bounds is fatal.
  Buffer slice(uint64_t relativeOffset, uint64_t sliceBytes) const;
  /// Whether the two buffers share a byte.
  bool overlaps(const Buffer &other) const {
    return data < other.data + other.bytes && other.data < data + bytes;
  }
};

/// One fixed-capacity arena.
class Arena {
public:
  /// Maps `capacity` bytes (zero-filled, aligned to `alignment`, a power of
  /// two; 2 MiB arenas also ask for transparent huge pages). Fails with a
  /// message naming the space and the capacity when the memory is not there.
  static llvm::Expected<std::unique_ptr<Arena>>
  create(MemorySpace space, uint64_t capacity, uint64_t alignment = 64);
  ~Arena();
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  /// The view [offset, offset + bytes), or an error naming offset, size and
  /// capacity when it does not fit. Records the high-water mark.
  llvm::Expected<Buffer> tryBuffer(uint64_t offset, uint64_t bytes);
  /// Same as tryBuffer, but a capacity violation is fatal.
  Buffer buffer(uint64_t offset, uint64_t bytes);
  /// Typed convenience: `count` elements of T at `offset`.
  template <typename T> T *get(uint64_t offset, uint64_t count) {
    return buffer(offset, count * sizeof(T)).template as<T>();
  }

  MemorySpace space() const { return memorySpace; }
  uint64_t capacity() const { return capacityBytes; }
  uint64_t alignment() const { return alignmentBytes; }
  std::byte *base() const { return baseAddress; }
  /// Highest end offset (offset + bytes) of any buffer handed out: the bytes
  /// of the arena the program touched.
  uint64_t peakBytes() const { return peak.load(std::memory_order_relaxed); }
  void resetPeak() { peak.store(0, std::memory_order_relaxed); }
  /// True when [pointer, pointer + bytes) lies inside the arena.
  bool contains(const void *pointer, uint64_t bytes) const;

private:
  Arena() = default;
  MemorySpace memorySpace = MemorySpace::DDR;
  uint64_t capacityBytes = 0;
  uint64_t alignmentBytes = 0;
  std::byte *baseAddress = nullptr;
  void *mapping = nullptr;
  uint64_t mappingBytes = 0;
  std::atomic<uint64_t> peak{0};
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_ARENA_H
