//===- HugePages.cpp - Runtime scratch on transparent huge pages ---------===//

#include "HugePages.h"

#include <new>

#include <sys/mman.h>

using namespace ratrain::rt;

static size_t roundedToHugePages(size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

void *ratrain::rt::allocateHugePageBytes(size_t bytes) {
  if (bytes < kHugePageBytes)
    return ::operator new(bytes);
  // One huge page more than needed, so that an aligned base exists; the
  // unaligned head and the tail past the block are unmapped again.
  const size_t rounded = roundedToHugePages(bytes);
  const size_t mapped = rounded + kHugePageBytes;
  void *map = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED)
    throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(map);
  const uintptr_t base =
      (start + kHugePageBytes - 1) & ~uintptr_t(kHugePageBytes - 1);
  if (base > start)
    munmap(map, base - start);
  if (start + mapped > base + rounded)
    munmap(reinterpret_cast<void *>(base + rounded),
           start + mapped - (base + rounded));
  madvise(reinterpret_cast<void *>(base), rounded, MADV_HUGEPAGE);
  return reinterpret_cast<void *>(base);
}

void ratrain::rt::deallocateHugePageBytes(void *p, size_t bytes) {
  if (!p)
    return;
  if (bytes < kHugePageBytes)
    ::operator delete(p);
  else
    munmap(p, roundedToHugePages(bytes));
}
