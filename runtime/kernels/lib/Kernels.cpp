//===- Kernels.cpp - Plain C++ wrappers around the Halide kernels ---------===//
//
// Builds halide_buffer_t descriptions of the caller's row-major arrays and
// calls the AOT-compiled pipelines (the attention ones: Attention.cpp). No
// Halide type leaves the library.
//
//===----------------------------------------------------------------------===//

#include "ratrain/kernels/Kernels.h"
#include "ratrain/Model/Limits.h"

#include "HalideBuffer.h"
#include "HalideRuntime.h"

#include "HalideBuffers.h"
#include "PackWords.h"
#include "Tiling.h"
#include <cstdio>
#include <iterator>

#include "ratrain_halide_runtime_owner.h"
#include "ratrain_k_adamw.h"
#include "ratrain_k_adamw_average.h"
#include "ratrain_k_adamw_bf16.h"
#include "ratrain_k_adamw_bf16_grad16.h"
#include "ratrain_k_adamw_bf16_grad16_average.h"
#include "ratrain_k_adamw_f16.h"
#include "ratrain_k_adamw_f16_grad16.h"
#include "ratrain_k_add.h"
#include "ratrain_k_add_bf16.h"
#include "ratrain_k_add_f16.h"
#include "ratrain_k_bf16_to_f32.h"
#include "ratrain_k_cross_entropy.h"
#include "ratrain_k_cross_entropy_bf16.h"
#include "ratrain_k_cross_entropy_f16.h"
#include "ratrain_k_embedding_bwd.h"
#include "ratrain_k_embedding_fwd.h"
#include "ratrain_k_embedding_fwd_bf16.h"
#include "ratrain_k_embedding_fwd_f16.h"
#include "ratrain_k_f16_to_f32.h"
#include "ratrain_k_f32_to_f16.h"
#include "ratrain_k_gemm_bf16_packed.h"
#include "ratrain_k_gemm_bf16_packed_to_bf16.h"
#include "ratrain_k_gemm_f32_packed.h"
#include "ratrain_k_gemm_nn_bf16w.h"
#include "ratrain_k_gemm_nn_bf16w_to_bf16.h"
#include "ratrain_k_gemm_nn_f16.h"
#include "ratrain_k_gemm_nt_bf16w.h"
#include "ratrain_k_gemm_nt_bf16w_to_bf16.h"
#include "ratrain_k_gemm_nt_f16.h"
#include "ratrain_k_gemm_tn_bf16w.h"
#include "ratrain_k_gemm_tn_bf16w_to_bf16.h"
#include "ratrain_k_gemm_tn_f16.h"
#include "ratrain_k_pack_a_f32_kouter.h"
#include "ratrain_k_pack_a_kinner.h"
#include "ratrain_k_pack_a_kouter.h"
#include "ratrain_k_pack_b_f32_kouter.h"
#include "ratrain_k_pack_b_kinner.h"
#include "ratrain_k_pack_b_kouter.h"
#include "ratrain_k_rmsnorm_bwd.h"
#include "ratrain_k_rmsnorm_bwd_bf16.h"
#include "ratrain_k_rmsnorm_bwd_f16.h"
#include "ratrain_k_rmsnorm_fwd.h"
#include "ratrain_k_rmsnorm_fwd_bf16.h"
#include "ratrain_k_rmsnorm_fwd_f16.h"
#include "ratrain_k_rope.h"
#include "ratrain_k_rope_bf16.h"
#include "ratrain_k_rope_f16.h"
#include "ratrain_k_sum_squares.h"
#include "ratrain_k_sum_squares_bf16.h"
#include "ratrain_k_sum_squares_f16.h"
#include "ratrain_k_swiglu_bwd.h"
#include "ratrain_k_swiglu_bwd_bf16.h"
#include "ratrain_k_swiglu_bwd_f16.h"
#include "ratrain_k_swiglu_fwd.h"
#include "ratrain_k_swiglu_fwd_bf16.h"
#include "ratrain_k_swiglu_fwd_f16.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

