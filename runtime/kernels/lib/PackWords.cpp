//===- PackWords.cpp - Word transpose packing for the packed GEMMs --------===//
//
// The packed GEMMs' k-inner operands (A of NT and NN, B of NT) are rows of
// 32-bit words (fp32 values, or bf16 k-pairs), so packing them into
// micro-tile panels is a transpose of words: 16 words of 16 rows are loaded as
// rows, turned in registers (vpunpck{l,h}dq, vpunpck{l,h}qdq, two rounds of
// vshufi32x4) and stored as 16 panel columns, with the rows 3 lines ahead
// prefetched.
//
// This is the one kernel of the library written in C++ rather than as a
// Halide pipeline: Halide 14 lowers the transposed read (one word per lane
// from 16 rows) to gathers, and a register-staged block needs a fixed-size
// register allocation it would not form here. On the Zen 5 host (one core,
// operands cycled through 36 MiB, the 85M model's shapes) the gather
// pipeline packed at 6-23 GB/s and this at 15-41 GB/s (1.6-2.8x; memcpy of
// the same bytes 23-59 GB/s); docs/kernels.md, "GEMM".
//
// The library's every kernel targets AVX-512 (RATRAIN_HALIDE_TARGET), so
// AVX512F is assumed here as there.
//
//===----------------------------------------------------------------------===//

#include "PackWords.h"

#include "HalideRuntime.h"

#include <immintrin.h>

#include <algorithm>

namespace ratrain::kernels {
namespace {

#define RATRAIN_AVX512 __attribute__((target("avx512f")))

/// Transposes the 16 x 16 words in `r` in place: word j of r[i] moves to
/// word i of r[j].
RATRAIN_AVX512 inline void transpose16x16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  // Each 128-bit lane now holds a 4 x 4 block; move the blocks.
  for (int i = 0; i < 8; ++i) {
    const int a = (i / 4) * 8 + i % 4;
    t[a] = _mm512_shuffle_i32x4(r[a], r[a + 4], 0x88);
    t[a + 4] = _mm512_shuffle_i32x4(r[a], r[a + 4], 0xdd);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
  }
}

struct PackJob {
  const uint32_t *src;
  int64_t rows, srcWords, srcStride, dstWords;
  int width;
  uint32_t *dst;

  /// Words ahead of the block being read that each row prefetches.
  static constexpr int64_t kPrefetchWords = 48;

  /// Transposes the 16 words at `from` of `lanes` (1 to 16) consecutive rows
  /// into 16 panel columns at `to`, `width` words apart: the path of every
  /// block whose rows and words all exist. The loads are unrolled without
  /// per-row tests or masks, so they issue back to back; with packTile's
  /// half-tile order the 85M model's operands packed 1.6-1.9x faster from
  /// cache and 1.1-1.6x from memory than with the general loop alone (Zen 5
  /// host, one core; `ratrain-bench-kernels --benchmark_filter=pack/`). The
  /// prefetch may point past the end of `src` (a prefetch never faults).
  RATRAIN_AVX512 void packWholeBlock(const uint32_t *from, int lanes,
                                     uint32_t *to) const {
    __m512i block[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      if (i < lanes) {
        const uint32_t *row = from + i * srcStride;
        block[i] = _mm512_loadu_si512(row);
        _mm_prefetch(reinterpret_cast<const char *>(row + kPrefetchWords),
                     _MM_HINT_T0);
        // The same line of the next 16 rows (the next half tile, or the
        // next tile's first), a half tile's work ahead: from memory the
        // in-row prefetch alone, a few blocks ahead, comes too late.
        _mm_prefetch(reinterpret_cast<const char *>(row + 16 * srcStride),
                     _MM_HINT_T1);
      } else {
        block[i] = _mm512_setzero_si512();
      }
    }
    transpose16x16(block);
    if (lanes == 16) {
#pragma GCC unroll 16
      for (int c = 0; c < 16; ++c)
        _mm512_storeu_si512(to + c * width, block[c]);
    } else {
      const __mmask16 storeMask = __mmask16((1u << lanes) - 1);
#pragma GCC unroll 16
      for (int c = 0; c < 16; ++c)
        _mm512_mask_storeu_epi32(to + c * width, storeMask, block[c]);
    }
  }

