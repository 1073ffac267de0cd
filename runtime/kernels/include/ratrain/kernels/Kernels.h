//===- Kernels.h - Halide kernels of a LLaMA decoder layer ------*- C++ -*-===//
//
// Plain C++ entry points of the AOT-compiled Halide kernels: everything a
// LLaMA decoder layer (RMSNorm, QKV/O projections, rotary embedding, causal
// grouped-query attention, SwiGLU MLP, residual adds), the embedding, the
// final norm, the LM head, the softmax cross-entropy loss and AdamW need,
// forward and backward.
//
// Conventions
//  - All tensors are dense, row-major, on raw pointers; sizes are int64_t.
//  - Activations are [T, X] with T = B * S tokens (batch-major, sequence
//    inside), e.g. q is [T, Hq * D] with head h at columns [h*D, (h+1)*D).
//  - fp32 arithmetic everywhere. GEMM operands may be 16-bit (bf16 or fp16,
//    stored as uint16_t bit patterns) with fp32 accumulation and fp32
//    output; attention, RMSNorm, RoPE, SwiGLU, the residual add, the
//    embedding lookup and cross-entropy also come in 16-bit variants that read
//    and write the activations in that type ("16-bit activations" below). This
//    is the mixed-precision scheme of the training lifecycle, where AdamW keeps
//    the fp32 master weights and re-materializes the 16-bit parameter view.
//  - "Overwritten" outputs are fully written; "accumulated" outputs are
//    read and added to (dst += ...), so they must be initialized (zero them
//    at the start of an optimizer step).
//  - Unless said otherwise, outputs must not alias inputs.
//  - Functions return 0 on success and a nonzero Halide error code otherwise
//    (the message has then been printed to stderr); size errors (e.g. an
//    unsupported head dimension) return -1 without running anything.
//  - Each tensor must have fewer than 2^31 elements (Halide indexes with
//    int32); a larger one makes the call return an error.
//  - Kernels are multi-threaded through Halide's thread pool (one worker per
//    core by default; see setNumThreads).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_KERNELS_KERNELS_H
#define RATRAIN_KERNELS_KERNELS_H

#include <cstdint>
#include <optional>

