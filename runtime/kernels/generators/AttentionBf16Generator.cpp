//===- AttentionBf16Generator.cpp - bf16 attention on vdpbf16ps -----------===//
//
// The bf16 attention passes whose products run on vdpbf16ps (forward,
// backward dq, backward dk/dv): the forward's algorithm, tiling, masking,
// ALiBi and window of AttentionGenerator.cpp and the same AOT signature,
// but every product runs on bf16 operands with fp32 accumulation, as a
// VectorReduce of factor 2 that Halide lowers to vdpbf16ps (32 bf16
// products per instruction, twice the fp32 FMA rate). The softmax, exp and
// masking stay fp32.
//
// The backward runs in two passes that each recompute S and dP (seven
// matrix products per score where AttentionBackwardGenerator.cpp's key
// blocks take five; that form is not yet written for the pair layouts):
//   dq pass  : per query block, recompute P from lse, dP = dO V^T,
//              dS = P (dP - delta), dq = scale * dS K
//   dkv pass : per key row block, loop over the group's heads and the query
//              tiles at or after the key: P^T, dP^T recomputed the same way,
//              dv = P^T dO, dk = scale * dS^T Q (no atomics: each core owns
//              whole key rows)
// delta = rowsum(dO * O) is computed inside the dq pass and by the dkv pass
// for its own rows.
//
// vdpbf16ps multiplies pairs of bf16 along the reduced axis, so each product
// needs both operands with that axis in adjacent pairs and the other
// operand's free axis on the 16 vector lanes:
//
//   product           reduced  broadcast operand     lane operand (staged)
//   S = Q K^T         d        q row, d pairs         Kd(kk, key, dp)
//   dP = dO V^T       d        dO row, d pairs        Vd(kk, key, dp)
//   O = P V           keys     P row, key pairs       Vk(kk, d, keypair)
//   dQ = dS K         keys     dS row, key pairs      Kk(kk, d, keypair)
//   S^T, dP^T         d        k / v row, d pairs     Qd, dOd(kk, query, dp)
//   dV = P^T dO       queries  P^T row, query pairs   dOq(kk, d, querypair)
//   dK = dS^T Q       queries  dS^T row, query pairs  Qq(kk, d, querypair)
//
// (kk is the pair element.) The staged operands are laid out per head once,
// as the fp32 kernels stage theirs. P and dS are rounded to bf16 before
// their products, as FlashAttention's bf16 kernels do: this is the one
// numerical difference from the fp32 pipelines (the products themselves are
// exact in fp32; the sums differ in order).
//
// Target: these pipelines are compiled for avx512_sapphirerapids (for
// vdpbf16ps), whose LLVM CPU model also has AVX512-FP16, which Zen 4 lacks:
// no 16-bit value may be moved into or out of a vector lane on its own (LLVM
// would use vmovw). Every load and store is therefore a dense vector of 16-bit
// elements or a vector of one 32-bit pair: the pair-staging of d (Kd, Vd,
// Qd, dOd) copies 32-bit pairs; the pair-staging of rows (Vk, Kk, dOq, Qq)
// loads dense rows and stores them interleaved.
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"

using namespace Halide;
using namespace ratrain::kernels::generators::attention;
using ratrain::kernels::generators::Elem;