namespace ratrain::kernels {
namespace {

/// Halide's default error handler aborts the process; the API promises an
/// error code instead (the message still goes to stderr), so every kernel
/// call returns Halide's nonzero code to its caller.
void printHalideError(void * /*userContext*/, const char *message) {
  std::fprintf(stderr, "ratrain kernels: %s\n", message);
}

/// Installs the handler before the first kernel runs.
/// Halide's allocations inside the pipelines (the intermediate stages of a
/// call), reused per thread. The kernels run the same shapes call after
/// call, and malloc serves a block of 128 KiB or more with a fresh mmap whose
/// pages fault in on every call: about a tenth of the attention backward of
/// the tiny LLaMA at 256 tokens (its 512 KiB of P and dS per key block) went
/// to page faults. A thread keeps up to kCachedBlocks freed blocks of
/// kCachedMinBytes or more (at most kCachedBytes together) and an allocation
/// takes the smallest that fits, however much larger: a stage bounded by the
/// causal mask grows from one query block to the next (the bf16 forward's
/// scores, 64 to 256 KiB over a head at S 2048), and when a block had to be
/// at most twice the request, the small ones of every head found only the
/// large ones the last head had left and went to malloc again (48 against
/// 16 thousand page faults in six forward and backward calls at S 2048 and
/// 1792; the forward at S 2048 took twice as long). Blocks from 4 KiB on:
/// the attention at S 256 makes thousands of 4-64 KiB allocations a call,
/// 3-5% of its time in malloc and free.
namespace pipeline_memory {
/// Halide's requirements: aligned for any vector load, and readable a few
/// bytes before the start (the header) and past the end (kSlack).
constexpr size_t kAlign = 128, kSlack = 64;
constexpr size_t kCachedMinBytes = size_t(4) << 10;
constexpr size_t kCachedBlocks = 32, kCachedBytes = size_t(64) << 20;

struct Block {
  void *base;
  size_t bytes;
};
struct Cache {
  std::vector<Block> blocks; // oldest first
  size_t bytes = 0;
  ~Cache() {
    for (Block &b : blocks)
      std::free(b.base);
  }
};
Cache &cache() {
  thread_local Cache c;
  return c;
}

void *allocate(void *, size_t n) {
  size_t bytes = (n + kAlign + kSlack + kAlign - 1) / kAlign * kAlign;
  void *base = nullptr;
  if (bytes >= kCachedMinBytes) {
    Cache &c = cache();
    auto best = c.blocks.end();
    for (auto it = c.blocks.begin(); it != c.blocks.end(); ++it)
      if (it->bytes >= bytes &&
          (best == c.blocks.end() || it->bytes < best->bytes))
        best = it;
    if (best != c.blocks.end()) {
      base = best->base;
      bytes = best->bytes;
      c.bytes -= bytes;
      c.blocks.erase(best);
    }
  }
  if (!base && !(base = std::aligned_alloc(kAlign, bytes)))
    return nullptr;
  *static_cast<size_t *>(base) = bytes;
  return static_cast<char *>(base) + kAlign;
}

void release(void *, void *p) {
  if (!p)
    return;
  void *base = static_cast<char *>(p) - kAlign;
  size_t bytes = *static_cast<size_t *>(base);
  if (bytes < kCachedMinBytes || bytes > kCachedBytes) {
    std::free(base);
    return;
  }
  Cache &c = cache();
  c.blocks.push_back({base, bytes});
  c.bytes += bytes;
  while (c.blocks.size() > kCachedBlocks || c.bytes > kCachedBytes) {
    c.bytes -= c.blocks.front().bytes;
    std::free(c.blocks.front().base);
    c.blocks.erase(c.blocks.begin());
  }
}
} // namespace pipeline_memory

[[maybe_unused]] const bool kHalideHooksInstalled = [] {
  halide_set_error_handler(printHalideError);
  halide_set_custom_malloc(pipeline_memory::allocate);
  halide_set_custom_free(pipeline_memory::release);
  return true;
}();

tiling::GemmTiles gemmTilesFor(int elemBytes) {
  return tiling::gemmTiles(RATRAIN_GSM_BYTES, RATRAIN_AM_BYTES, RATRAIN_CORES,
                           elemBytes);
}

/// Scratch memory that grows and is never zero-filled: what it holds is
/// written before it is read (the packing kernels write every element of a
/// panel, padding included; the staged C is written by fromHalf or by a
/// GEMM with beta = 0). A std::vector would value-initialize whatever a
/// resize grows back into, and the GEMM shapes of a step alternate: 0.8% of
/// an 85M bf16 training step went to zeroing panels about to be overwritten.
template <typename T> class Scratch {
public:
  /// At least `n` elements; the contents are lost when it grows.
  T *reserve(size_t n) {
    if (n > capacity) {
      storage.reset(new T[n]);
      capacity = n;
    }
    return storage.get();
  }

private:
  std::unique_ptr<T[]> storage;
  size_t capacity = 0;
};

/// Per-thread scratch for packed bf16 panels.
Scratch<uint16_t> &packScratch(int which) {
  thread_local Scratch<uint16_t> scratch[2];
  return scratch[which];
}

/// K cut into ceil(K / KC) panels of equal depth, a multiple of 8, so a K
/// just above a multiple of KC does not pay for a mostly-zero panel (the
/// packed GEMMs' kc_eff); the packed operands hold K padded to paddedK.
struct KPanels {
  int64_t depth, paddedK;
};
KPanels kPanels(int64_t K, int64_t kc) {
  const int64_t count = (K + kc - 1) / kc;
  const int64_t depth = ((K + count - 1) / count + 7) / 8 * 8;
  return {depth, count * depth};
}

bool anyEmpty(std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes)
    if (s <= 0)
      return true;
  return false;
}

} // namespace

