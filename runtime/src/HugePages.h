//===- HugePages.h - Runtime scratch on transparent huge pages --*- C++ -*-===//
//
// Private to the runtime. The collectives' scratch (a reduce-scatter's
// received block and staging, the quantized collectives' payloads and fp32
// sums) and the offload store's host copies are megabytes that a step
// streams through once per use. On 4 KiB pages each page costs a TLB miss,
// a two-dimensional page walk under a hypervisor: on the 2-core host the
// 85M bf16 ZeRO-1 step's copies and reductions ran 2-5 times slower than
// alone (docs/benchmarks.md). From 2 MiB on these blocks are 2 MiB-aligned
// anonymous mappings with MADV_HUGEPAGE, as the arenas (Arena.cpp); smaller
// ones come from operator new.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_SRC_HUGEPAGES_H
#define RATRAIN_RUNTIME_SRC_HUGEPAGES_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace ratrain::rt {

/// Blocks from this size on lie on huge pages.
inline constexpr size_t kHugePageBytes = size_t(2) << 20;

/// `bytes` of uninitialized memory (std::bad_alloc when none is left), and
/// its release (`bytes` as allocated).
void *allocateHugePageBytes(size_t bytes);
void deallocateHugePageBytes(void *p, size_t bytes);

/// std::allocator's interface on allocateHugePageBytes.
template <typename T> struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U> HugePageAllocator(const HugePageAllocator<U> &) {}
  T *allocate(size_t n) {
    return static_cast<T *>(allocateHugePageBytes(n * sizeof(T)));
  }
  void deallocate(T *p, size_t n) { deallocateHugePageBytes(p, n * sizeof(T)); }
  template <typename U> bool operator==(const HugePageAllocator<U> &) const {
    return true;
  }
  template <typename U> bool operator!=(const HugePageAllocator<U> &) const {
    return false;
  }
};

/// A vector whose storage of 2 MiB or more lies on huge pages.
template <typename T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

/// An owned, zero-filled block of allocateHugePageBytes (the offload
/// store's host copies, which every step writes and reads whole).
class HugePageBlock {
public:
  HugePageBlock() = default;
  explicit HugePageBlock(uint64_t n)
      : bytes(static_cast<std::byte *>(allocateHugePageBytes(n))), size(n) {
    // A fresh mapping is zero already.
    if (n < kHugePageBytes)
      std::memset(bytes, 0, n);
  }
  HugePageBlock(HugePageBlock &&other) noexcept
      : bytes(other.bytes), size(other.size) {
    other.bytes = nullptr;
    other.size = 0;
  }
  HugePageBlock &operator=(HugePageBlock &&other) noexcept {
    std::swap(bytes, other.bytes);
    std::swap(size, other.size);
    return *this;
  }
  ~HugePageBlock() { deallocateHugePageBytes(bytes, size); }
  std::byte *get() const { return bytes; }
  explicit operator bool() const { return bytes != nullptr; }

private:
  std::byte *bytes = nullptr;
  uint64_t size = 0;
};

/// Scratch that grows and keeps its largest block: a HugePageBlock, whose
/// pages from 2 MiB on are only mapped where its user writes (a lazily
/// staged reduce-scatter over two ranks writes none of its staging).
class ScratchBuffer {
public:
  /// At least `n` bytes; the contents are lost when it grows.
  void reserve(uint64_t n) {
    if (n <= size)
      return;
    // The old block goes first; empty, not dangling, should the allocation
    // throw.
    block = HugePageBlock();
    size = 0;
    block = HugePageBlock(n);
    size = n;
  }
  std::byte *data() const { return block.get(); }

private:
  HugePageBlock block;
  uint64_t size = 0;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_SRC_HUGEPAGES_H
