//===- PackWordsTest.cpp - The bf16 GEMM's word transpose packing ---------===//
//
// packWordsTransposed (runtime/kernels/lib/PackWords.cpp) against the panel
// layout written out element by element: ragged tiles, ragged 16-word
// blocks, K padded beyond the source, every width up to the 32 of a micro-
// tile's columns. The GEMM tests cover it through the kernels as well.
//
//===----------------------------------------------------------------------===//

#include "PackWords.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

using ratrain::kernels::packWordsTransposed;
using ratrain::kernels::packWordsTransposedSerial;

namespace {

std::vector<uint32_t> reference(const std::vector<uint32_t> &src, int64_t rows,
                                int64_t srcWords, int width, int64_t dstWords) {
  const int64_t tiles = (rows + width - 1) / width;
  std::vector<uint32_t> dst(size_t(tiles * dstWords * width));
  for (int64_t tile = 0; tile < tiles; ++tile)
    for (int64_t kp = 0; kp < dstWords; ++kp)
      for (int i = 0; i < width; ++i) {
        const int64_t row = tile * width + i;
        dst[size_t((tile * dstWords + kp) * width + i)] =
            row < rows && kp < srcWords ? src[size_t(row * srcWords + kp)] : 0u;
      }
  return dst;
}

TEST(PackWords, MatchesThePanelLayout) {
  std::mt19937 rng(7);
  for (int width : {1, 12, 16, 17, 31, 32})
    for (int64_t rows : {1, 5, 16, 33, 100})
      for (int64_t srcWords : {1, 7, 16, 17, 40, 65})
        for (int64_t pad : {0, 9}) {
          SCOPED_TRACE(testing::Message()
                       << "width " << width << " rows " << rows << " words "
                       << srcWords << " pad " << pad);
          const int64_t dstWords = srcWords + pad;
          std::vector<uint32_t> src(size_t(rows * srcWords));
          for (uint32_t &w : src)
            w = rng() | 1u; // never 0, so a missed word shows
          const std::vector<uint32_t> want =
              reference(src, rows, srcWords, width, dstWords);
          std::vector<uint32_t> got(want.size(), 0xdeadbeefu);
          ASSERT_EQ(packWordsTransposed(src.data(), rows, srcWords, width,
                                        dstWords, got.data()),
                    0);
          ASSERT_EQ(got, want);
        }
}

/// The serial entry reads rows `stride` words apart (one head's rows of a
/// [S, heads, D] tensor, as the bf16 attention backward stages them) and
/// packs the same panels as the dense rows; the words between rows are
/// never read into them.
TEST(PackWords, SerialStridedMatchesDenseRows) {
  std::mt19937 rng(11);
  for (int width : {16, 32})
    for (int64_t rows : {1, 37, 256})
      for (int64_t srcWords : {16, 32, 64})
        for (int64_t gap : {0, 5, 3 * 64}) {
          SCOPED_TRACE(testing::Message()
                       << "width " << width << " rows " << rows << " words "
                       << srcWords << " gap " << gap);
          const int64_t stride = srcWords + gap;
          std::vector<uint32_t> strided(size_t(rows * stride)),
              dense(size_t(rows * srcWords));
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t w = 0; w < stride; ++w) {
              uint32_t v = rng() | 1u;
              strided[size_t(r * stride + w)] = w < srcWords ? v : 0u;
              if (w < srcWords)
                dense[size_t(r * srcWords + w)] = v;
            }
          const std::vector<uint32_t> want =
              reference(dense, rows, srcWords, width, srcWords);
          std::vector<uint32_t> got(want.size(), 0xdeadbeefu);
          ASSERT_EQ(packWordsTransposedSerial(strided.data(), rows, srcWords,
                                              stride, width, srcWords,
                                              got.data()),
                    0);
          ASSERT_EQ(got, want);
        }
  uint32_t src[4] = {1, 2, 3, 4}, dst[64] = {};
  EXPECT_EQ(packWordsTransposedSerial(src, 2, 2, 1, 12, 2, dst), -1);
}

TEST(PackWords, RefusesWidthsOutsideOneTo32AndShortPanels) {
  uint32_t src[4] = {1, 2, 3, 4}, dst[64] = {};
  EXPECT_EQ(packWordsTransposed(src, 2, 2, 0, 2, dst), -1);
  EXPECT_EQ(packWordsTransposed(src, 2, 2, 33, 2, dst), -1);
  EXPECT_EQ(packWordsTransposed(src, 2, 2, 12, 1, dst), -1);
  EXPECT_EQ(packWordsTransposed(src, 0, 2, 12, 2, dst), 0);
}

} // namespace
