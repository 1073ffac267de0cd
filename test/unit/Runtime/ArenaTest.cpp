//===- ArenaTest.cpp - Arena capacity, bounds and peak tracking -----------===//

#include "TestUtil.h"

#include "ratrain/runtime/Arena.h"

#include "gtest/gtest.h"

#include <cstdint>

using namespace ratrain::rt;
using namespace ratrain::rt::test;

TEST(Arena, ExactCapacityAlignedAndZeroed) {
  auto arena = Arena::create(MemorySpace::DDR, 3 << 20, 2 << 20);
  ASSERT_TRUE(bool(arena)) << llvm::toString(arena.takeError());
  EXPECT_EQ((*arena)->capacity(), uint64_t(3) << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*arena)->base()) % (2 << 20), 0u);
  Buffer all = (*arena)->buffer(0, 3 << 20);
  for (uint64_t i = 0; i < all.bytes; i += 4096)
    EXPECT_EQ(all.as<uint8_t>()[i], 0u);
}

TEST(Arena, BuffersAtOffsetsShareTheAllocation) {
  auto arena = Arena::create(MemorySpace::GSM, 4096);
  ASSERT_TRUE(bool(arena));
  Buffer a = (*arena)->buffer(0, 1024);
  Buffer b = (*arena)->buffer(512, 16);
  a.as<uint8_t>()[520] = 42;
  EXPECT_EQ(b.as<uint8_t>()[8], 42);
  EXPECT_EQ(b.offset, 512u);
  EXPECT_EQ(b.space, MemorySpace::GSM);
  EXPECT_TRUE((*arena)->contains(b.data, b.bytes));
}

TEST(Arena, CapacityViolationNamesOffsetSizeAndCapacity) {
  auto arena = Arena::create(MemorySpace::DDR, 4096);
  ASSERT_TRUE(bool(arena));
  // The last byte fits, one more does not.
  EXPECT_TRUE(bool((*arena)->tryBuffer(4095, 1)));
  auto error = (*arena)->tryBuffer(4000, 97);
  ASSERT_FALSE(bool(error));
  EXPECT_EQ(llvm::toString(error.takeError()),
            "ddr arena capacity exceeded: buffer at offset 4000 of 97 bytes "
            "ends at 4097, but the planned capacity is 4096 bytes");
  // Offsets that overflow 64 bits are caught too.
  auto overflow = (*arena)->tryBuffer(UINT64_MAX - 1, 4);
  ASSERT_FALSE(bool(overflow));
  EXPECT_NE(llvm::toString(overflow.takeError()).find("overflow"),
            std::string::npos);
}

TEST(Arena, PeakIsTheHighestTouchedEnd) {
  auto arena = Arena::create(MemorySpace::AM, 1 << 16);
  ASSERT_TRUE(bool(arena));
  EXPECT_EQ((*arena)->peakBytes(), 0u);
  (*arena)->buffer(100, 50);
  (*arena)->buffer(0, 10);
  EXPECT_EQ((*arena)->peakBytes(), 150u);
  (*arena)->buffer(1000, 24);
  EXPECT_EQ((*arena)->peakBytes(), 1024u);
  // A failed request does not count.
  EXPECT_FALSE(bool((*arena)->tryBuffer(1 << 16, 1)));
  llvm::consumeError((*arena)->tryBuffer(1 << 16, 1).takeError());
  EXPECT_EQ((*arena)->peakBytes(), 1024u);
  (*arena)->resetPeak();
  EXPECT_EQ((*arena)->peakBytes(), 0u);
}

TEST(Arena, SliceStaysInsideItsBuffer) {
  auto arena = Arena::create(MemorySpace::DDR, 1024);
  ASSERT_TRUE(bool(arena));
  Buffer b = (*arena)->buffer(256, 256);
  Buffer s = b.slice(16, 32);
  EXPECT_EQ(s.offset, 272u);
  EXPECT_EQ(s.data, b.data + 16);
  EXPECT_EXIT(b.slice(250, 16), testing::ExitedWithCode(1),
              "ddr slice \\[250, \\+16\\) is outside its buffer of 256 bytes");
}

TEST(Arena, FatalBufferExitsWithAMessage) {
  auto arena = Arena::create(MemorySpace::DDR, 1024);
  ASSERT_TRUE(bool(arena));
  EXPECT_EXIT((*arena)->buffer(1020, 8), testing::ExitedWithCode(1),
              "error: ddr arena capacity exceeded: buffer at offset 1020 of 8 "
              "bytes");
}

TEST(Arena, RejectsBadAlignmentAndImpossibleCapacity) {
  auto bad = Arena::create(MemorySpace::DDR, 1024, 48);
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("not a power of two"),
            std::string::npos);
  // More than the address space can map.
  auto huge = Arena::create(MemorySpace::DDR, uint64_t(1) << 62);
  ASSERT_FALSE(bool(huge));
  EXPECT_NE(llvm::toString(huge.takeError())
                .find("cannot map the planned capacity of 4611686018427387904"),
            std::string::npos);
}
