//===- AttentionCommon.h - What the attention generators share --*- C++ -*-===//
//
// The tile constants, the query-block size, the generator parameters and the
// masking / ALiBi helpers of the attention generators: the fp32-arithmetic
// forward of AttentionGenerator.cpp and key-block backward of
// AttentionBackwardGenerator.cpp (fp32 activations, and 16-bit ones widened
// to fp32), and the bf16 pipelines of AttentionBf16Generator.cpp, whose
// products run on vdpbf16ps. See AttentionGenerator.cpp for the layouts and
// the tiling.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_KERNELS_GENERATORS_ATTENTIONCOMMON_H
#define RATRAIN_KERNELS_GENERATORS_ATTENTIONCOMMON_H

#include "ElementType.h"
#include "Halide.h"
#include "SafeExp.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace ratrain::kernels::generators::attention {

using namespace Halide;

inline constexpr int kLanes = 16;
inline constexpr int kKeyTile = 32;

using ratrain::kernels::generators::safeExp;

inline int queryBlock(int64_t amBytes, int maxSeq) {
  int64_t qb = amBytes / (4 * 4 * int64_t(maxSeq));
  qb = (qb / kKeyTile) * kKeyTile;
  return static_cast<int>(
      std::min<int64_t>(std::max<int64_t>(qb, kKeyTile), 256));
}

/// Parameters shared by the three attention generators; `Storage` is the
/// element storage of the activations (float, or uint16_t for bf16 / fp16).
template <typename Self, typename Storage>
class AttentionBase : public Generator<Self> {
public:
  template <typename T>
  using GP = typename Generator<Self>::template GeneratorParam<T>;
  template <typename T> using In = typename Generator<Self>::template Input<T>;
  template <typename T>
  using Out = typename Generator<Self>::template Output<T>;
  static constexpr bool kHalf = std::is_same_v<Storage, uint16_t>;

  GP<Elem> elem{"elem", kHalf ? Elem::BF16 : Elem::F32, elemNames()};
  GP<int> headDim{"head_dim", 128};
  GP<int> maxSeq{"max_seq", 2048};
  GP<int> gsmBytes{"gsm_bytes", 6 << 20};
  GP<int> amBytes{"am_bytes", 768 << 10};
  GP<int> cores{"cores", 2};
  GP<bool> alibi{"alibi", false};

  /// The per-query-head ALiBi slopes (h); only with `alibi`.
  GeneratorInput<Buffer<float>> *slopes = nullptr;

  void configure() {
    _halide_user_assert((Elem(elem) == Elem::F32) == !kHalf)
        << "elem must match the storage type\n";
    if (alibi)
      slopes = this->template add_input<Buffer<float>>("slopes", 1);
  }

  /// The fp32 value of a stored activation, and the stored form of a result.
  Expr load(Expr stored) { return widen(stored, elem); }
  Expr store(Expr value) { return narrow(value, elem); }

  /// `score` of query row `i`, key `j` in head `h` plus its ALiBi bias;
  /// `score` itself without `alibi` (the plain pipelines stay as they are).
  Expr withBias(Expr score, Expr h, Expr i, Expr j) {
    if (!alibi)
      return score;
    return score + (*slopes)(h)*cast<float>(j - i);
  }

  /// Whether key `j` is visible to query `i`: causal, and with a sliding
  /// window `w` > 0 fewer than `w` tokens back.
  static Expr visible(Expr j, Expr i, Expr w) {
    return j <= i && (w <= 0 || i - j < w);
  }

  /// The slopes buffer's constraints: unit stride, min 0.
  void constrainSlopes() {
    if (alibi)
      slopes->dim(0).set_stride(1).set_min(0);
  }
};

/// The output schedule every attention pass shares: rows `s` in blocks of
/// `block` rows (loop `blk`: a query block, or the dk/dv pass's key block),
/// each block in chunks of `rows` rows and d in `dc`-wide vector groups;
/// heads and batch fused into the parallel loop `hb`.
inline void scheduleRowBlocks(Func out, Var d, Var s, Var h, Var b, Var blk,
                              Var hb, int D, int block, int rows, int dc) {
  Var si("si"), sc0("sc0"), sr("sr"), dco("dc"), di("di");
  out.bound(d, 0, D)
      .split(s, blk, si, block, TailStrategy::GuardWithIf)
      .split(si, sc0, sr, rows, TailStrategy::GuardWithIf)
      .split(d, dco, di, dc)
      .reorder(di, sr, dco, sc0, blk, h, b)
      .fuse(h, b, hb)
      .parallel(hb)
      .vectorize(di, kLanes)
      .unroll(di);
}