namespace ratrain::kernels {

/// Number of the Halide thread pool's workers (0 = one per core). Call
/// before the first kernel, or between kernels.
void setNumThreads(int threads);

/// Runs the kernels' parallel loops on the calling thread, one task after
/// another (`true`), or on the Halide thread pool (`false`, the default).
/// The pool is one per process behind one lock: threads of one process that
/// each stand for a single-core rank (ratrain-calibrate timing every
/// cluster at once) would otherwise contend for it as separate rank
/// processes never do. Call between kernels; process-wide.
void setCallerThreadLoops(bool enabled);

/// The machine parameters the kernels were tiled for (from the machine file
/// at build time).
struct TileConfig {
  int64_t gsmBytes;       ///< shared (GSM / L3-analog) bytes per cluster
  int64_t amBytesPerCore; ///< private (AM / L2-analog) bytes per core
  int cores;              ///< cores of a cluster
  int gemmMr, gemmNr;     ///< GEMM register tile (rows x columns)
  int gemmKc;             ///< k-depth of a staged panel
  int gemmNb, gemmMb;     ///< B panel columns, AM block rows
  /// Deepest K a GEMM into a 16-bit C runs in one k panel (rounded once in
  /// its epilogue): with bf16 widened to fp32 panels, and on the dot
  /// product's bf16 panels.
  int gemmKcOnePanelWidened, gemmKcOnePanelDot;
  /// Packed bytes of B (every k panel) the packed GEMMs pack and multiply
  /// at a time: blocks of that many bytes' whole NR-wide column strips.
  int64_t gemmPackedBBytes;
};
/// Returns the tile configuration compiled into the kernels.
TileConfig tileConfig();

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

/// The three GEMM forms of training (all operands row-major):
///   NT: C[M,N] = A[M,K] * B[N,K]^T   forward      Y  = X  W^T
///   NN: C[M,N] = A[M,K] * B[K,N]     input grad   dX = dY W
///   TN: C[M,N] = A[K,M]^T * B[K,N]   weight grad  dW = dY^T X
enum class GemmForm { NT, NN, TN };
/// Element type of 16-bit GEMM operands.
enum class Half { BF16, F16 };

/// fp32 GEMM: C = beta * C + op(A) * op(B). beta = 0 overwrites C (C is not
/// read, it may hold garbage); beta = 1 accumulates (gradient accumulation,
/// or the fused residual add of an output projection). C must not alias A
/// or B.
int gemm(GemmForm form, int64_t M, int64_t N, int64_t K, const float *A,
         const float *B, float *C, float beta = 0.0f);

/// How the bf16 GEMMs and the bf16 attention compute their products.
enum class Bf16Products {
  /// On AVX512-BF16's vdpbf16ps (pairs of bf16 products added into fp32).
  Dot,
  /// Widened to fp32 where the operands are packed or staged, multiplied on
  /// the fp32 FMA units (as the fp16 kernels always do).
  Widen,
};
/// The choice of this process, made once: RATRAIN_BF16_PRODUCTS=dot|widen
/// when set, else `Dot` on AMD CPUs with AVX512-BF16 (Zen 4 and 5 run
/// vdpbf16ps at twice the fp32 FMA rate) and `Widen` everywhere else (Intel
/// CPUs from Cooper Lake to Granite Rapids issue vdpbf16ps at half the fp32
/// FMA rate; CPUs without AVX512-BF16 have no dot product). It depends on the
/// CPU only, never on a timing, so a run's bits do not change between runs
/// on one machine. An unknown RATRAIN_BF16_PRODUCTS is a fatal error.
Bf16Products bf16Products();
/// "dot" or "widen".
const char *bf16ProductsName(Bf16Products products);
/// The path named "dot" or "widen"; nullopt for any other name.
std::optional<Bf16Products> parseBf16Products(const char *name);
/// What an invalid RATRAIN_BF16_PRODUCTS is told it should be.
inline constexpr const char *kBf16ProductsExpected =
    "expected 'dot' (vdpbf16ps) or 'widen' (fp32 FMA on widened operands)";
/// Overrides the choice for the rest of the process (calibration, tests).
void setBf16Products(Bf16Products products);

/// 16-bit GEMM (both operands of type `type`), fp32 accumulation and fp32
/// C, same semantics as the fp32 gemm. bf16 runs on AVX512-BF16
/// (vdpbf16ps) or widened to fp32 (bf16Products()); fp16 operands are
/// always widened to fp32 while they are packed. Results equal an fp32 GEMM
/// of the (exactly representable) 16-bit inputs up to fp32 summation-order
/// rounding.
int gemm16(GemmForm form, Half type, int64_t M, int64_t N, int64_t K,
           const uint16_t *A, const uint16_t *B, float *C, float beta = 0.0f);

/// 16-bit GEMM into a 16-bit C of the same type: C = beta * C + op(A) *
/// op(B) with fp32 accumulation, rounded to `type` once (nearest even). The
/// same bits as gemm16 into an fp32 copy of C followed by toHalf, without
/// the copy: with bf16 and K within one k panel of the kernels' tiling
/// (TileConfig::gemmKcOnePanel*) the kernel reads and writes C itself;
/// otherwise it stages C in fp32 internally. C must not alias A or B.
int gemm16To16(GemmForm form, Half type, int64_t M, int64_t N, int64_t K,
               const uint16_t *A, const uint16_t *B, uint16_t *C,
               float beta = 0.0f);

//===----------------------------------------------------------------------===//
// Precision conversion (round to nearest even)
//===----------------------------------------------------------------------===//

/// dst[i] = bf16(src[i]) or fp16(src[i]), i < n.
int toHalf(Half type, int64_t n, const float *src, uint16_t *dst);
/// dst[i] = float(src[i]), i < n.
int fromHalf(Half type, int64_t n, const uint16_t *src, float *dst);

//===----------------------------------------------------------------------===//
// Attention (causal, grouped-query)
//===----------------------------------------------------------------------===//

/// Head dimensions the attention kernels are built for: 32, 64 and 128.
bool attentionSupportsHeadDim(int64_t headDim);

/// The ALiBi slopes of a model with `heads` attention heads, as Baichuan2
/// and BLOOM compute them (`_get_alibi_slopes` / `_get_interleave`): with n
/// the largest power of two <= heads, head k < n gets 2^(-8 (k+1) / n) and
/// head n + m gets 2^(-4 (2m+1) / n) (every other slope of 2n heads).
///   slopes [heads]  overwritten
void alibiSlopes(int64_t heads, float *slopes);

/// Causal attention forward with GQA (Hq % Hkv == 0, query head h reads KV
/// head h / (Hq / Hkv)).
///   q   [B*S, Hq*D]    k, v [B*S, Hkv*D]
///   out [B*S, Hq*D]    overwritten
///   lse [B, Hq, S]     overwritten; log-sum-exp of the scaled scores of
///                      each query row, saved for the backward pass
/// scale is usually 1/sqrt(D). Save q, k, v, out and lse for backward.
/// With `slopes` ([Hq], see alibiSlopes) the scores get the ALiBi bias
///   score(h, i, j) = scale * q_i . k_j + slopes[h] * (j - i),  j <= i
/// (Baichuan-13B, BLOOM; no rotary embedding then); null: no bias.
/// With `window` W > 0 (Mistral's sliding window) query i attends to keys
/// i - W < j <= i only; 0: plain causal attention.
int attentionForward(int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                     const float *q, const float *k, const float *v,
                     float scale, float *out, float *lse,
                     const float *slopes = nullptr, int64_t window = 0);

/// Causal attention backward; recomputes the probabilities tile by tile
/// from q, k and the saved lse (no S x S matrix is stored), in blocks of
/// keys (FlashAttention-2's loop: S and dP once per score). Runs on the
/// kernels' thread pool, one task per (batch, KV head), each with 5 S D + S
/// floats of scratch of its own.
///   dout [B*S, Hq*D]    gradient of out
///   dq [B*S, Hq*D], dk, dv [B*S, Hkv*D]  overwritten
/// `slopes` and `window` must be the forward's.
int attentionBackward(int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                      const float *q, const float *k, const float *v,
                      const float *out, const float *dout, const float *lse,
                      float scale, float *dq, float *dk, float *dv,
                      const float *slopes = nullptr, int64_t window = 0);

//===----------------------------------------------------------------------===//
// RMSNorm
//===----------------------------------------------------------------------===//

/// y[t,:] = x[t,:] * rstd[t] * w,  rstd[t] = 1/sqrt(mean(x[t,:]^2) + eps).
///   x, y [T, H] (y overwritten, may alias x)   w [H]
///   rstd [T] overwritten, saved for backward.
int rmsnormForward(int64_t T, int64_t H, const float *x, const float *w,
                   float eps, float *y, float *rstd);

/// RMSNorm backward.
///   dx [T, H] overwritten
///   dw [H]    accumulated: dw += sum_t dy * x * rstd
int rmsnormBackward(int64_t T, int64_t H, const float *x, const float *w,
                    const float *rstd, const float *dy, float *dx, float *dw);

//===----------------------------------------------------------------------===//
// Rotary embedding (LLaMA / HF "rotate half" convention)
//===----------------------------------------------------------------------===//

/// Fills the rotary tables for positions [0, maxPos) and head dim D:
/// cos/sin[p, i] = cos/sin(p * theta^(-2i/D)), i < D/2 (computed in double).
void ropeTables(int64_t maxPos, int64_t D, double theta, float *cosTable,
                float *sinTable);
/// The same with given inverse frequencies invFreq[i], i < D/2 (a scaled
/// RoPE: HF rope_scaling): cos/sin[p, i] = cos/sin(p * invFreq[i]).
void ropeTables(int64_t maxPos, int64_t D, const double *invFreq,
                float *cosTable, float *sinTable);

/// Rotates every head of x [T, heads, D] by the angle of its token's
/// position (pos [T], int32, each < maxPos): for i < D/2,
///   y[i] = x[i] cos - x[i+D/2] sin,  y[i+D/2] = x[i+D/2] cos + x[i] sin.
/// y overwritten; y must not alias x.
int ropeForward(int64_t T, int64_t heads, int64_t D, const int32_t *pos,
                int64_t maxPos, const float *cosTable, const float *sinTable,
                const float *x, float *y);

/// The transpose (inverse) rotation: dx from dy. dx must not alias dy.
int ropeBackward(int64_t T, int64_t heads, int64_t D, const int32_t *pos,
                 int64_t maxPos, const float *cosTable, const float *sinTable,
                 const float *dy, float *dx);

//===----------------------------------------------------------------------===//
// SwiGLU MLP activation
//===----------------------------------------------------------------------===//

/// h = silu(g) * u = g * sigmoid(g) * u; g, u, h [T, F]; h overwritten.
/// Save g and u for backward.
int swigluForward(int64_t T, int64_t F, const float *g, const float *u,
                  float *h);

/// dg = dh * u * s * (1 + g (1 - s)), du = dh * g * s, s = sigmoid(g);
/// dg, du [T, F] overwritten.
int swigluBackward(int64_t T, int64_t F, const float *g, const float *u,
                   const float *dh, float *dg, float *du);

//===----------------------------------------------------------------------===//
// Residual add
//===----------------------------------------------------------------------===//

/// out[i] = a[i] + b[i], i < n; out may alias a or b. (For the residual
/// after a projection GEMM, prefer gemm's beta = 1, which fuses the add.)
int add(int64_t n, const float *a, const float *b, float *out);

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

/// out[t, :] = table[ids[t], :]; table [V, H], ids [T] (clamped to
/// [0, V)), out [T, H] overwritten.
int embeddingForward(int64_t T, int64_t V, int64_t H, const int32_t *ids,
                     const float *table, float *out);

/// dtable[ids[t], :] += dout[t, :] for every t (duplicates accumulate);
/// dtable [V, H] accumulated.
int embeddingBackward(int64_t T, int64_t V, int64_t H, const int32_t *ids,
                      const float *dout, float *dtable);

//===----------------------------------------------------------------------===//
// 16-bit activations
//===----------------------------------------------------------------------===//

// The same kernels on bf16 / fp16 activations (uint16_t bit patterns of
// `type`), read and written as they are, fp32 inside: each result is the
// fp32 kernel's, rounded once to `type` (to nearest even, as toHalf), so
// fromHalf -> fp32 kernel -> toHalf gives the same bits. Shapes, aliasing
// and accumulation are as for the fp32 kernels above; rstd stays fp32.

int rmsnormForward(Half type, int64_t T, int64_t H, const uint16_t *x,
                   const uint16_t *w, float eps, uint16_t *y, float *rstd);
/// dw is accumulated in fp32 and rounded once: dw = type(dw + sum_t ...).
int rmsnormBackward(Half type, int64_t T, int64_t H, const uint16_t *x,
                    const uint16_t *w, const float *rstd, const uint16_t *dy,
                    uint16_t *dx, uint16_t *dw);
int ropeForward(Half type, int64_t T, int64_t heads, int64_t D,
                const int32_t *pos, int64_t maxPos, const float *cosTable,
                const float *sinTable, const uint16_t *x, uint16_t *y);
int ropeBackward(Half type, int64_t T, int64_t heads, int64_t D,
                 const int32_t *pos, int64_t maxPos, const float *cosTable,
                 const float *sinTable, const uint16_t *dy, uint16_t *dx);
int swigluForward(Half type, int64_t T, int64_t F, const uint16_t *g,
                  const uint16_t *u, uint16_t *h);
int swigluBackward(Half type, int64_t T, int64_t F, const uint16_t *g,
                   const uint16_t *u, const uint16_t *dh, uint16_t *dg,
                   uint16_t *du);
int add(Half type, int64_t n, const uint16_t *a, const uint16_t *b,
        uint16_t *out);
/// Attention on 16-bit q, k, v, out, dout, dq, dk, dv (lse and the slopes
/// fp32). Every head dimension attentionSupportsHeadDim accepts. bf16 runs
/// its products on vdpbf16ps where bf16Products() is Dot, with the
/// probabilities and dS rounded to bf16 (FlashAttention's bf16 numerics; the
/// backward in key blocks, as for the other types); otherwise, and
/// for fp16, it computes in fp32 between a widening load and one rounding
/// store.
int attentionForward(Half type, int64_t B, int64_t S, int64_t Hq, int64_t Hkv,
                     int64_t D, const uint16_t *q, const uint16_t *k,
                     const uint16_t *v, float scale, uint16_t *out, float *lse,
                     const float *slopes = nullptr, int64_t window = 0);
int attentionBackward(Half type, int64_t B, int64_t S, int64_t Hq, int64_t Hkv,
                      int64_t D, const uint16_t *q, const uint16_t *k,
                      const uint16_t *v, const uint16_t *out,
                      const uint16_t *dout, const float *lse, float scale,
                      uint16_t *dq, uint16_t *dk, uint16_t *dv,
                      const float *slopes = nullptr, int64_t window = 0);
/// Copies the rows' bits.
int embeddingForward(Half type, int64_t T, int64_t V, int64_t H,
                     const int32_t *ids, const uint16_t *table, uint16_t *out);
/// loss stays fp32; dlogits may alias logits.
int crossEntropy(Half type, int64_t T, int64_t V, const uint16_t *logits,
                 const int32_t *targets, float gradScale, float *loss,
                 uint16_t *dlogits);

//===----------------------------------------------------------------------===//
// Softmax cross-entropy (fused forward + backward)
//===----------------------------------------------------------------------===//

/// For logits [T, V] and targets [T] (int32; a target outside [0, V), e.g.
/// -100, ignores the row):
///   loss[t]       = logsumexp(logits[t]) - logits[t, target[t]]   (0 if
///                   ignored), overwritten
///   dlogits[t, v] = gradScale * (softmax(logits[t])[v] - [v == target[t]])
///                   (0 if ignored), overwritten; may alias logits.
/// gradScale is typically 1 / (number of non-ignored tokens in the batch).
int crossEntropy(int64_t T, int64_t V, const float *logits,
                 const int32_t *targets, float gradScale, float *loss,
                 float *dlogits);

//===----------------------------------------------------------------------===//
// AdamW with the 16-bit parameter view
//===----------------------------------------------------------------------===//

/// AdamW hyper-parameters. step is the 1-based step count (bias correction).
struct AdamWParams {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weightDecay = 0.0f;
  int64_t step = 1;
  /// Multiplies the gradient first (1 / accumulation steps, clipping).
  float gradScale = 1.0f;
};

/// One AdamW step on n parameters, in place (PyTorch semantics, decoupled
/// weight decay): p (fp32 master), m, v updated; g read. If view is not
/// null, it is overwritten with the new parameters rounded to `viewType`:
/// the 16-bit parameter view the next forward reads (view re-materialization
/// in the training-state lifecycle).
int adamw(int64_t n, float *p, const float *g, float *m, float *v,
          const AdamWParams &params, uint16_t *view = nullptr,
          Half viewType = Half::BF16);

/// adamw on 16-bit gradients (the bits of `gradType`): the update of their
/// fp32 values, bit for bit, without an fp32 copy of them. The kernels read
/// them as they are when `view` is of the same type (a 16-bit model's
/// update); other combinations widen them first.
int adamw(int64_t n, float *p, const uint16_t *g, Half gradType, float *m,
          float *v, const AdamWParams &params, uint16_t *view = nullptr,
          Half viewType = Half::BF16);

/// adamw on a gradient a reduce-scatter left in two parts (its last
/// reduction deferred to the update, mt3k.reduce_scatter `leave_own`):
/// `others`, the sum of the other members' contributions to this shard, and
/// `own`, this rank's; the update reads the average over `members`
/// (>= 2) with the runtime's rounding, (others + own) / members in fp32, so
/// it makes the update adamw would make on the reduce-scatter's averaged
/// shard, bit for bit, without that pass over the shard. Returns -1 for
/// members < 2.
int adamwAveraged(int64_t n, float *p, const float *others, const float *own,
                  int members, float *m, float *v, const AdamWParams &params);

/// The same on bf16 gradients (the sum rounded to bf16, then the quotient),
/// refreshing a bf16 `view`: a bf16 model's update. Returns -1 for other
/// element types or members < 2.
int adamwAveraged(int64_t n, float *p, const uint16_t *others,
                  const uint16_t *own, Half gradType, int members, float *m,
                  float *v, const AdamWParams &params, uint16_t *view,
                  Half viewType);

/// *result = sum_i x[i]^2 over n values (fp32 squares summed in fp32 per
/// 16 Ki-element chunk, chunks added in double): the squared global norm for
/// gradient clipping, e.g. gradScale = min(1, maxNorm / sqrt(sum over all
/// gradients)) passed to adamw.
int sumSquares(int64_t n, const float *x, double *result);
/// The same over 16-bit values (the bits of `type`), widened in the kernel:
/// the result of sumSquares on their fp32 values, bit for bit.
int sumSquares(int64_t n, const uint16_t *x, Half type, double *result);

} // namespace ratrain::kernels

#endif // RATRAIN_KERNELS_KERNELS_H
