//===- AttentionGenerator.cpp - Causal GQA attention, forward and backward ===//
//
// Layouts (Halide coordinates, innermost first), matching row-major [B*S,
// heads*D] activations:
//   q, o, dO, dq : (d, h,  s, b)      h  < Hq
//   k, v, dk, dv : (d, hk, s, b)      hk < Hkv, query head h uses hk = h / G,
//                                     G = Hq / Hkv (grouped-query attention)
//   lse          : (s, h, b)          log-sum-exp of the scaled scores
//
// Tiling. The key axis is cut into JT = 32-key tiles (two zmm of fp32) and
// the query axis into QB-row blocks. For one (head, query block) the kernel
// keeps the QB x (keys <= block end) score block and its probabilities in
// AM: QB is derived from the machine file so that both fit in half of AM at
// the `max_seq` context (QB = AM / (4 * 4 * max_seq), a multiple of 32,
// at least 32; 1 MiB AM and 2048 tokens give 32). The K head is staged once
// per head in key-tile-major order (the GSM-level stage; S*D*4 bytes, 1 MiB
// at 2048 x 128), so a score micro-tile (32 keys x 8 queries, 16 zmm
// accumulators) reads both operands with unit stride. Nothing of size S x S
// is ever materialized: forward and backward recompute scores tile by tile.
//
//   forward  : scores -> row max / sum (lse, saved) -> P -> O = P V
//   dq pass  : per query block, recompute P from lse, dP = dO V^T,
//              dS = P (dP - delta), dq = scale * dS K
//   dkv pass : per key row block, loop over the group's heads and the query
//              tiles at or after the key: P^T, dP^T recomputed the same way,
//              dv = P^T dO, dk = scale * dS^T Q (no atomics: each core owns
//              whole key rows)
//
// delta = rowsum(dO * O) is computed inside the dq pass and by the dkv pass
// for its own rows. The head dimension is a generator parameter (the inner
// d loops unroll fully into registers); 32, 64 and 128 are built.
//
// Sliding window (the runtime input `window`, Mistral): with window W > 0 a
// query i sees the keys j with i - W < j <= i (the W tokens up to itself,
// as transformers' sliding-window mask); W <= 0 is plain causal attention.
// The forward skips key tiles wholly before the window.
//
// Element type: each generator is a template over the storage of q, k, v,
// o, dO and the gradients: `float`, or `uint16_t` holding bf16 / fp16 bits
// (GeneratorParam `elem`, ElementType.h). lse stays fp32, and so does all
// arithmetic: a 16-bit operand is widened where it is staged (the K / V
// heads, and in the 16-bit variants also the query block's q and dO rows and
// the key block's k and v rows, which the fp32 variants read in place), and
// a result rounded once where it is stored.
//
// ALiBi (generator parameter `alibi`, Baichuan-13B / BLOOM): the three
// generators take one more input, `slopes` (h), and add the linear bias
// slopes(h) * (j - i) to every scaled score (j <= i: the bias is <= 0). The
// forward's lse includes the bias, and both backward passes recompute the
// probabilities with it; the bias is constant, so dS and the dq / dk / dv
// products are unchanged. With `alibi` off (RoPE models) the input does not
// exist and the pipelines are exactly the plain ones.
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"

using namespace Halide;
using namespace ratrain::kernels::generators::attention;

