//===- Attention.cpp - The attention kernels' C++ API ---------------------===//
//
// attentionForward / attentionBackward of Kernels.h: the forward pipelines
// per head dimension and type, and the key-block backward's drivers (one
// task per batch x KV head on Halide's thread pool, key blocks in order): for
// fp32 arithmetic, and for bf16 products on vdpbf16ps.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Model/Limits.h"
#include "ratrain/kernels/Kernels.h"

#include "HalideBuffers.h"
#include "HalideRuntime.h"
#include "PackWords.h"
#include "Tiling.h"

#include "ratrain_k_attention_alibi_fwd_d128.h"
#include "ratrain_k_attention_alibi_fwd_d128_bf16.h"
#include "ratrain_k_attention_alibi_fwd_d128_bf16w.h"
#include "ratrain_k_attention_alibi_fwd_d128_f16.h"
#include "ratrain_k_attention_alibi_fwd_d32.h"
#include "ratrain_k_attention_alibi_fwd_d32_bf16.h"
#include "ratrain_k_attention_alibi_fwd_d32_bf16w.h"
#include "ratrain_k_attention_alibi_fwd_d32_f16.h"
#include "ratrain_k_attention_alibi_fwd_d64.h"
#include "ratrain_k_attention_alibi_fwd_d64_bf16.h"
#include "ratrain_k_attention_alibi_fwd_d64_bf16w.h"
#include "ratrain_k_attention_alibi_fwd_d64_f16.h"
#include "ratrain_k_attention_bwd_block_d128.h"
#include "ratrain_k_attention_bwd_block_d128_bf16.h"
#include "ratrain_k_attention_bwd_block_d128_bf16w.h"
#include "ratrain_k_attention_bwd_block_d128_f16.h"
#include "ratrain_k_attention_bwd_block_d32.h"
#include "ratrain_k_attention_bwd_block_d32_bf16.h"
#include "ratrain_k_attention_bwd_block_d32_bf16w.h"
#include "ratrain_k_attention_bwd_block_d32_f16.h"
#include "ratrain_k_attention_bwd_block_d64.h"
#include "ratrain_k_attention_bwd_block_d64_bf16.h"
#include "ratrain_k_attention_bwd_block_d64_bf16w.h"
#include "ratrain_k_attention_bwd_block_d64_f16.h"
#include "ratrain_k_attention_bwd_prepare.h"
#include "ratrain_k_attention_bwd_prepare_bf16.h"
#include "ratrain_k_attention_bwd_prepare_f16.h"
#include "ratrain_k_attention_bwd_prepare_pairs_d128_bf16.h"
#include "ratrain_k_attention_bwd_prepare_pairs_d32_bf16.h"
#include "ratrain_k_attention_bwd_prepare_pairs_d64_bf16.h"
#include "ratrain_k_attention_bwd_store.h"
#include "ratrain_k_attention_bwd_store_bf16.h"
#include "ratrain_k_attention_bwd_store_f16.h"
#include "ratrain_k_attention_fwd_d128.h"
#include "ratrain_k_attention_fwd_d128_bf16.h"
#include "ratrain_k_attention_fwd_d128_bf16w.h"
#include "ratrain_k_attention_fwd_d128_f16.h"
#include "ratrain_k_attention_fwd_d32.h"
#include "ratrain_k_attention_fwd_d32_bf16.h"
#include "ratrain_k_attention_fwd_d32_bf16w.h"
#include "ratrain_k_attention_fwd_d32_f16.h"
#include "ratrain_k_attention_fwd_d64.h"
#include "ratrain_k_attention_fwd_d64_bf16.h"
#include "ratrain_k_attention_fwd_d64_bf16w.h"
#include "ratrain_k_attention_fwd_d64_f16.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <type_traits>
#include <vector>

