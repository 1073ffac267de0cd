//===- HugePagesTest.cpp - The collectives' huge-page scratch -------------===//
//
// runtime/src/HugePages.h: blocks from 2 MiB on are 2 MiB-aligned mappings
// the kernel is asked to back with transparent huge pages (their VMA carries
// the `hg` flag of MADV_HUGEPAGE in /proc/self/smaps), smaller ones come
// from operator new; HugePageVector and ScratchBuffer grow on them, and a
// HugePageBlock owns a zero-filled one.
//
//===----------------------------------------------------------------------===//

#include "HugePages.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

using namespace ratrain::rt;

namespace {

bool hugePageAligned(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % kHugePageBytes == 0;
}

/// The VmFlags line of the mapping of /proc/self/smaps that holds `p`, or
/// "" when none does.
std::string vmFlagsOf(const void *p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  while (std::getline(smaps, line)) {
    // A mapping's first line: "start-end perms offset dev inode path".
    uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> start >> dash >> end && dash == '-') {
      inside = start <= at && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return "";
}

} // namespace

TEST(HugePages, LargeBlocksAreAlignedWritableAndAdvised) {
  for (size_t bytes : {kHugePageBytes, 3 * kHugePageBytes + 1}) {
    SCOPED_TRACE(bytes);
    auto *p = static_cast<unsigned char *>(allocateHugePageBytes(bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(hugePageAligned(p));
    // Every 4 KiB page and the last byte can be written and read back.
    for (size_t i = 0; i < bytes; i += 4096)
      p[i] = static_cast<unsigned char>(i >> 12);
    for (size_t i = 0; i < bytes; i += 4096)
      EXPECT_EQ(p[i], static_cast<unsigned char>(i >> 12));
    p[bytes - 1] = 0xab;
    EXPECT_EQ(p[bytes - 1], 0xab);
    std::string flags = vmFlagsOf(p);
    ASSERT_FALSE(flags.empty()) << "no mapping holds the block";
    EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
    deallocateHugePageBytes(p, bytes);
  }
}

TEST(HugePages, SmallBlocksComeFromNew) {
  void *p = allocateHugePageBytes(100);
  ASSERT_NE(p, nullptr);
  std::memset(p, 7, 100);
  EXPECT_EQ(static_cast<unsigned char *>(p)[99], 7);
  deallocateHugePageBytes(p, 100);
  deallocateHugePageBytes(nullptr, 100); // no-op
}

TEST(HugePages, VectorsAndScratchGrowOnThem) {
  HugePageVector<float> v(kHugePageBytes / sizeof(float));
  EXPECT_TRUE(hugePageAligned(v.data()));
  EXPECT_EQ(v.front(), 0.0f); // value-initialized as any vector
  v.back() = 3.5f;
  v.resize(2 * v.size());
  EXPECT_EQ(v[kHugePageBytes / sizeof(float) - 1], 3.5f);
  EXPECT_EQ(v.back(), 0.0f);

  ScratchBuffer scratch;
  EXPECT_EQ(scratch.data(), nullptr);
  scratch.reserve(5 << 20);
  std::byte *first = scratch.data();
  EXPECT_TRUE(hugePageAligned(first));
  first[(5 << 20) - 1] = std::byte{1};
  scratch.reserve(1 << 20); // smaller: kept
  EXPECT_EQ(scratch.data(), first);
  scratch.reserve(8 << 20); // larger: a new block
  EXPECT_TRUE(hugePageAligned(scratch.data()));
  scratch.data()[(8 << 20) - 1] = std::byte{2};
}

TEST(HugePages, BlocksAreZeroFilledAndMove) {
  for (uint64_t bytes : {uint64_t(100), uint64_t(kHugePageBytes) + 5}) {
    SCOPED_TRACE(bytes);
    HugePageBlock block(bytes);
    ASSERT_TRUE(bool(block));
    for (uint64_t i = 0; i < bytes; i += 97)
      EXPECT_EQ(block.get()[i], std::byte{0});
    block.get()[bytes - 1] = std::byte{9};
    HugePageBlock moved = std::move(block);
    EXPECT_FALSE(bool(block));
    EXPECT_EQ(moved.get()[bytes - 1], std::byte{9});
    HugePageBlock other(64);
    other = std::move(moved);
    EXPECT_EQ(other.get()[bytes - 1], std::byte{9});
  }
}