void setNumThreads(int threads) { halide_set_num_threads(threads); }

namespace {
/// halide_do_par_for on the calling thread: the tasks in order.
int callerThreadParFor(void *userContext, halide_task_t task, int min, int size,
                       uint8_t *closure) {
  for (int i = min; i < min + size; ++i)
    if (int result = task(userContext, i, closure))
      return result;
  return 0;
}
} // namespace

void setCallerThreadLoops(bool enabled) {
  static halide_do_par_for_t pool = nullptr;
  if (enabled) {
    halide_do_par_for_t previous =
        halide_set_custom_do_par_for(callerThreadParFor);
    if (previous != callerThreadParFor)
      pool = previous;
  } else if (pool) {
    halide_set_custom_do_par_for(pool);
  }
}

TileConfig tileConfig() {
  tiling::GemmTiles t = gemmTilesFor(4);
  return TileConfig{RATRAIN_GSM_BYTES,
                    RATRAIN_AM_BYTES,
                    RATRAIN_CORES,
                    t.mr,
                    t.nr,
                    t.kc,
                    t.nb,
                    t.mb,
                    t.kcOnePanel,
                    gemmTilesFor(2).kcOnePanel,
                    t.packedBBytes};
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

/// An empty inner dimension: C = beta * C (beta 0 overwrites, so C may
/// hold garbage). Returns 0.
static int scaleByBeta(int64_t n, float *C, float beta) {
  for (int64_t i = 0; i < n; ++i)
    C[i] = beta == 0.0f ? 0.0f : beta * C[i];
  return 0;
}

namespace {
/// One GEMM pipeline: (a, b, c_in, beta, c), every operand row-major.
using GemmPipeline = int (*)(halide_buffer_t *, halide_buffer_t *,
                             halide_buffer_t *, float, halide_buffer_t *);
/// The three forms of one GEMM family.
struct GemmForms {
  GemmPipeline nt, nn, tn;
};
#define RATRAIN_GEMM_FORMS(SUFFIX)                                             \
  GemmForms {                                                                  \
    ratrain_k_gemm_nt_##SUFFIX, ratrain_k_gemm_nn_##SUFFIX,                    \
        ratrain_k_gemm_tn_##SUFFIX                                             \
  }

/// C = beta * C + op(A) op(B) with `forms`' pipeline for `form`: A and B seen
/// as that form's row-major operands, C (M x N, fp32 or 16-bit) read in place.
template <typename T, typename CT>
int runGemmForm(const GemmForms &forms, GemmForm form, int64_t M, int64_t N,
                int64_t K, const T *A, const T *B, CT *C, float beta) {
  auto c = dense(C, {N, M});
  switch (form) {
  case GemmForm::NT:
    return forms.nt(dense(A, {K, M}), dense(B, {K, N}), c, beta, c);
  case GemmForm::NN:
    return forms.nn(dense(A, {K, M}), dense(B, {N, K}), c, beta, c);
  case GemmForm::TN:
    return forms.tn(dense(A, {M, K}), dense(B, {N, K}), c, beta, c);
  }
  return -1;
}
} // namespace

int gemm(GemmForm form, int64_t M, int64_t N, int64_t K, const float *A,
         const float *B, float *C, float beta) {
  if (anyEmpty({M, N}))
    return 0;
  if (K <= 0)
    return scaleByBeta(M * N, C, beta);
  // Pack A into micro-tile panels of kcEff-deep k panels (K padded with
  // zeros), then B a block of columns at a time, each block multiplied by
  // the packed micro-kernel while it is in the core's cache
  // (tiling::packedBColumns). A k-inner operand (rows of K) is a transpose
  // of 32-bit words (PackWords.h).
  tiling::GemmTiles t = gemmTilesFor(4);
  const KPanels panels = kPanels(K, t.kc);
  const int64_t kcEff = panels.depth, kp = panels.paddedK;
  const int64_t mTiles = (M + t.mr - 1) / t.mr;
  const int64_t blockColumns =
      std::min(N, tiling::packedBColumns(t, panels.paddedK, 4));
  thread_local Scratch<float> scratch[2];
  float *ap = scratch[0].reserve(size_t(t.mr * kp * mTiles));
  float *bp = scratch[1].reserve(
      size_t(t.nr * kp * ((blockColumns + t.nr - 1) / t.nr)));
  auto apBuf = dense(ap, {t.mr, kp, mTiles});
  auto words = [&](const float *x, int64_t rows, int width, float *panel) {
    return packWordsTransposed(reinterpret_cast<const uint32_t *>(x), rows, K,
                               width, kp, reinterpret_cast<uint32_t *>(panel));
  };
  int status = form == GemmForm::TN
                   ? ratrain_k_pack_a_f32_kouter(dense(A, {M, K}), apBuf)
                   : words(A, M, t.mr, ap);
  if (status)
    return status;
  for (int64_t n0 = 0; n0 < N; n0 += blockColumns) {
    const int64_t n = std::min(blockColumns, N - n0);
    auto bpBuf = dense(bp, {t.nr, kp, (n + t.nr - 1) / t.nr});
    status = form == GemmForm::NT
                 ? words(B + n0 * K, n, t.nr, bp)
                 : ratrain_k_pack_b_f32_kouter(columns(B, K, N, n0, n), bpBuf);
    if (status)
      return status;
    auto c = columns(C, M, N, n0, n);
    if ((status =
             ratrain_k_gemm_f32_packed(apBuf, bpBuf, int(kcEff), c, beta, c)))
      return status;
  }
  return 0;
}

namespace {
/// A bf16 GEMM on k-pair panels of kcEff (the thread's pack scratch): A is
/// packed whole, B a block of columns at a time (tiling::packedBColumns),
/// and `multiply(ap, bp, kcEff, n0, n)` runs a ratrain_gemm_bf16_packed*
/// kernel on each block (columns [n0, n0 + n) of C) while its panels are in
/// the core's cache.
template <typename Multiply>
int packedBf16(GemmForm form, int64_t M, int64_t N, int64_t K,
               const uint16_t *A, const uint16_t *B, Multiply &&multiply) {
  tiling::GemmTiles t = gemmTilesFor(2);
  const KPanels panels = kPanels(K, t.kc);
  const int64_t kcEff = panels.depth;
  const int64_t kp = panels.paddedK / 2;
  const int64_t mTiles = (M + t.mr - 1) / t.mr;
  const int64_t blockColumns =
      std::min(N, tiling::packedBColumns(t, panels.paddedK, 2));
  uint16_t *ap = packScratch(0).reserve(size_t(2 * t.mr * kp * mTiles));
  uint16_t *bp = packScratch(1).reserve(
      size_t(2 * t.nr * kp * ((blockColumns + t.nr - 1) / t.nr)));
  auto apBuf = dense(ap, {2, t.mr, kp, mTiles});
  // A k_inner operand (rows of K) with an even K is packed as 32-bit words:
  // each k-pair of a row is already one (PackWords.h).
  const bool words = K % 2 == 0;
  auto packWords = [&](const uint16_t *x, int64_t rows, int width,
                       uint16_t *panel) {
    return packWordsTransposed(reinterpret_cast<const uint32_t *>(x), rows,
                               K / 2, width, kp,
                               reinterpret_cast<uint32_t *>(panel));
  };
  int status;
  if (form == GemmForm::TN)
    status = ratrain_k_pack_a_kouter(dense(A, {M, K}), apBuf);
  else if (words)
    status = packWords(A, M, t.mr, ap);
  else
    status = ratrain_k_pack_a_kinner(dense(A, {K, M}), apBuf);
  if (status)
    return status;
  for (int64_t n0 = 0; n0 < N; n0 += blockColumns) {
    const int64_t n = std::min(blockColumns, N - n0);
    auto bpBuf = dense(bp, {2, t.nr, kp, (n + t.nr - 1) / t.nr});
    if (form != GemmForm::NT)
      status = ratrain_k_pack_b_kouter(columns(B, K, N, n0, n), bpBuf);
    else if (words)
      status = packWords(B + n0 * K, n, t.nr, bp);
    else
      status = ratrain_k_pack_b_kinner(dense(B + n0 * K, {K, n}), bpBuf);
    if (status || (status = multiply(apBuf, bpBuf, kcEff, n0, n)))
      return status;
  }
  return 0;
}

/// packedBf16's multiply with `kernel` (a ratrain_gemm_bf16_packed*
/// pipeline) into columns [n0, n0 + n) of C (M x N, row-major), beta * C
/// folded in.
template <typename CT, typename Kernel>
auto intoColumns(Kernel kernel, CT *C, int64_t M, int64_t N, float beta) {
  return [=](Buffer<uint16_t> &ap, Buffer<uint16_t> &bp, int64_t kcEff,
             int64_t n0, int64_t n) {
    auto c = columns(C, M, N, n0, n);
    return kernel(ap, bp, static_cast<int>(kcEff), c, beta, c);
  };
}
} // namespace

int gemm16(GemmForm form, Half type, int64_t M, int64_t N, int64_t K,
           const uint16_t *A, const uint16_t *B, float *C, float beta) {
  if (anyEmpty({M, N}))
    return 0;
  if (K <= 0)
    return scaleByBeta(M * N, C, beta);
  if (type == Half::F16)
    return runGemmForm(RATRAIN_GEMM_FORMS(f16), form, M, N, K, A, B, C, beta);
  if (bf16Products() == Bf16Products::Widen)
    return runGemmForm(RATRAIN_GEMM_FORMS(bf16w), form, M, N, K, A, B, C, beta);
  // bf16: packed k-pair panels, then the vdpbf16ps kernel.
  return packedBf16(form, M, N, K, A, B,
                    intoColumns(ratrain_k_gemm_bf16_packed, C, M, N, beta));
}

int gemm16To16(GemmForm form, Half type, int64_t M, int64_t N, int64_t K,
               const uint16_t *A, const uint16_t *B, uint16_t *C, float beta) {
  if (anyEmpty({M, N}))
    return 0;
  const Bf16Products products = bf16Products();
  if (type == Half::BF16 && products == Bf16Products::Widen && K > 0 &&
      K <= gemmTilesFor(4).kcOnePanel) {
    // Widened, K in one k panel of the fp32 tiling: the same.
    return runGemmForm(RATRAIN_GEMM_FORMS(bf16w_to_bf16), form, M, N, K, A, B,
                       C, beta);
  }
  if (type == Half::BF16 && products == Bf16Products::Dot && K > 0 &&
      K <= gemmTilesFor(2).kcOnePanel) {
    // One k panel: the kernel reads C, accumulates and rounds in its
    // epilogue.
    return packedBf16(
        form, M, N, K, A, B,
        intoColumns(ratrain_k_gemm_bf16_packed_to_bf16, C, M, N, beta));
  }
  // fp16, a K deeper than one panel, or no K: through an fp32 copy.
  thread_local Scratch<float> scratch;
  float *staged = scratch.reserve(size_t(M) * size_t(N));
  if (beta != 0.0f)
    if (int status = fromHalf(type, M * N, C, staged))
      return status;
  if (int status = gemm16(form, type, M, N, K, A, B, staged, beta))
    return status;
  return toHalf(type, M * N, staged, C);
}
#undef RATRAIN_GEMM_FORMS

//===----------------------------------------------------------------------===//
// Conversion
//===----------------------------------------------------------------------===//

int toHalf(Half type, int64_t n, const float *src, uint16_t *dst) {
  if (n <= 0)
    return 0;
  if (type == Half::BF16)
    return ratrain_halide_runtime_owner(dense(src, {n}), dense(dst, {n}));
  return ratrain_k_f32_to_f16(dense(src, {n}), dense(dst, {n}));
}

int fromHalf(Half type, int64_t n, const uint16_t *src, float *dst) {
  if (n <= 0)
    return 0;
  if (type == Half::BF16)
    return ratrain_k_bf16_to_f32(dense(src, {n}), dense(dst, {n}));
  return ratrain_k_f16_to_f32(dense(src, {n}), dense(dst, {n}));
}

//===----------------------------------------------------------------------===//
// RMSNorm, RoPE, SwiGLU, add, embedding, cross-entropy
//===----------------------------------------------------------------------===//

int rmsnormForward(int64_t T, int64_t H, const float *x, const float *w,
                   float eps, float *y, float *rstd) {
  if (anyEmpty({T, H}))
    return 0;
  return ratrain_k_rmsnorm_fwd(dense(x, {H, T}), dense(w, {H}), eps,
                               dense(y, {H, T}), dense(rstd, {T}));
}

int rmsnormBackward(int64_t T, int64_t H, const float *x, const float *w,
                    const float *rstd, const float *dy, float *dx, float *dw) {
  if (anyEmpty({T, H}))
    return 0;
  return ratrain_k_rmsnorm_bwd(
      dense(x, {H, T}), dense(w, {H}), dense(rstd, {T}), dense(dy, {H, T}),
      dense(dw, {H}), dense(dx, {H, T}), dense(dw, {H}));
}

void ropeTables(int64_t maxPos, int64_t D, double theta, float *cosTable,
                float *sinTable) {
  std::vector<double> invFreq(uint64_t(D / 2));
  for (int64_t i = 0; i < D / 2; ++i)
    invFreq[uint64_t(i)] = std::pow(theta, -2.0 * double(i) / double(D));
  ropeTables(maxPos, D, invFreq.data(), cosTable, sinTable);
}

void ropeTables(int64_t maxPos, int64_t D, const double *invFreq,
                float *cosTable, float *sinTable) {
  const int64_t half = D / 2;
  for (int64_t p = 0; p < maxPos; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      double angle = double(p) * invFreq[i];
      cosTable[p * half + i] = static_cast<float>(std::cos(angle));
      sinTable[p * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

namespace {
int rope(int64_t T, int64_t heads, int64_t D, const int32_t *pos,
         int64_t maxPos, const float *cosTable, const float *sinTable,
         const float *x, float *y, float dir) {
  if (anyEmpty({T, heads, D, maxPos}) || D % 2 != 0)
    return D % 2 != 0 ? -1 : 0;
  const int64_t half = D / 2;
  return ratrain_k_rope(dense(x, {half, 2, heads, T}), dense(pos, {T}),
                        dense(cosTable, {half, maxPos}),
                        dense(sinTable, {half, maxPos}), dir,
                        dense(y, {half, 2, heads, T}));
}
} // namespace

int ropeForward(int64_t T, int64_t heads, int64_t D, const int32_t *pos,
                int64_t maxPos, const float *cosTable, const float *sinTable,
                const float *x, float *y) {
  return rope(T, heads, D, pos, maxPos, cosTable, sinTable, x, y, 1.0f);
}

int ropeBackward(int64_t T, int64_t heads, int64_t D, const int32_t *pos,
                 int64_t maxPos, const float *cosTable, const float *sinTable,
                 const float *dy, float *dx) {
  return rope(T, heads, D, pos, maxPos, cosTable, sinTable, dy, dx, -1.0f);
}

int swigluForward(int64_t T, int64_t F, const float *g, const float *u,
                  float *h) {
  if (anyEmpty({T, F}))
    return 0;
  return ratrain_k_swiglu_fwd(dense(g, {F, T}), dense(u, {F, T}),
                              dense(h, {F, T}));
}

int swigluBackward(int64_t T, int64_t F, const float *g, const float *u,
                   const float *dh, float *dg, float *du) {
  if (anyEmpty({T, F}))
    return 0;
  return ratrain_k_swiglu_bwd(dense(g, {F, T}), dense(u, {F, T}),
                              dense(dh, {F, T}), dense(dg, {F, T}),
                              dense(du, {F, T}));
}

int add(int64_t n, const float *a, const float *b, float *out) {
  if (n <= 0)
    return 0;
  return ratrain_k_add(dense(a, {n}), dense(b, {n}), dense(out, {n}));
}

int embeddingForward(int64_t T, int64_t V, int64_t H, const int32_t *ids,
                     const float *table, float *out) {
  if (anyEmpty({T, V, H}))
    return 0;
  return ratrain_k_embedding_fwd(dense(table, {H, V}), dense(ids, {T}),
                                 dense(out, {H, T}));
}

int embeddingBackward(int64_t T, int64_t V, int64_t H, const int32_t *ids,
                      const float *dout, float *dtable) {
  if (anyEmpty({T, V, H}))
    return 0;
  return ratrain_k_embedding_bwd(dense(ids, {T}), dense(dout, {H, T}),
                                 dense(dtable, {H, V}));
}

//===----------------------------------------------------------------------===//
// 16-bit activations
//===----------------------------------------------------------------------===//

namespace {
/// The bf16 or fp16 variant of a kernel: both have the same signature.
template <typename Fn> Fn *pick(Half type, Fn *bf16, Fn *f16) {
  return type == Half::BF16 ? bf16 : f16;
}
} // namespace

int rmsnormForward(Half type, int64_t T, int64_t H, const uint16_t *x,
                   const uint16_t *w, float eps, uint16_t *y, float *rstd) {
  if (anyEmpty({T, H}))
    return 0;
  return pick(type, ratrain_k_rmsnorm_fwd_bf16, ratrain_k_rmsnorm_fwd_f16)(
      dense(x, {H, T}), dense(w, {H}), eps, dense(y, {H, T}), dense(rstd, {T}));
}

int rmsnormBackward(Half type, int64_t T, int64_t H, const uint16_t *x,
                    const uint16_t *w, const float *rstd, const uint16_t *dy,
                    uint16_t *dx, uint16_t *dw) {
  if (anyEmpty({T, H}))
    return 0;
  return pick(type, ratrain_k_rmsnorm_bwd_bf16, ratrain_k_rmsnorm_bwd_f16)(
      dense(x, {H, T}), dense(w, {H}), dense(rstd, {T}), dense(dy, {H, T}),
      dense(dw, {H}), dense(dx, {H, T}), dense(dw, {H}));
}

namespace {
int rope(Half type, int64_t T, int64_t heads, int64_t D, const int32_t *pos,
         int64_t maxPos, const float *cosTable, const float *sinTable,
         const uint16_t *x, uint16_t *y, float dir) {
  if (anyEmpty({T, heads, D, maxPos}) || D % 2 != 0)
    return D % 2 != 0 ? -1 : 0;
  const int64_t half = D / 2;
  return pick(type, ratrain_k_rope_bf16, ratrain_k_rope_f16)(
      dense(x, {half, 2, heads, T}), dense(pos, {T}),
      dense(cosTable, {half, maxPos}), dense(sinTable, {half, maxPos}), dir,
      dense(y, {half, 2, heads, T}));
}
} // namespace

int ropeForward(Half type, int64_t T, int64_t heads, int64_t D,
                const int32_t *pos, int64_t maxPos, const float *cosTable,
                const float *sinTable, const uint16_t *x, uint16_t *y) {
  return rope(type, T, heads, D, pos, maxPos, cosTable, sinTable, x, y, 1.0f);
}

int ropeBackward(Half type, int64_t T, int64_t heads, int64_t D,
                 const int32_t *pos, int64_t maxPos, const float *cosTable,
                 const float *sinTable, const uint16_t *dy, uint16_t *dx) {
  return rope(type, T, heads, D, pos, maxPos, cosTable, sinTable, dy, dx,
              -1.0f);
}

int swigluForward(Half type, int64_t T, int64_t F, const uint16_t *g,
                  const uint16_t *u, uint16_t *h) {
  if (anyEmpty({T, F}))
    return 0;
  return pick(type, ratrain_k_swiglu_fwd_bf16, ratrain_k_swiglu_fwd_f16)(
      dense(g, {F, T}), dense(u, {F, T}), dense(h, {F, T}));
}

int swigluBackward(Half type, int64_t T, int64_t F, const uint16_t *g,
                   const uint16_t *u, const uint16_t *dh, uint16_t *dg,
                   uint16_t *du) {
  if (anyEmpty({T, F}))
    return 0;
  return pick(type, ratrain_k_swiglu_bwd_bf16, ratrain_k_swiglu_bwd_f16)(
      dense(g, {F, T}), dense(u, {F, T}), dense(dh, {F, T}), dense(dg, {F, T}),
      dense(du, {F, T}));
}

int add(Half type, int64_t n, const uint16_t *a, const uint16_t *b,
        uint16_t *out) {
  if (n <= 0)
    return 0;
  return pick(type, ratrain_k_add_bf16,
              ratrain_k_add_f16)(dense(a, {n}), dense(b, {n}), dense(out, {n}));
}

int embeddingForward(Half type, int64_t T, int64_t V, int64_t H,
                     const int32_t *ids, const uint16_t *table, uint16_t *out) {
  if (anyEmpty({T, V, H}))
    return 0;
  return pick(type, ratrain_k_embedding_fwd_bf16, ratrain_k_embedding_fwd_f16)(
      dense(table, {H, V}), dense(ids, {T}), dense(out, {H, T}));
}

int crossEntropy(Half type, int64_t T, int64_t V, const uint16_t *logits,
                 const int32_t *targets, float gradScale, float *loss,
                 uint16_t *dlogits) {
  if (anyEmpty({T, V}))
    return 0;
  return pick(type, ratrain_k_cross_entropy_bf16, ratrain_k_cross_entropy_f16)(
      dense(logits, {V, T}), dense(targets, {T}), gradScale, dense(loss, {T}),
      dense(dlogits, {V, T}));
}

int crossEntropy(int64_t T, int64_t V, const float *logits,
                 const int32_t *targets, float gradScale, float *loss,
                 float *dlogits) {
  if (anyEmpty({T, V}))
    return 0;
  return ratrain_k_cross_entropy(dense(logits, {V, T}), dense(targets, {T}),
                                 gradScale, dense(loss, {T}),
                                 dense(dlogits, {V, T}));
}

namespace {
/// The chunk sums of x (its dense buffer) by `pipeline`, added in double.
template <typename T, typename Pipeline>
int sumSquaresWith(Pipeline pipeline, int64_t n, const T *x, double *result) {
  *result = 0.0;
  if (n <= 0)
    return 0;
  constexpr int64_t kChunk = 16384; // the generators' `chunk`
  std::vector<float> sums((n + kChunk - 1) / kChunk);
  int err = pipeline(dense(x, {n}), dense(sums.data(), {int64_t(sums.size())}));
  if (err)
    return err;
  double total = 0.0;
  for (float s : sums)
    total += s;
  *result = total;
  return 0;
}
} // namespace

int sumSquares(int64_t n, const float *x, double *result) {
  return sumSquaresWith(ratrain_k_sum_squares, n, x, result);
}

int sumSquares(int64_t n, const uint16_t *x, Half type, double *result) {
  return sumSquaresWith(type == Half::BF16 ? ratrain_k_sum_squares_bf16
                                           : ratrain_k_sum_squares_f16,
                        n, x, result);
}

//===----------------------------------------------------------------------===//
// AdamW
//===----------------------------------------------------------------------===//

namespace {
/// The fp32 state buffers and bias corrections every AdamW pipeline takes.
struct AdamWState {
  Buffer<float> p, m, v;
  float bc1, bc2;
};
AdamWState adamwState(int64_t n, float *p, float *m, float *v,
                      const AdamWParams &params) {
  const double step = double(params.step < 1 ? 1 : params.step);
  return {dense(p, {n}), dense(m, {n}), dense(v, {n}),
          float(1.0 - std::pow(double(params.beta1), step)),
          float(1.0 - std::pow(double(params.beta2), step))};
}

/// Runs an AdamW pipeline on n elements in place: p, m, v and, for the
/// pipelines with a 16-bit view, `view` (`views` is 0 or 1 extra outputs).
template <typename G, typename Pipeline, typename... Views>
int runAdamW(Pipeline pipeline, int64_t n, float *p, const G *g, float *m,
             float *v, const AdamWParams &params, Views... views) {
  AdamWState s = adamwState(n, p, m, v, params);
  return pipeline(s.p, dense(g, {n}), s.m, s.v, params.lr, params.beta1,
                  params.beta2, params.eps, params.weightDecay, s.bc1, s.bc2,
                  params.gradScale, s.p, s.m, s.v, dense(views, {n})...);
}

/// runAdamW for the averaged pipelines (`average=true`: the own part and
/// the member count follow the scalars).
template <typename G, typename Pipeline, typename... Views>
int runAdamWAveraged(Pipeline pipeline, int64_t n, float *p, const G *others,
                     const G *own, int members, float *m, float *v,
                     const AdamWParams &params, Views... views) {
  AdamWState s = adamwState(n, p, m, v, params);
  return pipeline(s.p, dense(others, {n}), s.m, s.v, params.lr, params.beta1,
                  params.beta2, params.eps, params.weightDecay, s.bc1, s.bc2,
                  params.gradScale, dense(own, {n}), float(members), s.p, s.m,
                  s.v, dense(views, {n})...);
}
} // namespace

int adamw(int64_t n, float *p, const float *g, float *m, float *v,
          const AdamWParams &params, uint16_t *view, Half viewType) {
  if (n <= 0)
    return 0;
  if (!view)
    return runAdamW(ratrain_k_adamw, n, p, g, m, v, params);
  return runAdamW(viewType == Half::BF16 ? ratrain_k_adamw_bf16
                                         : ratrain_k_adamw_f16,
                  n, p, g, m, v, params, view);
}

int adamw(int64_t n, float *p, const uint16_t *g, Half gradType, float *m,
          float *v, const AdamWParams &params, uint16_t *view, Half viewType) {
  if (n <= 0)
    return 0;
  if (!view || viewType != gradType) {
    std::vector<float> widened(static_cast<size_t>(n));
    if (int err = fromHalf(gradType, n, g, widened.data()))
      return err;
    return adamw(n, p, widened.data(), m, v, params, view, viewType);
  }
  return runAdamW(gradType == Half::BF16 ? ratrain_k_adamw_bf16_grad16
                                         : ratrain_k_adamw_f16_grad16,
                  n, p, g, m, v, params, view);
}

int adamwAveraged(int64_t n, float *p, const float *others, const float *own,
                  int members, float *m, float *v, const AdamWParams &params) {
  if (members < 2)
    return -1;
  if (n <= 0)
    return 0;
  return runAdamWAveraged(ratrain_k_adamw_average, n, p, others, own, members,
                          m, v, params);
}

int adamwAveraged(int64_t n, float *p, const uint16_t *others,
                  const uint16_t *own, Half gradType, int members, float *m,
                  float *v, const AdamWParams &params, uint16_t *view,
                  Half viewType) {
  if (members < 2 || gradType != Half::BF16 || !view || viewType != Half::BF16)
    return -1;
  if (n <= 0)
    return 0;
  return runAdamWAveraged(ratrain_k_adamw_bf16_grad16_average, n, p, others,
                          own, members, m, v, params, view);
}

} // namespace ratrain::kernels