namespace ratrain::kernels {

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

bool attentionSupportsHeadDim(int64_t headDim) {
  return ratrain::limits::isSupportedHeadDim(headDim);
}

namespace {
bool attentionShapesOk(int64_t B, int64_t S, int64_t Hq, int64_t Hkv,
                       int64_t D) {
  return B > 0 && S > 0 && Hq > 0 && Hkv > 0 && Hq % Hkv == 0 &&
         attentionSupportsHeadDim(D);
}
} // namespace

void alibiSlopes(int64_t heads, float *slopes) {
  if (heads <= 0)
    return;
  int64_t n = 1;
  while (n * 2 <= heads)
    n *= 2;
  for (int64_t k = 0; k < heads; ++k) {
    // Head k < n: 2^(-8 (k+1) / n); head n + m: slope 2m of 2n heads,
    // 2^(-8 (2m+1) / (2n)).
    double exponent = k < n ? -8.0 * double(k + 1) / double(n)
                            : -4.0 * double(2 * (k - n) + 1) / double(n);
    slopes[k] = static_cast<float>(std::exp2(exponent));
  }
}

namespace {
/// The AOT pipelines of one head dimension: plain (RoPE models) and ALiBi.
// The pipelines take (inputs, scale, window[, slopes], outputs).
using FwdFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                      float, int32_t, halide_buffer_t *, halide_buffer_t *);
using FwdAlibiFn = int (*)(halide_buffer_t *, halide_buffer_t *,
                           halide_buffer_t *, float, int32_t, halide_buffer_t *,
                           halide_buffer_t *, halide_buffer_t *);
/// The forward pipelines of one head dimension and type.
struct AttentionPipelines {
  FwdFn fwd;
  FwdAlibiFn fwdAlibi;
};
#define RATRAIN_ATTENTION_PIPELINES(D, TYPE)                                   \
  AttentionPipelines {                                                         \
    ratrain_k_attention_fwd_d##D##TYPE,                                        \
        ratrain_k_attention_alibi_fwd_d##D##TYPE                               \
  }
#define RATRAIN_ATTENTION_PIPELINES_OF_TYPE(D, type)                           \
  (!type                ? RATRAIN_ATTENTION_PIPELINES(D, )                     \
   : *type == Half::F16 ? RATRAIN_ATTENTION_PIPELINES(D, _f16)                 \
   : bf16Products() == Bf16Products::Dot                                       \
       ? RATRAIN_ATTENTION_PIPELINES(D, _bf16)                                 \
       : RATRAIN_ATTENTION_PIPELINES(D, _bf16w))
// The pipelines below are those of runtime/kernels/CMakeLists.txt (foreach
// hd 32 64 128); the compiler refuses other head dimensions with the same
// list (ratrain/Model/Limits.h).
static_assert(std::size(ratrain::limits::kAttentionHeadDims) == 3 &&
                  ratrain::limits::kAttentionHeadDims[0] == 32 &&
                  ratrain::limits::kAttentionHeadDims[1] == 64 &&
                  ratrain::limits::kAttentionHeadDims[2] == 128,
              "kAttentionHeadDims must list the head dimensions "
              "attentionPipelines() dispatches to");

/// The forward pipelines of head dimension D (one of
/// attentionSupportsHeadDim's) on fp32 activations (no `type`) or on 16-bit
/// ones of `type`.
AttentionPipelines attentionPipelines(int64_t D, std::optional<Half> type) {
  if (D == 128)
    return RATRAIN_ATTENTION_PIPELINES_OF_TYPE(128, type);
  if (D == 64)
    return RATRAIN_ATTENTION_PIPELINES_OF_TYPE(64, type);
  return RATRAIN_ATTENTION_PIPELINES_OF_TYPE(32, type);
}

#undef RATRAIN_ATTENTION_PIPELINES_OF_TYPE
#undef RATRAIN_ATTENTION_PIPELINES

/// `v` resized to hold `n` elements from a 128-byte boundary, which it
/// returns: the block pipeline's dense views are read with aligned vector
/// loads.
template <typename T> T *alignedScratch(std::vector<T> &v, size_t n) {
  constexpr uintptr_t kAlign = 128;
  v.resize(n + kAlign / sizeof(T));
  auto p = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<T *>((p + kAlign - 1) & ~(kAlign - 1));
}

/// Head `h` of batch `b` of a bf16 [B, S, heads, D] tensor as the vdpbf16ps
/// pipelines read K (forward) and q, dO (backward): d in 32-bit pairs, word
/// transposed into tiles of 32 rows (zeros past S) at `to` (PackWords.h).
int stageDPairs(const uint16_t *x, int64_t b, int64_t S, int64_t heads,
                int64_t h, int64_t D, uint16_t *to) {
  return packWordsTransposedSerial(
      reinterpret_cast<const uint32_t *>(x + (b * S * heads + h) * D), S, D / 2,
      heads * D / 2, 32, D / 2, reinterpret_cast<uint32_t *>(to));
}

/// K of one (batch, KV head) per task as the vdpbf16ps forward reads it.
struct StageKeyPairs {
  const uint16_t *k;
  uint16_t *kd;
  int64_t S, Hkv, D, tiles;

