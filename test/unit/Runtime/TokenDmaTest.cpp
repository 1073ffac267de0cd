//===- TokenDmaTest.cpp - Token pool and DMA engine -----------------------===//

#include "ratrain/runtime/Arena.h"
#include "ratrain/runtime/Dma.h"
#include "ratrain/runtime/Token.h"

#include "gtest/gtest.h"

#include <thread>

using namespace ratrain::rt;

namespace {
void waitToken(TokenPool &pool, Token token) {
  while (!pool.test(token))
    pool.sleepUntilDone(token, TokenPool::Clock::now() +
                                   std::chrono::milliseconds(100));
}
} // namespace

TEST(TokenPool, CompletesReleasesAndRecycles) {
  TokenPool pool(2);
  Token a = pool.acquire("a");
  Token b = pool.acquire("b");
  EXPECT_EQ(pool.outstanding(), 2u);
  EXPECT_STREQ(pool.what(a), "a");
  EXPECT_FALSE(pool.test(a));
  pool.complete(a.index);
  EXPECT_TRUE(pool.test(a));
  EXPECT_EQ(pool.outstanding(), 1u);
  // The slot is reused with a new generation; the old token stays complete.
  Token c = pool.acquire("c");
  EXPECT_EQ(c.index, a.index);
  EXPECT_NE(c.generation, a.generation);
  EXPECT_TRUE(pool.test(a));
  EXPECT_FALSE(pool.test(c));
  pool.complete(b.index);
  pool.complete(c.index);
  EXPECT_TRUE(pool.test(b));
  EXPECT_TRUE(pool.test(c));
  EXPECT_EQ(pool.outstanding(), 0u);
  EXPECT_TRUE(pool.test(Token{})); // The empty token is complete.
}

TEST(TokenPool, ExhaustionIsFatalAndNamesTheOperation) {
  TokenPool pool(1);
  pool.acquire("first");
  EXPECT_EXIT(pool.acquire("all-reduce of ddr[0, +4)"),
              testing::ExitedWithCode(1),
              "1 asynchronous operations are outstanding.*without waiting.*"
              "all-reduce of ddr\\[0, \\+4\\)");
}

TEST(TokenPool, CompletionFromAnotherThreadWakesTheWaiter) {
  TokenPool pool(4);
  Token token = pool.acquire("remote");
  std::thread completer([&] { pool.complete(token.index); });
  waitToken(pool, token);
  completer.join();
  EXPECT_EQ(pool.outstanding(), 0u);
}

class DmaTest : public testing::TestWithParam<unsigned> {};

TEST_P(DmaTest, CopiesBetweenArenas) {
  TokenPool pool(64);
  DmaEngine dma(pool, GetParam());
  auto ddr = Arena::create(MemorySpace::DDR, 1 << 16);
  auto gsm = Arena::create(MemorySpace::GSM, 1 << 12);
  ASSERT_TRUE(ddr && gsm);
  Buffer src = (*ddr)->buffer(0, 4096);
  for (int i = 0; i < 4096; ++i)
    src.as<uint8_t>()[i] = uint8_t(i * 13);
  std::vector<Token> tokens;
  // Many copies in flight at once, each of one 64-byte chunk.
  for (int chunk = 0; chunk < 64; ++chunk)
    tokens.push_back(
        dma.copy((*gsm)->buffer(chunk * 64, 64), src.slice(chunk * 64, 64)));
  for (Token token : tokens)
    waitToken(pool, token);
  Buffer dst = (*gsm)->buffer(0, 4096);
  for (int i = 0; i < 4096; ++i)
    ASSERT_EQ(dst.as<uint8_t>()[i], uint8_t(i * 13)) << i;
  EXPECT_EQ(pool.outstanding(), 0u);
}

TEST_P(DmaTest, Copies2DTiles) {
  TokenPool pool(4);
  DmaEngine dma(pool, GetParam());
  auto ddr = Arena::create(MemorySpace::DDR, 1 << 16);
  auto am = Arena::create(MemorySpace::AM, 1 << 10);
  ASSERT_TRUE(ddr && am);
  // A 32 x 32 float matrix; copy the 4 x 8 tile at (row 3, column 5).
  float *matrix = (*ddr)->get<float>(0, 32 * 32);
  for (int i = 0; i < 32 * 32; ++i)
    matrix[i] = float(i);
  Buffer whole = (*ddr)->buffer(0, 32 * 32 * 4);
  Buffer tile = (*am)->buffer(0, 4 * 8 * 4);
  waitToken(pool, dma.copy2d(tile, 8 * 4,
                             whole.slice((3 * 32 + 5) * 4, (29 * 32 - 5) * 4),
                             32 * 4, 8 * 4, 4));
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 8; ++c)
      EXPECT_EQ(tile.as<float>()[r * 8 + c], float((3 + r) * 32 + 5 + c));
}

INSTANTIATE_TEST_SUITE_P(Threads, DmaTest, testing::Values(0u, 1u, 2u));

TEST(Dma, SizeMismatchAndOutOfBoundsTilesAreFatal) {
  TokenPool pool(4);
  DmaEngine dma(pool, 0);
  auto ddr = Arena::create(MemorySpace::DDR, 1024);
  ASSERT_TRUE(bool(ddr));
  EXPECT_EXIT(dma.copy((*ddr)->buffer(0, 16), (*ddr)->buffer(64, 32)),
              testing::ExitedWithCode(1),
              "dma size mismatch: ddr\\[0, \\+16\\) <- ddr\\[64, \\+32\\)");
  EXPECT_EXIT(
      dma.copy2d((*ddr)->buffer(0, 64), 16, (*ddr)->buffer(64, 64), 16, 16, 5),
      testing::ExitedWithCode(1), "dma2d of 5 rows x 16 bytes");
}