namespace {

/// Causal attention forward. Output tuple (o, lse) over (d, h, s, b): the
/// lse buffer is passed with stride 0 in d (each row's value is written once
/// per d lane, all the same).
template <typename Storage>
class AttentionForward
    : public AttentionBase<AttentionForward<Storage>, Storage> {
public:
  using Base = AttentionBase<AttentionForward<Storage>, Storage>;
  RATRAIN_ATTENTION_BASE_MEMBERS(Base)
  In<Buffer<Storage>> q{"q", 4};
  In<Buffer<Storage>> k{"k", 4};
  In<Buffer<Storage>> v{"v", 4};
  In<float> scale{"scale"};
  In<int> window{"window"};
  Out<Func> out{"out", {type_of<Storage>(), Float(32)}, 4}; // (o, lse)

  void generate() {
    const int D = headDim, JT = kKeyTile;
    const int QB = queryBlock(amBytes, maxSeq);
    const int DC = std::min(D, 64), R = 256 / DC; // 16 zmm accumulators
    Var d("d"), h("h"), s("s"), b("b"), i("i"), ji("ji"), jt("jt");
    Expr S = q.dim(2).extent();
    Expr G = q.dim(1).extent() / k.dim(1).extent();
    Expr nTiles = (S + JT - 1) / JT;

    Func Kt("Kt");
    // V rows of the head in natural layout, contiguous (the activations' row
    // stride, Hkv * D floats, folds a key tile's rows onto one L1 set).
    Func Vn("Vn");
    Vn(d, s, h, b) = load(v(d, h / G, min(s, S - 1), b));
    Kt(ji, d, jt, h, b) = load(k(d, h / G, min(jt * JT + ji, S - 1), b));
    // The query rows (staged per query block when 16-bit).
    Func Qr("Qr");
    Qr(d, i, h, b) = load(q(d, h, min(i, S - 1), b));
    RDom rd(0, D, "rd");
    Func dot("dot");
    dot(ji, i, jt, h, b) = 0.0f;
    dot(ji, i, jt, h, b) += Qr(rd, i, h, b) * Kt(ji, rd, jt, h, b);
    Func sc("sc");
    sc(ji, i, jt, h, b) =
        withBias(dot(ji, i, jt, h, b) * scale, h, i, jt * JT + ji);

    RDom rj(0, JT, 0, nTiles, "rj");
    rj.where(rj.y * JT <= i &&
             (window <= 0 || rj.y * JT + JT - 1 > i - window));
    Expr jg = rj.y * JT + rj.x;
    Func mx("mx"), ls("ls"), lse("lse");
    mx(i, h, b) = -std::numeric_limits<float>::infinity();
    mx(i, h, b) =
        max(mx(i, h, b), select(visible(jg, i, window), sc(rj.x, i, rj.y, h, b),
                                -std::numeric_limits<float>::infinity()));
    ls(i, h, b) = 0.0f;
    ls(i, h, b) += select(visible(jg, i, window),
                          safeExp(sc(rj.x, i, rj.y, h, b) - mx(i, h, b)), 0.0f);
    lse(i, h, b) = mx(i, h, b) + log(ls(i, h, b));

    Func p("p");
    p(ji, i, jt, h, b) =
        select(visible(jt * JT + ji, i, window),
               safeExp(sc(ji, i, jt, h, b) - lse(i, h, b)), 0.0f);
    // O = P V on register tiles of R query rows x DC head dims: each V row
    // loaded is used by R rows. Masked probabilities are 0, so the key
    // loop only needs to stop after the chunk's last row.
    Var ir("ir"), ic("ic");
    RDom rk(0, JT, 0, nTiles, "rk");
    rk.where(rk.y * JT <= ic * R + R - 1);
    Expr kg = rk.y * JT + rk.x;
    // One key tile's contribution is a register tile (otile, R rows x DC
    // dims, summed over the tile's 32 keys); o adds the tiles up.
    Var kt("kt");
    RDom rx(0, JT, "rx");
    Func otile("otile");
    otile(d, ir, ic, kt, h, b) = 0.0f;
    otile(d, ir, ic, kt, h, b) +=
        p(rx, ic * R + ir, kt, h, b) * Vn(d, kt * JT + rx, h, b);
    RDom rt(0, nTiles, "rt");
    rt.where(rt * JT <= ic * R + R - 1);
    Func o("o");
    o(d, ir, ic, h, b) = 0.0f;
    o(d, ir, ic, h, b) += otile(d, ir, ic, rt, h, b);
    (void)kg;

    out(d, h, s, b) = Tuple(store(o(d, s % R, s / R, h, b)), lse(s, h, b));

    // ---- schedule ----
    Var qb("qb"), hb("hb"), io("io"), iu("iu");
    scheduleRowBlocks(out, d, s, h, b, qb, hb, D, QB, R, DC);
    Vn.compute_at(out, hb).vectorize(d, kLanes);
    Kt.compute_at(out, hb).bound(ji, 0, JT).reorder(ji, d, jt).vectorize(
        ji, kLanes);
    if (kHalf)
      Qr.compute_at(out, qb).vectorize(d, kLanes);
    sc.compute_at(out, qb)
        .bound(ji, 0, JT)
        .split(i, io, iu, 8, TailStrategy::RoundUp)
        .reorder(ji, iu, io, jt)
        .vectorize(ji, kLanes)
        .unroll(ji)
        .unroll(iu);
    dot.compute_at(sc, io).vectorize(ji, kLanes).unroll(ji).unroll(i);
    dot.update().reorder(ji, i, rd).vectorize(ji, kLanes).unroll(ji).unroll(i);
    mx.compute_at(out, qb);
    mx.update().atomic().vectorize(rj.x, kLanes);
    ls.compute_at(out, qb);
    ls.update().atomic().vectorize(rj.x, kLanes);
    lse.compute_at(out, qb);
    p.compute_at(out, qb).bound(ji, 0, JT).reorder(ji, jt, i).vectorize(ji,
                                                                        kLanes);
    // O for the whole query block stays in L1 (QB x D fp32); the key tile
    // loop is outermost so a 32 x D tile of V is loaded once per block and
    // reused by every R-row chunk; within a chunk the R x DC accumulators
    // live in registers across the tile's 32 keys.
    Var dco("dco"), dci("dci");
    o.compute_at(out, qb).bound(ir, 0, R).bound(d, 0, D).vectorize(d, kLanes);
    o.update()
        .split(d, dco, dci, DC)
        .reorder(dci, ir, dco, ic, rt)
        .vectorize(dci, kLanes)
        .unroll(dci)
        .unroll(ir);
    otile.compute_at(o, dco)
        .store_in(MemoryType::Stack)
        .vectorize(d, kLanes)
        .unroll(d)
        .unroll(ir);
    otile.update().reorder(d, ir, rx).vectorize(d, kLanes).unroll(d).unroll(ir);

    q.dim(0).set_stride(1).set_min(0).set_extent(D);
    k.dim(0).set_stride(1).set_min(0).set_extent(D);
    v.dim(0).set_stride(1).set_min(0).set_extent(D);
    Func outF = out;
    outF.output_buffers()[0].dim(0).set_stride(1).set_min(0).set_extent(D);
    // lse: stride 0 along d (see the class comment).
    outF.output_buffers()[1].dim(0).set_stride(Expr());
    constrainSlopes();
  }
};

/// Attention backward, the dq pass: per query block, recompute P from the
/// saved lse, dP = dO V^T, dS = P (dP - delta), dq = scale * dS K.
template <typename Storage>
class AttentionBackwardDq
    : public AttentionBase<AttentionBackwardDq<Storage>, Storage> {
public:
  using Base = AttentionBase<AttentionBackwardDq<Storage>, Storage>;
  RATRAIN_ATTENTION_BASE_MEMBERS(Base)
  RATRAIN_ATTENTION_BACKWARD_INPUTS(Storage)
  Out<Buffer<Storage>> dq{"dq", 4};

  void generate() {
    const int D = headDim, JT = kKeyTile;
    const int QB = queryBlock(amBytes, maxSeq);
    const int DC = std::min(D, 64), R = 256 / DC; // 16 zmm accumulators
    Var d("d"), h("h"), s("s"), b("b"), i("i"), ji("ji"), jt("jt");
    Expr S = q.dim(2).extent();
    Expr G = q.dim(1).extent() / k.dim(1).extent();
    Expr nTiles = (S + JT - 1) / JT;
    Expr iClamped = min(i, S - 1);

    Func Kt("Kt"), Vt("Vt");
    Func Kn("Kn"); // K rows, contiguous (see the forward's Vn)
    Kn(d, s, h, b) = load(k(d, h / G, min(s, S - 1), b));
    Kt(ji, d, jt, h, b) = load(k(d, h / G, min(jt * JT + ji, S - 1), b));
    Vt(ji, d, jt, h, b) = load(v(d, h / G, min(jt * JT + ji, S - 1), b));
    // The query block's q and dO rows (staged per block when 16-bit).
    Func Qr("Qr"), dOr("dOr");
    Qr(d, i, h, b) = load(q(d, h, min(i, S - 1), b));
    dOr(d, i, h, b) = load(dO(d, h, min(i, S - 1), b));
    RDom rd(0, D, "rd");
    Func dot("dot"), dpdot("dpdot");
    dot(ji, i, jt, h, b) = 0.0f;
    dot(ji, i, jt, h, b) += Qr(rd, i, h, b) * Kt(ji, rd, jt, h, b);
    dpdot(ji, i, jt, h, b) = 0.0f;
    dpdot(ji, i, jt, h, b) += dOr(rd, i, h, b) * Vt(ji, rd, jt, h, b);
    Func delta("delta");
    delta(i, h, b) = 0.0f;
    delta(i, h, b) += dOr(rd, i, h, b) * load(o(rd, h, iClamped, b));

    Func ds("ds");
    Expr pv = select(
        visible(jt * JT + ji, i, window),
        safeExp(withBias(dot(ji, i, jt, h, b) * scale, h, i, jt * JT + ji) -
                lse(iClamped, h, b)),
        0.0f);
    ds(ji, i, jt, h, b) = pv * (dpdot(ji, i, jt, h, b) - delta(i, h, b));

    // dq = scale * dS K on R x DC register tiles (as O = P V forward).
    Var ir("ir"), ic("ic");
    RDom rk(0, JT, 0, nTiles, "rk");
    rk.where(rk.y * JT <= ic * R + R - 1);
    Expr kg = rk.y * JT + rk.x;
    Func acc("acc");
    acc(d, ir, ic, h, b) = 0.0f;
    acc(d, ir, ic, h, b) += ds(rk.x, ic * R + ir, rk.y, h, b) * Kn(d, kg, h, b);
    dq(d, h, s, b) = store(acc(d, s % R, s / R, h, b) * scale);

    Var qb("qb"), hb("hb"), io("io"), iu("iu");
    scheduleRowBlocks(dq, d, s, h, b, qb, hb, D, QB, R, DC);
    Kn.compute_at(dq, hb).vectorize(d, kLanes);
    Kt.compute_at(dq, hb).bound(ji, 0, JT).reorder(ji, d, jt).vectorize(ji,
                                                                        kLanes);
    Vt.compute_at(dq, hb).bound(ji, 0, JT).reorder(ji, d, jt).vectorize(ji,
                                                                        kLanes);
    if (kHalf) {
      Qr.compute_at(dq, qb).vectorize(d, kLanes);
      dOr.compute_at(dq, qb).vectorize(d, kLanes);
    }
    delta.compute_at(dq, qb);
    delta.update().atomic().vectorize(rd, kLanes);
    ds.compute_at(dq, qb)
        .bound(ji, 0, JT)
        .split(i, io, iu, 8, TailStrategy::RoundUp)
        .reorder(ji, iu, io, jt)
        .vectorize(ji, kLanes)
        .unroll(ji)
        .unroll(iu);
    for (Func f : {dot, dpdot}) {
      f.compute_at(ds, io).vectorize(ji, kLanes).unroll(ji).unroll(i);
      f.update().reorder(ji, i, rd).vectorize(ji, kLanes).unroll(ji).unroll(i);
    }
    Var dco("dco"), dci("dci");
    acc.compute_at(dq, qb).bound(ir, 0, R).bound(d, 0, D).vectorize(d, kLanes);
    acc.update()
        .split(d, dco, dci, DC)
        .reorder(dci, ir, rk.x, dco, ic, rk.y)
        .vectorize(dci, kLanes)
        .unroll(dci)
        .unroll(ir);

    for (auto *in : {&q, &k, &v, &o, &dO})
      in->dim(0).set_stride(1).set_min(0).set_extent(D);
    lse.dim(0).set_stride(1);
    dq.dim(0).set_stride(1).set_min(0).set_extent(D);
    constrainSlopes();
  }
};

/// Attention backward, the dk/dv pass: per key row j of KV head hk, sum over
/// the G query heads of the group and the query tiles at or after j:
///   dv(j) = sum P^T(i, j) dO(i),  dk(j) = scale * sum dS^T(i, j) q(i).
/// Output tuple (dk, dv) over (d, hk, s, b).
template <typename Storage>
class AttentionBackwardDkv
    : public AttentionBase<AttentionBackwardDkv<Storage>, Storage> {
public:
  using Base = AttentionBase<AttentionBackwardDkv<Storage>, Storage>;
  RATRAIN_ATTENTION_BASE_MEMBERS(Base)
  RATRAIN_ATTENTION_BACKWARD_INPUTS(Storage)
  Out<Func> out{"out", {type_of<Storage>(), type_of<Storage>()}, 4}; // dk, dv

  void generate() {
    const int D = headDim, IT = kKeyTile;
    const int KB = queryBlock(amBytes, maxSeq);
    // Two accumulators (dk, dv): half the tile of the forward.
    const int DC = std::min(D, 32), R = 4;
    Var d("d"), h("h"), hk("hk"), s("s"), b("b"), ii("ii"), it("it"), j("j");
    Expr S = q.dim(2).extent();
    Expr G = q.dim(1).extent() / k.dim(1).extent();
    Expr nTiles = (S + IT - 1) / IT;
    Expr ig = it * IT + ii;
    Expr igc = min(ig, S - 1);
    Expr jClamped = min(j, S - 1);

    // Query-side operands, transposed into query-tile-major order.
    Func Qn("Qn"), dOn("dOn");
    Qn(d, s, h, b) = load(q(d, h, min(s, S - 1), b));
    dOn(d, s, h, b) = load(dO(d, h, min(s, S - 1), b));
    Func Qt("Qt"), dOt("dOt");
    Qt(ii, d, it, h, b) = load(q(d, h, min(it * IT + ii, S - 1), b));
    dOt(ii, d, it, h, b) = load(dO(d, h, min(it * IT + ii, S - 1), b));
    RDom rd(0, D, "rd");
    Func delta("delta");
    delta(s, h, b) = 0.0f;
    delta(s, h, b) += load(dO(rd, h, s, b)) * load(o(rd, h, s, b));
    // The key block's k and v rows (staged per block when 16-bit).
    Func Kr("Kr"), Vr("Vr");
    Kr(d, j, hk, b) = load(k(d, hk, min(j, S - 1), b));
    Vr(d, j, hk, b) = load(v(d, hk, min(j, S - 1), b));

    // Scores and dP, transposed: queries along the vector lanes.
    Func sdot("sdot"), pdot("pdot");
    sdot(ii, j, it, h, b) = 0.0f;
    sdot(ii, j, it, h, b) += Qt(ii, rd, it, h, b) * Kr(rd, j, h / G, b);
    pdot(ii, j, it, h, b) = 0.0f;
    pdot(ii, j, it, h, b) += dOt(ii, rd, it, h, b) * Vr(rd, j, h / G, b);
    Func pt("pt");
    Expr valid = visible(j, ig, window) && ig < S;
    Expr pv = select(valid,
                     safeExp(withBias(sdot(ii, j, it, h, b) * scale, h, ig, j) -
                             lse(igc, h, b)),
                     0.0f);
    pt(ii, j, it, h, b) =
        Tuple(pv, pv * (pdot(ii, j, it, h, b) - delta(igc, h, b)));

    // dk, dv on register tiles of R key rows x DC head dims: each q / dO
    // row loaded is used by R key rows. Query tiles that end before the
    // chunk's first key are skipped; masked entries of pt are 0.
    Var jr("jr"), jc("jc");
    RDom ri(0, IT, 0, nTiles, 0, G, "ri");
    ri.where(ri.y * IT + IT - 1 >= jc * R);
    Expr hq = hk * G + ri.z;
    Expr iq = ri.y * IT + ri.x;
    Func acc("acc");
    acc(d, jr, jc, hk, b) = Tuple(0.0f, 0.0f);
    Tuple ptv = pt(ri.x, jc * R + jr, ri.y, hq, b);
    acc(d, jr, jc, hk, b) =
        Tuple(acc(d, jr, jc, hk, b)[0] + ptv[1] * Qn(d, iq, hq, b),
              acc(d, jr, jc, hk, b)[1] + ptv[0] * dOn(d, iq, hq, b));
    out(d, hk, s, b) = Tuple(store(acc(d, s % R, s / R, hk, b)[0] * scale),
                             store(acc(d, s % R, s / R, hk, b)[1]));

    Var kb("kb"), hb("hb"), jo("jo"), ju("ju");
    scheduleRowBlocks(out, d, s, hk, b, kb, hb, D, KB, R, DC);
    delta.compute_root().parallel(b);
    delta.update().atomic().vectorize(rd, kLanes);
    if (kHalf) {
      Kr.compute_at(out, kb).vectorize(d, kLanes);
      Vr.compute_at(out, kb).vectorize(d, kLanes);
    }
    Qt.compute_at(out, hb)
        .bound(ii, 0, IT)
        .reorder(ii, d, it, h)
        .vectorize(ii, kLanes);
    dOt.compute_at(out, hb)
        .bound(ii, 0, IT)
        .reorder(ii, d, it, h)
        .vectorize(ii, kLanes);
    pt.compute_at(out, kb)
        .bound(ii, 0, IT)
        .split(j, jo, ju, 8, TailStrategy::RoundUp)
        .reorder(ii, ju, jo, it, h)
        .vectorize(ii, kLanes)
        .unroll(ii)
        .unroll(ju);
    for (Func f : {sdot, pdot}) {
      f.compute_at(pt, jo).vectorize(ii, kLanes).unroll(ii).unroll(j);
      f.update().reorder(ii, j, rd).vectorize(ii, kLanes).unroll(ii).unroll(j);
    }
    Var dco("dco"), dci("dci");
    acc.compute_at(out, kb).bound(jr, 0, R).bound(d, 0, D).vectorize(d, kLanes);
    acc.update()
        .split(d, dco, dci, DC)
        .reorder(dci, jr, ri.x, dco, jc, ri.y, ri.z)
        .vectorize(dci, kLanes)
        .unroll(dci)
        .unroll(jr);
    // Natural-layout copies of the head's q and dO rows: a query tile's rows
    // become one contiguous 32 x D block (the activations' row stride is
    // Hq * D floats, 16 KiB at 32 x 128, which folds every row of a tile
    // onto one L1 set).
    for (Func f : {Qn, dOn})
      f.compute_at(out, hb).vectorize(d, kLanes);

    for (auto *in : {&q, &k, &v, &o, &dO})
      in->dim(0).set_stride(1).set_min(0).set_extent(D);
    lse.dim(0).set_stride(1);
    Func outF = out;
    outF.output_buffers()[0].dim(0).set_stride(1).set_min(0).set_extent(D);
    outF.output_buffers()[1].dim(0).set_stride(1);
    constrainSlopes();
  }
};

} // namespace

HALIDE_REGISTER_GENERATOR(AttentionForward<float>, ratrain_attention_fwd)
HALIDE_REGISTER_GENERATOR(AttentionBackwardDq<float>, ratrain_attention_bwd_dq)
HALIDE_REGISTER_GENERATOR(AttentionBackwardDkv<float>,
                          ratrain_attention_bwd_dkv)
HALIDE_REGISTER_GENERATOR(AttentionForward<uint16_t>, ratrain_attention_fwd_16)
HALIDE_REGISTER_GENERATOR(AttentionBackwardDq<uint16_t>,
                          ratrain_attention_bwd_dq_16)
HALIDE_REGISTER_GENERATOR(AttentionBackwardDkv<uint16_t>,
                          ratrain_attention_bwd_dkv_16)
