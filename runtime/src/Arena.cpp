//===- Arena.cpp - Fixed-capacity memory arenas ---------------------------===//

#include "ratrain/runtime/Arena.h"
#include "ratrain/runtime/Error.h"

#include "llvm/Support/FormatVariadic.h"

#include <cerrno>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

using namespace ratrain::rt;

llvm::StringRef ratrain::rt::stringifyMemorySpace(MemorySpace space) {
  switch (space) {
  case MemorySpace::DDR:
    return "ddr";
  case MemorySpace::GSM:
    return "gsm";
  case MemorySpace::AM:
    return "am";
  }
  return "?";
}

Buffer Buffer::slice(uint64_t relativeOffset, uint64_t sliceBytes) const {
  if (relativeOffset > bytes || sliceBytes > bytes - relativeOffset)
    fatal(llvm::formatv("{0} slice [{1}, +{2}) is outside its buffer of {3} "
                        "bytes at offset {4}",
                        stringifyMemorySpace(space), relativeOffset, sliceBytes,
                        bytes, offset));
  return Buffer{data + relativeOffset, offset + relativeOffset, sliceBytes,
                space};
}

llvm::Expected<std::unique_ptr<Arena>>
Arena::create(MemorySpace space, uint64_t capacity, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return makeError(llvm::formatv("{0} arena: alignment {1} is not a power "
                                   "of two",
                                   stringifyMemorySpace(space), alignment));
  uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  uint64_t align = std::max(alignment, page);
  // Over-map by the alignment so that the base can be rounded up; an empty
  // arena still gets one page so that base() is a valid address.
  uint64_t rounded = (std::max<uint64_t>(capacity, 1) + page - 1) / page * page;
  uint64_t mapBytes = rounded + (align > page ? align : 0);
  void *map = mmap(nullptr, mapBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED)
    return makeError(llvm::formatv(
        "{0} arena: cannot map the planned capacity of {1} bytes: {2}",
        stringifyMemorySpace(space), capacity, std::strerror(errno)));
  uintptr_t base =
      (reinterpret_cast<uintptr_t>(map) + align - 1) & ~(align - 1);
  if (capacity >= (uint64_t(2) << 20))
    madvise(reinterpret_cast<void *>(base), rounded, MADV_HUGEPAGE);
  std::unique_ptr<Arena> arena(new Arena());
  arena->memorySpace = space;
  arena->capacityBytes = capacity;
  arena->alignmentBytes = alignment;
  arena->baseAddress = reinterpret_cast<std::byte *>(base);
  arena->mapping = map;
  arena->mappingBytes = mapBytes;
  return arena;
}

Arena::~Arena() {
  if (mapping)
    munmap(mapping, mappingBytes);
}

llvm::Expected<Buffer> Arena::tryBuffer(uint64_t offset, uint64_t bytes) {
  if (offset > capacityBytes || bytes > capacityBytes - offset)
    return makeError(llvm::formatv(
        "{0} arena capacity exceeded: buffer at offset {1} of {2} bytes ends "
        "at {3}, but the planned capacity is {4} bytes",
        stringifyMemorySpace(memorySpace), offset, bytes,
        // Report the true end even when offset + bytes overflows.
        offset + bytes < offset ? llvm::Twine("overflow").str()
                                : std::to_string(offset + bytes),
        capacityBytes));
  uint64_t end = offset + bytes;
  uint64_t seen = peak.load(std::memory_order_relaxed);
  while (end > seen &&
         !peak.compare_exchange_weak(seen, end, std::memory_order_relaxed))
    ;
  return Buffer{baseAddress + offset, offset, bytes, memorySpace};
}

Buffer Arena::buffer(uint64_t offset, uint64_t bytes) {
  return exitOnError(tryBuffer(offset, bytes));
}

bool Arena::contains(const void *pointer, uint64_t bytes) const {
  auto p = reinterpret_cast<const std::byte *>(pointer);
  return p >= baseAddress && p <= baseAddress + capacityBytes &&
         bytes <= uint64_t(baseAddress + capacityBytes - p);
}