  static int task(void *, int n, uint8_t *closure) {
    const auto &job = *reinterpret_cast<const StageKeyPairs *>(closure);
    return stageDPairs(job.k, n / job.Hkv, job.S, job.Hkv, n % job.Hkv, job.D,
                       job.kd + n * job.tiles * 32 * job.D);
  }
};

/// The forward on activations stored as T (float, or uint16_t of `type`).
template <typename T>
int attentionForwardOf(std::optional<Half> type, int64_t B, int64_t S,
                       int64_t Hq, int64_t Hkv, int64_t D, const T *q,
                       const T *k, const T *v, float scale, T *out, float *lse,
                       const float *slopes, int64_t window) {
  if (!attentionShapesOk(B, S, Hq, Hkv, D))
    return -1;
  auto qb = dense(q, {D, Hq, S, B});
  auto kb = dense(k, {D, Hkv, S, B});
  auto vb = dense(v, {D, Hkv, S, B});
  auto ob = dense(out, {D, Hq, S, B});
  // lse [B, Hq, S] seen as (d, h, s, b) with stride 0 along d.
  halide_dimension_t lseDims[4] = {
      {0, static_cast<int32_t>(D), 0},
      {0, static_cast<int32_t>(Hq), static_cast<int32_t>(S)},
      {0, static_cast<int32_t>(S), 1},
      {0, static_cast<int32_t>(B), static_cast<int32_t>(Hq * S)}};
  Buffer<float> lb(lse, 4, lseDims);
  AttentionPipelines p = attentionPipelines(D, type);
  int32_t w = int32_t(std::clamp<int64_t>(window, 0, S));
  if constexpr (std::is_same_v<T, uint16_t>)
    if (*type == Half::BF16 && bf16Products() == Bf16Products::Dot) {
      // The vdpbf16ps forward reads K with d in pairs and the keys of a
      // 32-key tile on the lanes, staged here by the word transpose (as
      // Halide's 32-bit copies it ran 8% slower at S 256, D 64).
      const int64_t tiles = (S + 31) / 32;
      thread_local std::vector<uint16_t> staged;
      uint16_t *kd = alignedScratch(staged, size_t(B * Hkv * tiles * 32 * D));
      StageKeyPairs job{k, kd, S, Hkv, D, tiles};
      if (int err = halide_do_par_for(nullptr, StageKeyPairs::task, 0,
                                      static_cast<int>(B * Hkv),
                                      reinterpret_cast<uint8_t *>(&job)))
        return err;
      kb = dense(static_cast<const uint16_t *>(kd),
                 {2, 32, D / 2, tiles, Hkv, B});
    }
  if (slopes)
    return p.fwdAlibi(qb, kb, vb, scale, w, dense(slopes, {Hq}), ob, lb);
  return p.fwd(qb, kb, vb, scale, w, ob, lb);
}

/// The key-block backward (AttentionBackwardGenerator.cpp): per query head
/// a prepare call (q and dO in fp32, delta), then one call per key block,
/// adding into fp32 accumulators; a store call rounds each accumulator.
using PrepareFn = int (*)(halide_buffer_t *, halide_buffer_t *,
                          halide_buffer_t *, halide_buffer_t *,
                          halide_buffer_t *, halide_buffer_t *);
using BlockFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                        halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                        float, int32_t, float, halide_buffer_t *,
                        halide_buffer_t *, halide_buffer_t *);