  RATRAIN_AVX512 void packTile(int64_t tile) const {
    uint32_t *out = dst + tile * dstWords * width;
    const int64_t row0 = tile * width;
    // Whole 16-word columns of a tile whose rows all exist take the
    // unrolled path, one 16-row half of the tile after the other: 16 rows
    // streamed at a time instead of 32, so rows 4 KiB apart (K = 2048 bf16,
    // 1024 fp32) do not evict each other's prefetched lines from one L1 set
    // (on the Zen 5 host a 768 x 1024-word B: 35 GB/s from cache and 22 from
    // memory; 19-21 and 12-13 with the whole blocks in k order, 21 and 17
    // with the general loop alone). The ragged last tile and the columns
    // from the last whole 16 on (partial loads, zero padding to dstWords)
    // take the general loop below.
    const int64_t wholeWords = row0 + width <= rows ? srcWords / 16 * 16 : 0;
    for (int half = 0; wholeWords > 0 && half * 16 < width; ++half)
      for (int64_t k0 = 0; k0 < wholeWords; k0 += 16)
        packWholeBlock(src + (row0 + half * 16) * srcStride + k0,
                       std::min(16, width - half * 16),
                       out + k0 * width + half * 16);
    for (int64_t k0 = wholeWords; k0 < dstWords; k0 += 16) {
      const int64_t columns = std::min<int64_t>(16, dstWords - k0);
      const int64_t loaded = std::clamp<int64_t>(srcWords - k0, 0, 16);
      const __mmask16 loadMask = __mmask16((1u << loaded) - 1);
      // 16 rows of the tile at a time (a 32-wide tile in two halves).
      for (int half = 0; half * 16 < width; ++half) {
        const int lanes = std::min(16, width - half * 16);
        __m512i block[16];
        for (int i = 0; i < 16; ++i) {
          const int64_t row = tile * width + half * 16 + i;
          if (i < lanes && row < rows) {
            const uint32_t *from = src + row * srcStride + k0;
            block[i] = _mm512_maskz_loadu_epi32(loadMask, from);
            if (k0 + kPrefetchWords < srcWords)
              _mm_prefetch(
                  reinterpret_cast<const char *>(from + kPrefetchWords),
                  _MM_HINT_T0);
          } else {
            block[i] = _mm512_setzero_si512();
          }
        }
        transpose16x16(block);
        const __mmask16 storeMask = __mmask16((1u << lanes) - 1);
        for (int64_t c = 0; c < columns; ++c) {
          uint32_t *to = out + (k0 + c) * width + half * 16;
          if (lanes == 16)
            _mm512_storeu_si512(to, block[c]);
          else
            _mm512_mask_storeu_epi32(to, storeMask, block[c]);
        }
      }
    }
  }

  static int task(void *, int tile, uint8_t *closure) {
    reinterpret_cast<const PackJob *>(closure)->packTile(tile);
    return 0;
  }
};

#undef RATRAIN_AVX512

} // namespace

int packWordsTransposed(const uint32_t *src, int64_t rows, int64_t srcWords,
                        int width, int64_t dstWords, uint32_t *dst) {
  if (width < 1 || width > 32 || dstWords < srcWords)
    return -1;
  if (rows <= 0 || dstWords <= 0)
    return 0;
  PackJob job{src, rows, srcWords, srcWords, dstWords, width, dst};
  const int64_t tiles = (rows + width - 1) / width;
  return halide_do_par_for(nullptr, PackJob::task, 0, int(tiles),
                           reinterpret_cast<uint8_t *>(&job));
}

int packWordsTransposedSerial(const uint32_t *src, int64_t rows,
                              int64_t srcWords, int64_t srcStride, int width,
                              int64_t dstWords, uint32_t *dst) {
  if (width < 1 || width > 32 || dstWords < srcWords || srcStride < srcWords)
    return -1;
  if (rows <= 0 || dstWords <= 0)
    return 0;
  PackJob job{src, rows, srcWords, srcStride, dstWords, width, dst};
  const int64_t tiles = (rows + width - 1) / width;
  for (int64_t tile = 0; tile < tiles; ++tile)
    job.packTile(tile);
  return 0;
}

} // namespace ratrain::kernels
