//===- AttentionBackwardGenerator.cpp - Attention backward, one key block -===//
//
// The attention backward as FlashAttention-2 runs it: for each block of key
// rows, one pass over the queries that can see them computes the scores S
// and dP = dO V^T once, the probabilities P and dS = P (dP - delta), and
// from them all three gradients:
//
//   dk(block) = dS^T Q,   dv(block) = P^T dO,   dq(queries) += dS K(block)
//
// Five matrix products per score (the two-pass form, a dq pass and a dk/dv
// pass that each recompute S and dP, takes seven). dq is a sum over key
// blocks, which FlashAttention accumulates with atomics. A Halide pipeline
// cannot scatter into another output's loop nest, so the loop over key
// blocks lives in the runtime (lib/Attention.cpp, attentionBackward): one call
// of this pipeline is one key block [j0, j1) of one query head, against the
// query rows [i0, i1) that see it, and it *adds* into fp32 accumulators the
// runtime passes as its outputs (the pure definitions are `undef`, the
// updates read what the buffer holds: Halide's supported in-place form).
// The runtime zeroes them per head, walks the key blocks in order (a dq row
// is final once the block holding its own key has run) and rounds the sums
// into the activations' storage.
//
// Buffers are views with global row coordinates: q, o, dO, lse and dq rows
// [i0, i1) of one query head, k and v rows [j0, j1) of its KV head, dk and
// dv accumulators for rows [j0, j1). The causal mask, the sliding window and
// the ALiBi bias (a runtime slope; 0 for RoPE models, which adds nothing)
// use those coordinates.
//
// Inside, everything of a block stays in AM: P and dS for the block's keys
// (KB keys x the query rows, fp32; the runtime sizes KB so that they take
// at most AM, lib/Attention.cpp), the query block's q and dO rows widened to
// fp32 (and delta = rowsum(dO * O)), and the key block's k and v rows in
// the two layouts the products read. The products run on register tiles as
// the other attention kernels' (16 zmm accumulators):
//   S, dP    8 query rows x 32 keys, keys on the lanes
//   dk, dv   4 key rows x 32 head dims each, summed over 32-query tiles
//   dq       4 query rows x 64 head dims, summed over the block's keys
//
// Element type: `float`, or `uint16_t` holding bf16 / fp16 bits (GeneratorParam
// `elem`): the operands are widened where they are staged, all arithmetic
// is fp32 and the accumulators are fp32; the runtime rounds once at the end.
// (The bf16 kernels whose products run on vdpbf16ps have their own prepare
// and block pipelines in the pair layouts, AttentionBf16Generator.cpp.)
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"

using namespace Halide;
using namespace ratrain::kernels::generators::attention;