namespace {

/// The fp32 value of bf16 bits: the operand form of Halide's vdpbf16ps
/// pattern (a widening multiply reduced by pairs).
Expr bf16Value(Expr bits) { return cast<float>(reinterpret(BFloat(16), bits)); }

/// fp32 -> bf16 bits, round to nearest even (vcvtneps2bf16 here, which
/// flushes subnormals: for probabilities and their gradients that is below
/// any effect on a bf16 training step).
Expr bf16Bits(Expr value) {
  return reinterpret<uint16_t>(cast(BFloat(16), value));
}

/// Stages rows `row(r)` of a [*, D] operand with the d axis in pairs and the
/// rows on the lanes: dst(kk, r, dp, tile) = src(2 dp + kk, tile * T + r).
/// Scheduled by `scheduleDPairs` as 32-bit pair copies.
void scheduleDPairs(Func f, Var kk, Var r, Var dp, Var tile, int T) {
  f.bound(kk, 0, 2).bound(r, 0, T).reorder(kk, dp, r, tile).vectorize(kk);
}

/// Stages a [rows, D] operand with the rows in pairs and d on the lanes:
/// dst(kk, d, rp) = src(d, 2 rp + kk). Dense row loads, interleaved stores.
void scheduleRowPairs(Func f, Var kk, Var d, int D) {
  f.bound(kk, 0, 2).bound(d, 0, D).reorder(kk, d).unroll(kk).vectorize(d,
                                                                       kLanes);
}

/// bf16 attention forward: (o, lse) as AttentionForward, with S = Q K^T and
/// O = P V on vdpbf16ps.
class AttentionForwardBf16
    : public AttentionBase<AttentionForwardBf16, uint16_t> {
public:
  using Base = AttentionBase<AttentionForwardBf16, uint16_t>;
  RATRAIN_ATTENTION_BASE_MEMBERS(Base)
  In<Buffer<uint16_t>> q{"q", 4};
  In<Buffer<uint16_t>> k{"k", 4};
  In<Buffer<uint16_t>> v{"v", 4};
  In<float> scale{"scale"};
  In<int> window{"window"};
  Out<Func> out{"out", {UInt(16), Float(32)}, 4}; // (o, lse)

  void generate() {
    _halide_user_assert(Elem(this->elem) == Elem::BF16)
        << "the vdpbf16ps attention is bf16 only\n";
    const int D = headDim, JT = kKeyTile, DP = D / 2;
    const int QB = queryBlock(amBytes, maxSeq);
    const int DC = std::min(D, 64), R = 256 / DC; // 16 zmm accumulators
    Var d("d"), h("h"), s("s"), b("b"), i("i"), ji("ji"), jt("jt"), kk("kk"),
        dp("dp"), jp("jp");
    Expr S = q.dim(2).extent();
    Expr G = q.dim(1).extent() / k.dim(1).extent();
    Expr nTiles = (S + JT - 1) / JT;

    // K with d in pairs, keys of a tile on the lanes; V with keys in pairs.
    Func Kd("Kd"), Vk("Vk");
    Kd(kk, ji, dp, jt, h, b) =
        k(2 * dp + kk, h / G, min(jt * JT + ji, S - 1), b);
    Vk(kk, d, jp, h, b) = v(d, h / G, min(2 * jp + kk, S - 1), b);
    // The query block's rows, contiguous.
    Func Qr("Qr");
    Qr(d, i, h, b) = q(d, h, min(i, S - 1), b);

    RDom rd(0, 2, 0, DP, "rd");
    Func dot("dot");
    dot(ji, i, jt, h, b) = 0.0f;
    dot(ji, i, jt, h, b) += bf16Value(Qr(2 * rd.y + rd.x, i, h, b)) *
                            bf16Value(Kd(rd.x, ji, rd.y, jt, h, b));
    Func sc("sc");
    sc(ji, i, jt, h, b) =
        withBias(dot(ji, i, jt, h, b) * scale, h, i, jt * JT + ji);

    RDom rj(0, JT, 0, nTiles, "rj");
    rj.where(rj.y * JT <= i &&
             (window <= 0 || rj.y * JT + JT - 1 > i - window));
    Expr jg = rj.y * JT + rj.x;
    // One exp per score (the fp32 forward takes two): pe = exp(s - max) in
    // fp32 gives the row sum and lse; O sums pe rounded to bf16 times V and
    // divides by the fp32 sum, as FlashAttention's bf16 forward does.
    Func mx("mx"), ls("ls"), lse("lse");
    mx(i, h, b) = -std::numeric_limits<float>::infinity();
    mx(i, h, b) =
        max(mx(i, h, b), select(visible(jg, i, window), sc(rj.x, i, rj.y, h, b),
                                -std::numeric_limits<float>::infinity()));
    Func pe("pe");
    pe(ji, i, jt, h, b) =
        select(visible(jt * JT + ji, i, window),
               safeExp(sc(ji, i, jt, h, b) - mx(i, h, b)), 0.0f);
    ls(i, h, b) = 0.0f;
    ls(i, h, b) += pe(rj.x, i, rj.y, h, b);
    lse(i, h, b) = mx(i, h, b) + log(ls(i, h, b));
    Func p("p"); // bf16 pe, keys innermost (pairs adjacent)
    p(ji, i, jt, h, b) = bf16Bits(pe(ji, i, jt, h, b));
    // O = P V on register tiles of R query rows x DC head dims, one key tile
    // at a time (see AttentionForward).
    Var ir("ir"), ic("ic"), kt("kt");
    RDom rx(0, 2, 0, JT / 2, "rx");
    Func otile("otile");
    otile(d, ir, ic, kt, h, b) = 0.0f;
    otile(d, ir, ic, kt, h, b) +=
        bf16Value(p(2 * rx.y + rx.x, ic * R + ir, kt, h, b)) *
        bf16Value(Vk(rx.x, d, kt * (JT / 2) + rx.y, h, b));
    RDom rt(0, nTiles, "rt");
    rt.where(rt * JT <= ic * R + R - 1);
    Func o("o");
    o(d, ir, ic, h, b) = 0.0f;
    o(d, ir, ic, h, b) += otile(d, ir, ic, rt, h, b);

    out(d, h, s, b) =
        Tuple(store(o(d, s % R, s / R, h, b) / ls(s, h, b)), lse(s, h, b));

    // ---- schedule (AttentionForward's, with pair reductions) ----
    Var qb("qb"), hb("hb"), io("io"), iu("iu");
    scheduleRowBlocks(out, d, s, h, b, qb, hb, D, QB, R, DC);
    scheduleDPairs(Kd.compute_at(out, hb), kk, ji, dp, jt, JT);
    scheduleRowPairs(Vk.compute_at(out, hb), kk, d, D);
    Qr.compute_at(out, qb).vectorize(d, kLanes);
    sc.compute_at(out, qb)
        .bound(ji, 0, JT)
        .split(i, io, iu, 8, TailStrategy::RoundUp)
        .reorder(ji, iu, io, jt)
        .vectorize(ji, kLanes)
        .unroll(ji)
        .unroll(iu);
    dot.compute_at(sc, io).vectorize(ji, kLanes).unroll(ji).unroll(i);
    dot.update()
        .reorder(rd.x, ji, i, rd.y)
        .atomic()
        .vectorize(rd.x)
        .vectorize(ji, kLanes)
        .unroll(ji)
        .unroll(i);
    mx.compute_at(out, qb);
    mx.update().atomic().vectorize(rj.x, kLanes);
    ls.compute_at(out, qb);
    ls.update().atomic().vectorize(rj.x, kLanes);
    lse.compute_at(out, qb);
    pe.compute_at(out, qb).bound(ji, 0, JT).reorder(ji, jt, i).vectorize(
        ji, kLanes);
    p.compute_at(out, qb).bound(ji, 0, JT).reorder(ji, jt, i).vectorize(ji,
                                                                        kLanes);
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
    otile.update()
        .reorder(rx.x, d, ir, rx.y)
        .atomic()
        .vectorize(rx.x)
        .vectorize(d, kLanes)
        .unroll(d)
        .unroll(ir);

    q.dim(0).set_stride(1).set_min(0).set_extent(D);
    k.dim(0).set_stride(1).set_min(0).set_extent(D);
    v.dim(0).set_stride(1).set_min(0).set_extent(D);
    Func outF = out;
    outF.output_buffers()[0].dim(0).set_stride(1).set_min(0).set_extent(D);
    outF.output_buffers()[1].dim(0).set_stride(Expr());
    constrainSlopes();
  }
};

/// bf16 attention backward, the dq pass: S = Q K^T,
/// dP = dO V^T and dq = scale * dS K on vdpbf16ps.
class AttentionBackwardDqBf16
    : public AttentionBase<AttentionBackwardDqBf16, uint16_t> {
public:
  using Base = AttentionBase<AttentionBackwardDqBf16, uint16_t>;
  RATRAIN_ATTENTION_BASE_MEMBERS(Base)
  RATRAIN_ATTENTION_BACKWARD_INPUTS(uint16_t)
  Out<Buffer<uint16_t>> dq{"dq", 4};

  void generate() {
    _halide_user_assert(Elem(this->elem) == Elem::BF16)
        << "the vdpbf16ps attention is bf16 only\n";
    const int D = headDim, JT = kKeyTile, DP = D / 2;
    const int QB = queryBlock(amBytes, maxSeq);
    const int DC = std::min(D, 64), R = 256 / DC; // 16 zmm accumulators
    Var d("d"), h("h"), s("s"), b("b"), i("i"), ji("ji"), jt("jt"), kk("kk"),
        dp("dp"), jp("jp");
    Expr S = q.dim(2).extent();
    Expr G = q.dim(1).extent() / k.dim(1).extent();
    Expr nTiles = (S + JT - 1) / JT;
    Expr iClamped = min(i, S - 1);

    Func Kd("Kd"), Vd("Vd"), Kk("Kk");
    Kd(kk, ji, dp, jt, h, b) =
        k(2 * dp + kk, h / G, min(jt * JT + ji, S - 1), b);
    Vd(kk, ji, dp, jt, h, b) =
        v(2 * dp + kk, h / G, min(jt * JT + ji, S - 1), b);
    Kk(kk, d, jp, h, b) = k(d, h / G, min(2 * jp + kk, S - 1), b);
    Func Qr("Qr"), dOr("dOr");
    Qr(d, i, h, b) = q(d, h, iClamped, b);
    dOr(d, i, h, b) = dO(d, h, iClamped, b);

    RDom rd(0, 2, 0, DP, "rd");
    Func dot("dot"), dpdot("dpdot");
    dot(ji, i, jt, h, b) = 0.0f;
    dot(ji, i, jt, h, b) += bf16Value(Qr(2 * rd.y + rd.x, i, h, b)) *
                            bf16Value(Kd(rd.x, ji, rd.y, jt, h, b));
    dpdot(ji, i, jt, h, b) = 0.0f;
    dpdot(ji, i, jt, h, b) += bf16Value(dOr(2 * rd.y + rd.x, i, h, b)) *
                              bf16Value(Vd(rd.x, ji, rd.y, jt, h, b));
    RDom rdd(0, D, "rdd");
    Func delta("delta");
    delta(i, h, b) = 0.0f;
    delta(i, h, b) +=
        bf16Value(dOr(rdd, i, h, b)) * bf16Value(o(rdd, h, iClamped, b));

    Func ds("ds"); // bf16 dS, keys innermost (pairs adjacent)
    Expr pv = select(
        visible(jt * JT + ji, i, window),
        safeExp(withBias(dot(ji, i, jt, h, b) * scale, h, i, jt * JT + ji) -
                lse(iClamped, h, b)),
        0.0f);
    ds(ji, i, jt, h, b) =
        bf16Bits(pv * (dpdot(ji, i, jt, h, b) - delta(i, h, b)));

    // dq = scale * dS K on R x DC register tiles.
    Var ir("ir"), ic("ic");
    RDom rk(0, 2, 0, JT / 2, 0, nTiles, "rk");
    rk.where(rk.z * JT <= ic * R + R - 1);
    Func acc("acc");
    acc(d, ir, ic, h, b) = 0.0f;
    acc(d, ir, ic, h, b) +=
        bf16Value(ds(2 * rk.y + rk.x, ic * R + ir, rk.z, h, b)) *
        bf16Value(Kk(rk.x, d, rk.z * (JT / 2) + rk.y, h, b));
    dq(d, h, s, b) = store(acc(d, s % R, s / R, h, b) * scale);

    Var qb("qb"), hb("hb"), io("io"), iu("iu");
    scheduleRowBlocks(dq, d, s, h, b, qb, hb, D, QB, R, DC);
    scheduleDPairs(Kd.compute_at(dq, hb), kk, ji, dp, jt, JT);
    scheduleDPairs(Vd.compute_at(dq, hb), kk, ji, dp, jt, JT);
    scheduleRowPairs(Kk.compute_at(dq, hb), kk, d, D);
    Qr.compute_at(dq, qb).vectorize(d, kLanes);
    dOr.compute_at(dq, qb).vectorize(d, kLanes);
    delta.compute_at(dq, qb);
    delta.update().atomic().vectorize(rdd, kLanes);
    ds.compute_at(dq, qb)
        .bound(ji, 0, JT)
        .split(i, io, iu, 4, TailStrategy::RoundUp)
        .reorder(ji, iu, io, jt)
        .vectorize(ji, kLanes)
        .unroll(ji)
        .unroll(iu);
    for (Func f : {dot, dpdot}) {
      f.compute_at(ds, io).vectorize(ji, kLanes).unroll(ji).unroll(i);
      f.update()
          .reorder(rd.x, ji, i, rd.y)
          .atomic()
          .vectorize(rd.x)
          .vectorize(ji, kLanes)
          .unroll(ji)
          .unroll(i);
    }
    Var dco("dco"), dci("dci");
    acc.compute_at(dq, qb).bound(ir, 0, R).bound(d, 0, D).vectorize(d, kLanes);
    acc.update()
        .split(d, dco, dci, DC)
        .reorder(rk.x, dci, ir, rk.y, dco, ic, rk.z)
        .atomic()
        .vectorize(rk.x)
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

/// bf16 attention backward, the dk/dv pass: S^T,
/// dP^T, dv = P^T dO and dk = scale * dS^T Q on vdpbf16ps.
class AttentionBackwardDkvBf16
    : public AttentionBase<AttentionBackwardDkvBf16, uint16_t> {
public:
  using Base = AttentionBase<AttentionBackwardDkvBf16, uint16_t>;
  RATRAIN_ATTENTION_BASE_MEMBERS(Base)
  RATRAIN_ATTENTION_BACKWARD_INPUTS(uint16_t)
  Out<Func> out{"out", {UInt(16), UInt(16)}, 4}; // dk, dv

  void generate() {
    _halide_user_assert(Elem(this->elem) == Elem::BF16)
        << "the vdpbf16ps attention is bf16 only\n";
    const int D = headDim, IT = kKeyTile, DP = D / 2;
    const int KB = queryBlock(amBytes, maxSeq);
    // dk and dv accumulate in separate register tiles of R x DC.
    const int DC = std::min(D, 64), R = 256 / DC;
    Var d("d"), h("h"), hk("hk"), s("s"), b("b"), ii("ii"), it("it"), j("j"),
        kk("kk"), dp("dp"), ip("ip");
    Expr S = q.dim(2).extent();
    Expr G = q.dim(1).extent() / k.dim(1).extent();
    Expr nTiles = (S + IT - 1) / IT;
    Expr ig = it * IT + ii;
    Expr igc = min(ig, S - 1);

    // Query-side operands: d in pairs with queries on the lanes (for S^T and
    // dP^T), and queries in pairs with d on the lanes (for dk and dv).
    Func Qd("Qd"), dOd("dOd"), Qq("Qq"), dOq("dOq");
    Qd(kk, ii, dp, it, h, b) = q(2 * dp + kk, h, min(it * IT + ii, S - 1), b);
    dOd(kk, ii, dp, it, h, b) = dO(2 * dp + kk, h, min(it * IT + ii, S - 1), b);
    Qq(kk, d, ip, h, b) = q(d, h, min(2 * ip + kk, S - 1), b);
    dOq(kk, d, ip, h, b) = dO(d, h, min(2 * ip + kk, S - 1), b);
    RDom rdd(0, D, "rdd");
    Func delta("delta");
    delta(s, h, b) = 0.0f;
    delta(s, h, b) += bf16Value(dO(rdd, h, s, b)) * bf16Value(o(rdd, h, s, b));
    // The key block's k and v rows, contiguous.
    Func Kr("Kr"), Vr("Vr");
    Kr(d, j, hk, b) = k(d, hk, min(j, S - 1), b);
    Vr(d, j, hk, b) = v(d, hk, min(j, S - 1), b);

    RDom rd(0, 2, 0, DP, "rd");
    Func sdot("sdot"), pdot("pdot");
    sdot(ii, j, it, h, b) = 0.0f;
    sdot(ii, j, it, h, b) += bf16Value(Qd(rd.x, ii, rd.y, it, h, b)) *
                             bf16Value(Kr(2 * rd.y + rd.x, j, h / G, b));
    pdot(ii, j, it, h, b) = 0.0f;
    pdot(ii, j, it, h, b) += bf16Value(dOd(rd.x, ii, rd.y, it, h, b)) *
                             bf16Value(Vr(2 * rd.y + rd.x, j, h / G, b));
    // (P^T, dS^T) in bf16, queries innermost (pairs adjacent).
    Func pt("pt");
    Expr valid = visible(j, ig, window) && ig < S;
    Expr pv = select(valid,
                     safeExp(withBias(sdot(ii, j, it, h, b) * scale, h, ig, j) -
                             lse(igc, h, b)),
                     0.0f);
    pt(ii, j, it, h, b) =
        Tuple(bf16Bits(pv),
              bf16Bits(pv * (pdot(ii, j, it, h, b) - delta(igc, h, b))));

    // dk, dv on register tiles of R key rows x DC head dims; query tiles that
    // end before the chunk's first key are skipped (masked entries are 0).
    Var jr("jr"), jc("jc");
    RDom ri(0, 2, 0, IT / 2, 0, nTiles, 0, G, "ri");
    ri.where(ri.z * IT + IT - 1 >= jc * R);
    Expr hq = hk * G + ri.w;
    Expr iqp = ri.z * (IT / 2) + ri.y;
    Func dkAcc("dkAcc"), dvAcc("dvAcc");
    dkAcc(d, jr, jc, hk, b) = 0.0f;
    dkAcc(d, jr, jc, hk, b) +=
        bf16Value(pt(2 * ri.y + ri.x, jc * R + jr, ri.z, hq, b)[1]) *
        bf16Value(Qq(ri.x, d, iqp, hq, b));
    dvAcc(d, jr, jc, hk, b) = 0.0f;
    dvAcc(d, jr, jc, hk, b) +=
        bf16Value(pt(2 * ri.y + ri.x, jc * R + jr, ri.z, hq, b)[0]) *
        bf16Value(dOq(ri.x, d, iqp, hq, b));
    out(d, hk, s, b) = Tuple(store(dkAcc(d, s % R, s / R, hk, b) * scale),
                             store(dvAcc(d, s % R, s / R, hk, b)));

    Var kb("kb"), hb("hb"), jo("jo"), ju("ju");
    scheduleRowBlocks(out, d, s, hk, b, kb, hb, D, KB, R, DC);
    delta.compute_root().parallel(b);
    delta.update().atomic().vectorize(rdd, kLanes);
    Kr.compute_at(out, kb).vectorize(d, kLanes);
    Vr.compute_at(out, kb).vectorize(d, kLanes);
    scheduleDPairs(Qd.compute_at(out, hb), kk, ii, dp, it, IT);
    scheduleDPairs(dOd.compute_at(out, hb), kk, ii, dp, it, IT);
    scheduleRowPairs(Qq.compute_at(out, hb), kk, d, D);
    scheduleRowPairs(dOq.compute_at(out, hb), kk, d, D);
    pt.compute_at(out, kb)
        .bound(ii, 0, IT)
        .split(j, jo, ju, 8, TailStrategy::RoundUp)
        .reorder(ii, ju, jo, it, h)
        .vectorize(ii, kLanes)
        .unroll(ii)
        .unroll(ju);
    for (Func f : {sdot, pdot}) {
      f.compute_at(pt, jo).vectorize(ii, kLanes).unroll(ii).unroll(j);
      f.update()
          .reorder(rd.x, ii, j, rd.y)
          .atomic()
          .vectorize(rd.x)
          .vectorize(ii, kLanes)
          .unroll(ii)
          .unroll(j);
    }
    Var dco("dco"), dci("dci");
    for (Func f : {dkAcc, dvAcc}) {
      f.compute_at(out, kb).bound(jr, 0, R).bound(d, 0, D).vectorize(d, kLanes);
      f.update()
          .split(d, dco, dci, DC)
          .reorder(ri.x, dci, jr, ri.y, dco, jc, ri.z, ri.w)
          .atomic()
          .vectorize(ri.x)
          .vectorize(dci, kLanes)
          .unroll(dci)
          .unroll(jr);
    }

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

HALIDE_REGISTER_GENERATOR(AttentionForwardBf16, ratrain_attention_fwd_bf16)
HALIDE_REGISTER_GENERATOR(AttentionBackwardDqBf16,
                          ratrain_attention_bwd_dq_bf16)
HALIDE_REGISTER_GENERATOR(AttentionBackwardDkvBf16,
                          ratrain_attention_bwd_dkv_bf16)