using StoreFn = int (*)(halide_buffer_t *, float, halide_buffer_t *);

#define RATRAIN_ATTENTION_BLOCK_OF_TYPE(D, type)                               \
  (!type                ? ratrain_k_attention_bwd_block_d##D                   \
   : *type == Half::F16 ? ratrain_k_attention_bwd_block_d##D##_f16             \
                        : ratrain_k_attention_bwd_block_d##D##_bf16w)

/// The key-block backward of head dimension D on fp32 activations (no
/// `type`) or 16-bit ones whose products run widened to fp32.
BlockFn attentionBlockPipeline(int64_t D, std::optional<Half> type) {
  if (D == 128)
    return RATRAIN_ATTENTION_BLOCK_OF_TYPE(128, type);
  if (D == 64)
    return RATRAIN_ATTENTION_BLOCK_OF_TYPE(64, type);
  return RATRAIN_ATTENTION_BLOCK_OF_TYPE(32, type);
}
#undef RATRAIN_ATTENTION_BLOCK_OF_TYPE

StoreFn attentionStorePipeline(std::optional<Half> type) {
  if (!type)
    return ratrain_k_attention_bwd_store;
  return *type == Half::F16 ? ratrain_k_attention_bwd_store_f16
                            : ratrain_k_attention_bwd_store_bf16;
}

PrepareFn attentionPreparePipeline(std::optional<Half> type) {
  if (!type)
    return ratrain_k_attention_bwd_prepare;
  return *type == Half::F16 ? ratrain_k_attention_bwd_prepare_f16
                            : ratrain_k_attention_bwd_prepare_bf16;
}

/// Keys per block of the key-block backward: 64 (two 32-key tiles), fewer
/// (down to one tile) where P and dS of the block, fp32 for every query row
/// that sees it, would not fit in the per-core AM. A block computes the
/// masked part of its diagonal square too, so longer blocks cost more than
/// their fewer calls save: the AM bound alone gave 256 keys up to 512
/// tokens. Measured on Zen 5, one core, fp32, ms per backward with 32 / 64 /
/// 128 / 256 keys: S 256, B 2, 12 x 64 (the 85M model) 4.72 / 4.73 / 4.95 /
/// 5.67; S 512 16.9 / 16.7 / 17.6 / 18.5; S 1024 65.2 / 62.6 / 65.3 / 66.8;
/// S 2048, 4 x 128 75.6 / 72.4 / 73.7 / 76.5; S 256, B 2, 8 x 32 (the tiny
/// LLaMA) 1.61-1.69 / 1.60-1.64 / - / 2.00-2.04; S 128, B 2, 12 x 64 1.35-1.40
/// / 1.42-1.46.
int64_t attentionKeyBlock(int64_t S) {
  int64_t rows = (S + 31) / 32 * 32;
  return tiling::clampInt(RATRAIN_AM_BYTES / (8 * rows) / 32 * 32, 32, 64);
}

/// Rows [first, first + count) of head `head` of a [B, S, heads, D] tensor,
/// batch `b`, as a (d, s) view whose row coordinates are the sequence
/// positions.
template <typename T>
Buffer<T> headRows(const T *base, int64_t b, int64_t S, int64_t heads,
                   int64_t head, int64_t D, int64_t first, int64_t count) {
  halide_dimension_t dims[2] = {{0, static_cast<int32_t>(D), 1},
                                {static_cast<int32_t>(first),
                                 static_cast<int32_t>(count),
                                 static_cast<int32_t>(heads * D)}};
  return Buffer<T>(const_cast<T *>(base + ((b * S + first) * heads + head) * D),
                   2, dims);
}

/// Rows [first, first + count) of a dense fp32 [rows, D] scratch array: a
/// one-head, one-batch tensor.
Buffer<float> scratchRows(float *acc, int64_t D, int64_t first, int64_t count) {
  return headRows(acc, 0, 0, 1, 0, D, first, count);
}

/// One key block of one query head as both key-block drivers call their
/// pipeline on it: keys [j0, j1) against the query rows [i0, i1) that see
/// them, with their lse rows, the block's k and v rows and its rows of the
/// dk and dv accumulators.
template <typename T> struct KeyBlock {
  int64_t h, j0, j1, i0, i1;
  float slope;
  halide_dimension_t queryRows;
  Buffer<float> lse;
  Buffer<T> k, v;
  Buffer<float> dk, dv;
};

/// The arguments of a backward call, and the walk both key-block drivers
/// share: one task per (batch, KV head) on Halide's thread pool, which
/// zeroes fp32 dk and dv accumulators of its KV head; for each query head of
/// the group prepares it (the driver's staging, zeroing dq), walks the key
/// blocks in order and rounds dq into the storage; last it rounds dk and dv.
template <typename T> struct BackwardCall {
  int64_t B, S, Hq, Hkv, D;
  const T *q, *k, *v, *out, *dout;
  const float *lse;
  float scale;
  int32_t window;
  const float *slopes;
  T *dq, *dk, *dv;

  /// Runs `driver.run(n)` for every (batch, KV head) n.
  template <typename Driver> int forEachKvHead(const Driver &driver) const {
    auto task = [](void *, int n, uint8_t *closure) {
      return reinterpret_cast<const Driver *>(closure)->run(n);
    };
    return halide_do_par_for(
        nullptr, task, 0, static_cast<int>(B * Hkv),
        reinterpret_cast<uint8_t *>(const_cast<Driver *>(&driver)));
  }

  /// The walk of (batch, KV head) n: `prepare(h)` per query head, then
  /// `block(KeyBlock)` per block of `keyBlock` keys; the accumulators are
  /// dense [rows, D] fp32 arrays (dqAcc zeroed by `prepare`).
  template <typename Prepare, typename Block>
  int walk(int64_t n, int64_t keyBlock, StoreFn store, float *dqAcc,
           float *dkAcc, float *dvAcc, Prepare prepare, Block block) const {
    const int64_t b = n / Hkv, hk = n % Hkv, G = Hq / Hkv;
    std::fill(dkAcc, dkAcc + S * D, 0.0f);
    std::fill(dvAcc, dvAcc + S * D, 0.0f);
    for (int64_t g = 0; g < G; ++g) {
      const int64_t h = hk * G + g;
      if (int err = prepare(h))
        return err;
      for (int64_t j0 = 0; j0 < S; j0 += keyBlock) {
        // The queries that see a key of [j0, j1): from j0, and with a
        // window W no further than W - 1 past the block's last key.
        const int64_t j1 = std::min(S, j0 + keyBlock);
        const int64_t i0 = j0, i1 = window > 0
                                        ? std::min<int64_t>(S, j1 + window - 1)
                                        : S;
        KeyBlock<T> kb{h,
                       j0,
                       j1,
                       i0,
                       i1,
                       slopes ? slopes[h] : 0.0f,
                       halide_dimension_t(int32_t(i0), int32_t(i1 - i0), 1),
                       {},
                       headRows(k, b, S, Hkv, hk, D, j0, j1 - j0),
                       headRows(v, b, S, Hkv, hk, D, j0, j1 - j0),
                       scratchRows(dkAcc, D, j0, j1 - j0),
                       scratchRows(dvAcc, D, j0, j1 - j0)};
        kb.lse = Buffer<float>(const_cast<float *>(lse + (b * Hq + h) * S + i0),
                               1, &kb.queryRows);
        if (int err = block(kb))
          return err;
      }
      if (int err = store(scratchRows(dqAcc, D, 0, S), scale,
                          headRows(dq, b, S, Hq, h, D, 0, S)))
        return err;
    }
    if (int err = store(scratchRows(dkAcc, D, 0, S), scale,
                        headRows(dk, b, S, Hkv, hk, D, 0, S)))
      return err;
    return store(scratchRows(dvAcc, D, 0, S), 1.0f,
                 headRows(dv, b, S, Hkv, hk, D, 0, S));
  }
};

/// The key-block backward with fp32 arithmetic (AttentionBackwardGenerator.cpp)
/// on BackwardCall's walk: a head's q and dO widened to fp32 rows padded to
/// 32 (the pad rows zero) and delta by the prepare pipeline.
template <typename T> struct BlockBackward {
  BackwardCall<T> c;
  PrepareFn prepare;
  BlockFn block;
  StoreFn store;
  int64_t keyBlock;

  int run(int64_t n) const {
    const int64_t b = n / c.Hkv, S = c.S, D = c.D;
    const int64_t rows = (S + 31) / 32 * 32;
    thread_local std::vector<float> scratch;
    scratch.resize(size_t(2 * rows * D + S + 3 * S * D));
    float *qf = scratch.data(), *dOf = qf + rows * D, *delta = dOf + rows * D;
    float *dqAcc = delta + S, *dkAcc = dqAcc + S * D, *dvAcc = dkAcc + S * D;
    std::fill(qf + S * D, qf + rows * D, 0.0f);
    std::fill(dOf + S * D, dOf + rows * D, 0.0f);
    auto prepareHead = [&](int64_t h) {
      std::fill(dqAcc, dqAcc + S * D, 0.0f);
      return prepare(headRows(c.q, b, S, c.Hq, h, D, 0, S),
                     headRows(c.out, b, S, c.Hq, h, D, 0, S),
                     headRows(c.dout, b, S, c.Hq, h, D, 0, S),
                     scratchRows(qf, D, 0, S), scratchRows(dOf, D, 0, S),
                     Buffer<float>(delta, int(S)));
    };
    auto runBlock = [&](KeyBlock<T> &kb) {
      const int64_t i0 = kb.i0, i1 = kb.i1;
      const int64_t tileRows = std::min(rows, i0 + (i1 - i0 + 31) / 32 * 32);
      return block(scratchRows(qf, D, i0, tileRows - i0),
                   scratchRows(dOf, D, i0, tileRows - i0),
                   Buffer<float>(delta + i0, 1, &kb.queryRows), kb.lse, kb.k,
                   kb.v, c.scale, c.window, kb.slope,
                   scratchRows(dqAcc, D, i0, i1 - i0), kb.dk, kb.dv);
    };
    return c.walk(n, keyBlock, store, dqAcc, dkAcc, dvAcc, prepareHead,
                  runBlock);
  }
};

/// The key-block backward whose products run on vdpbf16ps
/// (AttentionBf16Generator.cpp, AttentionBackwardBlockBf16): per query head
/// q and dO are staged in the two pair layouts the products read (the word
/// transpose of PackWords.h and the prepare call, which also computes
/// delta), then one call per key block adds into fp32 accumulators; the
/// store step rounds them as for the other types.
using PairPrepareFn = int (*)(halide_buffer_t *, halide_buffer_t *,
                              halide_buffer_t *, halide_buffer_t *,
                              halide_buffer_t *, halide_buffer_t *);
using PairBlockFn = int (*)(halide_buffer_t *, halide_buffer_t *,
                            halide_buffer_t *, halide_buffer_t *,
                            halide_buffer_t *, halide_buffer_t *,
                            halide_buffer_t *, halide_buffer_t *, float,
                            int32_t, float, halide_buffer_t *,
                            halide_buffer_t *, halide_buffer_t *);

struct PairPipelines {
  PairPrepareFn prepare;
  PairBlockFn block;
};

PairPipelines pairPipelines(int64_t D) {
  if (D == 128)
    return {ratrain_k_attention_bwd_prepare_pairs_d128_bf16,
            ratrain_k_attention_bwd_block_d128_bf16};
  if (D == 64)
    return {ratrain_k_attention_bwd_prepare_pairs_d64_bf16,
            ratrain_k_attention_bwd_block_d64_bf16};
  return {ratrain_k_attention_bwd_prepare_pairs_d32_bf16,
          ratrain_k_attention_bwd_block_d32_bf16};
}

/// Keys per block of the vdpbf16ps key-block backward: S / 8 in multiples of
/// the 32-key tile, 64 to 128 keys. A block computes S^T and dP^T for its
/// whole diagonal square (skipping only groups of 8 keys past a query tile),
/// so short sequences want short blocks; long ones longer blocks, which
/// read each query tile's pairs for more keys. Measured on Zen 5, one core,
/// bf16 (ms per backward, 64 / 128 / 256 keys): S 128 (12 x 64, B 2) 0.78 /
/// 1.03 / -, S 256 2.50 / 2.54 / 2.76, S 1024 (12 x 128, B 1) 30.0 / 28.6;
/// S 2048 (32 x 128, 2 cores) 157 / 155 / 155.
int64_t pairKeyBlock(int64_t S) {
  return tiling::clampInt(S / 8 / 32 * 32, 64, 128);
}

/// A dense array viewed with the given dimensions; `host` is the element
/// at their mins.
template <typename T>
Buffer<T> view(T *host, std::initializer_list<halide_dimension_t> dims) {
  return Buffer<T>(host, int(dims.size()), std::data(dims));
}

/// The vdpbf16ps key-block backward on BackwardCall's walk: a head's q and
/// dO in the two pair layouts (the word transpose and the prepare pipeline,
/// which also computes delta); dq accumulated in whole 32-row tiles.
struct PairBlockBackward {
  BackwardCall<uint16_t> c;
  PairPipelines p;
  StoreFn store;
  int64_t keyBlock;

  int run(int64_t n) const {
    const int64_t b = n / c.Hkv, S = c.S, D = c.D;
    const int64_t rows = (S + 31) / 32 * 32, tiles = rows / 32;
    const int32_t d = int32_t(D), r = int32_t(rows), t = int32_t(tiles);
    thread_local std::vector<uint16_t> pairs;
    thread_local std::vector<float> scratch;
    uint16_t *qd = alignedScratch(pairs, size_t(4 * rows * D));
    uint16_t *dOd = qd + rows * D, *qq = dOd + rows * D, *dOq = qq + rows * D;
    float *delta = alignedScratch(scratch, size_t(rows + rows * D + 2 * S * D));
    float *dqAcc = delta + rows;
    float *dkAcc = dqAcc + rows * D, *dvAcc = dkAcc + S * D;
    auto dpairs = [&](uint16_t *host) {
      return view(host,
                  {{0, 2, 1}, {0, 32, 2}, {0, d / 2, 64}, {0, t, 32 * d}});
    };
    auto rpairs = [&](uint16_t *host) {
      return view(host, {{0, 2, 1}, {0, d, 2}, {0, r / 2, 2 * d}});
    };
    auto prepareHead = [&](int64_t h) {
      std::fill(dqAcc, dqAcc + rows * D, 0.0f);
      if (stageDPairs(c.q, b, S, c.Hq, h, D, qd) ||
          stageDPairs(c.dout, b, S, c.Hq, h, D, dOd))
        return -1;
      return p.prepare(headRows(c.q, b, S, c.Hq, h, D, 0, S),
                       headRows(c.out, b, S, c.Hq, h, D, 0, S),
                       headRows(c.dout, b, S, c.Hq, h, D, 0, S), rpairs(qq),
                       rpairs(dOq), Buffer<float>(delta, int(S)));
    };
    auto runBlock = [&](KeyBlock<uint16_t> &kb) {
      const int32_t t0 = int32_t(kb.i0 / 32),
                    nt = int32_t((kb.i1 - kb.i0 + 31) / 32);
      auto dqTiles = view(dqAcc + int64_t(t0) * 32 * D,
                          {{0, d, 1}, {0, 32, d}, {t0, nt, 32 * d}});
      return p.block(dpairs(qd), dpairs(dOd), rpairs(qq), rpairs(dOq),
                     Buffer<float>(delta + kb.i0, 1, &kb.queryRows), kb.lse,
                     kb.k, kb.v, c.scale, c.window, kb.slope, dqTiles, kb.dk,
                     kb.dv);
    };
    return c.walk(n, keyBlock, store, dqAcc, dkAcc, dvAcc, prepareHead,
                  runBlock);
  }
};

/// The backward on activations stored as T (float, or uint16_t of `type`):
/// the key-block backward, with its products on vdpbf16ps where bf16
/// products run there (PairBlockBackward) and widened to fp32 otherwise.
template <typename T>
int attentionBackwardOf(std::optional<Half> type, int64_t B, int64_t S,
                        int64_t Hq, int64_t Hkv, int64_t D, const T *q,
                        const T *k, const T *v, const T *out, const T *dout,
                        const float *lse, float scale, T *dq, T *dk, T *dv,
                        const float *slopes, int64_t window) {
  if (!attentionShapesOk(B, S, Hq, Hkv, D))
    return -1;
  // Every view's rows and strides are int32 in Halide: refuse what does not
  // fit, as dense() does.
  if (B * S * std::max(Hq, Hkv) * D > INT32_MAX)
    return -1;
  const int32_t w = int32_t(std::clamp<int64_t>(window, 0, S));
  const BackwardCall<T> call{B,    S,   Hq,    Hkv, D,      q,  k,  v, out,
                             dout, lse, scale, w,   slopes, dq, dk, dv};
  if constexpr (std::is_same_v<T, uint16_t>)
    if (*type == Half::BF16 && bf16Products() == Bf16Products::Dot)
      return call.forEachKvHead(PairBlockBackward{call, pairPipelines(D),
                                                  attentionStorePipeline(type),
                                                  pairKeyBlock(S)});
  return call.forEachKvHead(BlockBackward<T>{
      call, attentionPreparePipeline(type), attentionBlockPipeline(D, type),
      attentionStorePipeline(type), attentionKeyBlock(S)});
}
} // namespace