namespace {

/// The first step of a query head's backward: its q and dO rows widened to
/// fp32 into dense [S, D] copies the key blocks read, and
/// delta = rowsum(dO * O).
template <typename Storage>
class AttentionBackwardPrepare
    : public AttentionBase<AttentionBackwardPrepare<Storage>, Storage> {
public:
  using Base = AttentionBase<AttentionBackwardPrepare<Storage>, Storage>;
  RATRAIN_ATTENTION_BASE_MEMBERS(Base)
  In<Buffer<Storage>> q{"q", 2};                     // (d, i)
  In<Buffer<Storage>> o{"o", 2};                     // (d, i)
  In<Buffer<Storage>> dO{"dout", 2};                 // (d, i)
  Out<Func> rows{"rows", {Float(32), Float(32)}, 2}; // (q, dO) in fp32
  Out<Buffer<float>> delta{"delta", 1};

  void generate() {
    Var d("d"), i("i");
    rows(d, i) = Tuple(load(q(d, i)), load(dO(d, i)));
    RDom rd(0, q.dim(0).extent(), "rd");
    Func sum("sum");
    sum(i) = 0.0f;
    sum(i) += load(dO(rd, i)) * load(o(rd, i));
    delta(i) = sum(i);

    // Any head dimension (a multiple of 16 vectorizes without a tail).
    rows.vectorize(d, kLanes, TailStrategy::GuardWithIf);
    sum.compute_at(delta, i);
    sum.update().atomic().vectorize(rd, kLanes);
    for (auto *in : {&q, &o, &dO})
      in->dim(0).set_stride(1).set_min(0);
    Func rowsF = rows;
    rowsF.output_buffers()[0].dim(0).set_stride(1).set_min(0);
    rowsF.output_buffers()[1].dim(0).set_stride(1);
  }
};

/// The backward of one key block of one query head (the file comment).
template <typename Storage>
class AttentionBackwardBlock
    : public AttentionBase<AttentionBackwardBlock<Storage>, Storage> {
public:
  using Base = AttentionBase<AttentionBackwardBlock<Storage>, Storage>;
  RATRAIN_ATTENTION_BASE_MEMBERS(Base)
  In<Buffer<float>> qf{"qf", 2};     // (d, i), rows [i0, i1), fp32
  In<Buffer<float>> dOf{"doutf", 2}; // (d, i), fp32
  /// dq's accumulator is (d, i): dq += dS K(block); dk += dS^T Q, dv +=
  /// P^T dO.
  RATRAIN_ATTENTION_BLOCK_TAIL(Storage, 2)

  void generate() {
    const int D = headDim, JT = kKeyTile, IT = kKeyTile;
    Var d("d"), i("i"), j("j"), ji("ji"), jt("jt");
    // The block's query rows are lse's; q and dO hold them and more, up to
    // a multiple of 32 rows (the runtime pads its copies).
    Expr i0 = lse.dim(0).min(), i1 = i0 + lse.dim(0).extent();
    Expr j0 = k.dim(1).min(), j1 = j0 + k.dim(1).extent();
    Expr nKeyTiles = (j1 - j0 + JT - 1) / JT;
    Expr nQueryTiles = (i1 - i0 + IT - 1) / IT;
    Expr iClamped = clamp(i, i0, i1 - 1);

    // The query rows, and the key rows widened to fp32: a 32-key tile on the
    // lanes (for S and dP), and in rows (for dq).
    Func Qr("Qr"), dOr("dOr"), Kt("Kt"), Vt("Vt"), Kn("Kn");
    Qr(d, i) = qf(d, i);
    dOr(d, i) = dOf(d, i);
    Kt(ji, d, jt) = load(k(d, min(j0 + jt * JT + ji, j1 - 1)));
    Vt(ji, d, jt) = load(v(d, min(j0 + jt * JT + ji, j1 - 1)));
    Kn(d, j) = load(k(d, clamp(j, j0, j1 - 1)));

    RDom rd(0, D, "rd");
    Func dot("dot"), dpdot("dpdot");
    dot(ji, i, jt) = 0.0f;
    dot(ji, i, jt) += Qr(rd, i) * Kt(ji, rd, jt);
    dpdot(ji, i, jt) = 0.0f;
    dpdot(ji, i, jt) += dOr(rd, i) * Vt(ji, rd, jt);

    // (P, dS) of the block: keys of a tile innermost. Query row i sees the
    // keys [first(i), last(i)]: causal, within the block, within the window;
    // none for the rows past the block's last one. One or two lane compares
    // per vector of scores, against row values computed once.
    Expr jg = j0 + jt * JT + ji;
    Expr last = select(i < i1, min(i, j1 - 1), j0 - 1);
    Expr first = i - window + 1;
    Expr score = dot(ji, i, jt) * scale - lse(iClamped);
    Expr pv = select(jg <= last && (window <= 0 || jg >= first),
                     safeExp(score + slope * cast<float>(jg - i)), 0.0f);
    // P is a stage of its own: it consumes S's tile before dP's is read,
    // which spills less than one stage reading both (5% faster on one core).
    Func pf("pf");
    pf(ji, i, jt) = pv;
    Func pds("pds");
    pds(ji, i, jt) = Tuple(
        pf(ji, i, jt), pf(ji, i, jt) * (dpdot(ji, i, jt) - delta(iClamped)));

    // dk = dS^T Q and dv = P^T dO on register tiles of R key rows x DC head
    // dims, summed over query tiles of IT rows; tiles that end before the
    // chunk's first key are skipped (masked entries are 0).
    const int DC = std::min(D, 64), R = 256 / DC;
    Var jr("jr"), jc("jc");
    RDom ri(0, IT, 0, nQueryTiles, "ri");
    ri.where(i0 + ri.y * IT + IT - 1 >= j0 + jc * R);
    Expr iq = i0 + ri.y * IT + ri.x;
    Expr keyLocal = jc * R + jr;
    Func kAcc("kAcc"), vAcc("vAcc");
    kAcc(d, jr, jc) = 0.0f;
    kAcc(d, jr, jc) += pds(keyLocal % JT, iq, keyLocal / JT)[1] * Qr(d, iq);
    vAcc(d, jr, jc) = 0.0f;
    vAcc(d, jr, jc) += pds(keyLocal % JT, iq, keyLocal / JT)[0] * dOr(d, iq);
    Expr jl = j - j0;
    dkv(d, j) = Tuple(undef<float>(), undef<float>());
    dkv(d, j) = Tuple(dkv(d, j)[0] + kAcc(d, jl % R, jl / R),
                      dkv(d, j)[1] + vAcc(d, jl % R, jl / R));

    // dq = dS K on register tiles of R query rows x DC head dims, summed
    // over the block's keys; key tiles that start after the chunk's last
    // row are skipped.
    Var ir("ir"), ic("ic");
    RDom rk(0, JT, 0, nKeyTiles, "rk");
    rk.where(j0 + rk.y * JT <= i0 + ic * R + R - 1);
    Func qAcc("qAcc");
    qAcc(d, ir, ic) = 0.0f;
    qAcc(d, ir, ic) +=
        pds(rk.x, i0 + ic * R + ir, rk.y)[1] * Kn(d, j0 + rk.y * JT + rk.x);
    Expr il = i - i0;
    dq(d, i) = undef<float>();
    dq(d, i) = dq(d, i) + qAcc(d, il % R, il / R);

    // ---- schedule ----
    for (Func f : {Kt, Vt})
      f.compute_root().bound(ji, 0, JT).reorder(ji, d, jt).vectorize(ji,
                                                                     kLanes);
    Kn.compute_root().vectorize(d, kLanes);

    // S and dP per 8 query rows x 32-key tile; the key tiles of the block
    // (at most a few) innermost, so 8 rows of q and dO are read once.
    Var io("io"), iu("iu");
    pds.compute_root()
        .bound(ji, 0, JT)
        .split(i, io, iu, 8, TailStrategy::RoundUp)
        .reorder(ji, iu, jt, io)
        .vectorize(ji, kLanes)
        .unroll(ji)
        .unroll(iu);
    // RoPE models without a window (the common case) skip the bias and the
    // window's compare.
    pds.specialize(window <= 0 && slope == 0.0f);
    pf.compute_at(pds, jt).vectorize(ji, kLanes).unroll(ji).unroll(i);
    for (Func f : {dot, dpdot}) {
      f.compute_at(pds, jt).vectorize(ji, kLanes).unroll(ji).unroll(i);
      f.update().reorder(ji, i, rd).vectorize(ji, kLanes).unroll(ji).unroll(i);
    }

    // dk, dv: the block's accumulators (KB x D fp32 each), the query tile
    // outermost so that its rows and its P / dS stay in L1 across the key
    // chunks.
    scheduleBlockAccumulation(dkv, d, j, R, DC);
    Var dco("dco"), dci("dci");
    for (Func f : {kAcc, vAcc}) {
      f.compute_root().bound(jr, 0, R).bound(d, 0, D).vectorize(d, kLanes);
      f.update()
          .split(d, dco, dci, DC)
          .reorder(dci, jr, ri.x, dco, jc, ri.y)
          .vectorize(dci, kLanes)
          .unroll(dci)
          .unroll(jr);
    }

    // dq: blocks of 32 query rows; their accumulators stay in L1 while the
    // block's key tiles are read once.
    Var qb("qb"), si("si"), ico("ico"), iri("iri");
    dq.update()
        .split(i, qb, si, 32, TailStrategy::GuardWithIf)
        .split(si, ico, iri, R, TailStrategy::GuardWithIf)
        .split(d, dco, dci, DC)
        .reorder(dci, iri, dco, ico, qb)
        .vectorize(dci, kLanes)
        .unroll(dci);
    qAcc.compute_at(dq, qb).bound(ir, 0, R).bound(d, 0, D).vectorize(d, kLanes);
    qAcc.update()
        .split(d, dco, dci, DC)
        .reorder(dci, ir, rk.x, dco, ic, rk.y)
        .vectorize(dci, kLanes)
        .unroll(dci)
        .unroll(ir);

    // q and dO: dense rows from the first of the block's query rows (one
    // base pointer for the rows of a tile).
    for (auto *in : {&qf, &dOf}) {
      in->dim(0).set_stride(1).set_min(0).set_extent(D);
      in->dim(1).set_stride(D).set_min(i0);
    }
    for (auto *in : {&k, &v})
      in->dim(0).set_stride(1).set_min(0).set_extent(D);
    delta.dim(0).set_stride(1);
    lse.dim(0).set_stride(1);
    // The accumulators' rows are those of the inputs (the split loops above
    // then start on a multiple of their tiles).
    Func dqF = dq, dkvF = dkv;
    dqF.output_buffer().dim(0).set_stride(1).set_min(0).set_extent(D);
    dqF.output_buffer().dim(1).set_min(i0);
    // (The second of a Tuple's buffers has the first one's mins and extents.)
    dkvF.output_buffers()[0].dim(0).set_stride(1).set_min(0).set_extent(D);
    dkvF.output_buffers()[0].dim(1).set_min(k.dim(1).min());
    dkvF.output_buffers()[1].dim(0).set_stride(1);
  }
};

/// The last step of the backward: a gradient's fp32 accumulator rows (d, s)
/// times `scale`, rounded once into the activations' storage (one head's
/// rows of a [S, heads, D] tensor: any row stride).
template <typename Storage>
class AttentionBackwardStore
    : public AttentionBase<AttentionBackwardStore<Storage>, Storage> {
public:
  using Base = AttentionBase<AttentionBackwardStore<Storage>, Storage>;
  RATRAIN_ATTENTION_BASE_MEMBERS(Base)
  In<Buffer<float>> acc{"acc", 2};
  In<float> scale{"scale"};
  Out<Buffer<Storage>> out{"out", 2};

  void generate() {
    Var d("d"), s("s");
    out(d, s) = store(acc(d, s) * scale);
    out.vectorize(d, kLanes, TailStrategy::GuardWithIf);
    acc.dim(0).set_stride(1);
    out.dim(0).set_stride(1);
  }
};

} // namespace

HALIDE_REGISTER_GENERATOR(AttentionBackwardStore<float>,
                          ratrain_attention_bwd_store)
HALIDE_REGISTER_GENERATOR(AttentionBackwardStore<uint16_t>,
                          ratrain_attention_bwd_store_16)
HALIDE_REGISTER_GENERATOR(AttentionBackwardPrepare<float>,
                          ratrain_attention_bwd_prepare)
HALIDE_REGISTER_GENERATOR(AttentionBackwardPrepare<uint16_t>,
                          ratrain_attention_bwd_prepare_16)
HALIDE_REGISTER_GENERATOR(AttentionBackwardBlock<float>,
                          ratrain_attention_bwd_block)
HALIDE_REGISTER_GENERATOR(AttentionBackwardBlock<uint16_t>,
                          ratrain_attention_bwd_block_16)