/// Schedules a query block's row maximum `mx(i, h, b)` over the key RDom
/// `rj` (rj.x the 32 keys of a tile, rj.y the tiles), computed per query
/// block `qb` of `out`: 16 lane maxima per row, each tile's two vectors
/// folded in lane by lane, and one reduction across the lanes at the end of
/// the row. Max is exact in any order, so this is the row max an atomic
/// vectorized update gives, without a horizontal reduction (and a store and
/// reload of the running maximum) per 16 keys: the bf16 forward at S 256 3%
/// faster (docs/kernels.md).
inline void scheduleRowMax(Func mx, RDom rj, Func out, Var qb) {
  RVar rxo("rxo"), rxi("rxi");
  Var u("u");
  mx.compute_at(out, qb);
  Func lanes = mx.update().split(rj.x, rxo, rxi, kLanes).rfactor(rxi, u);
  // The lanes of a row adjacent in memory (rfactor appends u last).
  std::vector<Var> storage = lanes.args();
  storage.erase(std::find_if(storage.begin(), storage.end(),
                             [&](const Var &v) { return v.same_as(u); }));
  storage.insert(storage.begin(), u);
  lanes.reorder_storage(storage).compute_at(out, qb).vectorize(u, kLanes);
  lanes.update().vectorize(u, kLanes);
  mx.update().atomic().vectorize(rxi, kLanes);
}

/// Schedules the in-place add of a key block's dk and dv into the runtime's
/// fp32 accumulators `dkv(d, j)` (the key-block backward pipelines): chunks
/// of `rows` keys, d in `dc`-wide vector groups.
inline void scheduleBlockAccumulation(Func dkv, Var d, Var j, int rows,
                                      int dc) {
  Var dco("dco"), dci("dci"), jco("jco"), jri("jri");
  dkv.update()
      .split(j, jco, jri, rows, TailStrategy::GuardWithIf)
      .split(d, dco, dci, dc)
      .reorder(dci, jri, dco, jco)
      .vectorize(dci, kLanes)
      .unroll(dci);
}

/// The AttentionBase members the generators use: names of a dependent base
/// class are not found by unqualified lookup in a class template.
#define RATRAIN_ATTENTION_BASE_MEMBERS(Base)                                   \
  using Base::alibi;                                                           \
  using Base::amBytes;                                                         \
  using Base::constrainSlopes;                                                 \
  using Base::headDim;                                                         \
  using Base::kHalf;                                                           \
  using Base::load;                                                            \
  using Base::maxSeq;                                                          \
  using Base::store;                                                           \
  using Base::visible;                                                         \
  using Base::withBias;                                                        \
  template <typename T> using In = typename Base::template In<T>;              \
  template <typename T> using Out = typename Base::template Out<T>;

/// The inputs of both backward passes, in their AOT signature's order.
#define RATRAIN_ATTENTION_BACKWARD_INPUTS(Storage)                             \
  In<Buffer<Storage>> q{"q", 4};                                               \
  In<Buffer<Storage>> k{"k", 4};                                               \
  In<Buffer<Storage>> v{"v", 4};                                               \
  In<Buffer<Storage>> o{"o", 4};                                               \
  In<Buffer<Storage>> dO{"dout", 4};                                           \
  In<Buffer<float>> lse{"lse", 3};                                             \
  In<float> scale{"scale"};                                                    \
  In<int> window{"window"};

/// The trailing inputs and the outputs of both key-block backward pipelines
/// (AttentionBackwardGenerator.cpp, AttentionBf16Generator.cpp), in their
/// AOT signature's order: delta and lse of the block's query rows [i0, i1),
/// its k and v rows (d, j) for keys [j0, j1), the scale, window and ALiBi
/// slope (0 without), and the fp32 accumulators the pipeline adds into: dq
/// (`dqDims` dimensions, unscaled) and (dk, dv) as (d, j), dk unscaled.
#define RATRAIN_ATTENTION_BLOCK_TAIL(Storage, dqDims)                          \
  In<Buffer<float>> delta{"delta", 1};                                         \
  In<Buffer<float>> lse{"lse", 1};                                             \
  In<Buffer<Storage>> k{"k", 2};                                               \
  In<Buffer<Storage>> v{"v", 2};                                               \
  In<float> scale{"scale"};                                                    \
  In<int> window{"window"};                                                    \
  In<float> slope{"slope"};                                                    \
  Out<Func> dq{"dq", Float(32), dqDims};                                       \
  Out<Func> dkv{"dkv", {Float(32), Float(32)}, 2};

} // namespace ratrain::kernels::generators::attention

#endif // RATRAIN_KERNELS_GENERATORS_ATTENTIONCOMMON_H