int attentionForward(int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                     const float *q, const float *k, const float *v,
                     float scale, float *out, float *lse, const float *slopes,
                     int64_t window) {
  return attentionForwardOf<float>(std::nullopt, B, S, Hq, Hkv, D, q, k, v,
                                   scale, out, lse, slopes, window);
}

int attentionForward(Half type, int64_t B, int64_t S, int64_t Hq, int64_t Hkv,
                     int64_t D, const uint16_t *q, const uint16_t *k,
                     const uint16_t *v, float scale, uint16_t *out, float *lse,
                     const float *slopes, int64_t window) {
  return attentionForwardOf<uint16_t>(type, B, S, Hq, Hkv, D, q, k, v, scale,
                                      out, lse, slopes, window);
}

int attentionBackward(int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                      const float *q, const float *k, const float *v,
                      const float *out, const float *dout, const float *lse,
                      float scale, float *dq, float *dk, float *dv,
                      const float *slopes, int64_t window) {
  return attentionBackwardOf<float>(std::nullopt, B, S, Hq, Hkv, D, q, k, v,
                                    out, dout, lse, scale, dq, dk, dv, slopes,
                                    window);
}

int attentionBackward(Half type, int64_t B, int64_t S, int64_t Hq, int64_t Hkv,
                      int64_t D, const uint16_t *q, const uint16_t *k,
                      const uint16_t *v, const uint16_t *out,
                      const uint16_t *dout, const float *lse, float scale,
                      uint16_t *dq, uint16_t *dk, uint16_t *dv,
                      const float *slopes, int64_t window) {
  return attentionBackwardOf<uint16_t>(type, B, S, Hq, Hkv, D, q, k, v, out,
                                       dout, lse, scale, dq, dk, dv, slopes,
                                       window);
}

} // namespace ratrain::kernels
