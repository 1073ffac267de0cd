//===- AttentionBf16Generator.cpp - bf16 attention on vdpbf16ps -----------===//
//
// The bf16 attention whose products run on vdpbf16ps: the forward, and the
// backward in FlashAttention-2's key-block form (a per-head prepare step and
// one call per key block, driven by lib/Attention.cpp as the fp32 key-block
// backward of AttentionBackwardGenerator.cpp). The forward's algorithm,
// tiling, masking, ALiBi and window are AttentionGenerator.cpp's, but every
// product runs on bf16 operands with fp32 accumulation, as a VectorReduce of
// factor 2 that Halide lowers to vdpbf16ps (32 bf16 products per
// instruction, twice the fp32 FMA rate). The softmax, exp and masking stay
// fp32.
//
// The backward computes S^T and dP^T once per score (queries on the lanes)
// and takes five products per score, where an earlier two-pass form (a dq
// pass and a dk/dv pass) recomputed S and dP and took seven: 1.4x faster at
// S 2048, D 128 and 1.3x at the 85M model's S 256, D 64 (docs/kernels.md).
//
// vdpbf16ps multiplies pairs of bf16 along the reduced axis, so each product
// needs both operands with that axis in adjacent pairs and the other
// operand's free axis on the 16 vector lanes:
//
//   product           reduced  broadcast operand     lane operand (staged)
//   S = Q K^T         d        q row, d pairs         Kd(kk, key, dp)
//   O = P V           keys     P row, key pairs       Vk(kk, d, keypair)
//   S^T, dP^T         d        k / v row, d pairs     Qd, dOd(kk, query, dp)
//   dV = P^T dO       queries  P^T row, query pairs   dOq(kk, d, querypair)
//   dK = dS^T Q       queries  dS^T row, query pairs  Qq(kk, d, querypair)
//   dQ = dS K         keys     dS row, key pairs      Kp(kk, d, keypair)
//
// (kk is the pair element.) The operands with d in pairs and rows on the
// lanes (Kd, Qd, dOd) are word transposes, which the runtime does with
// PackWords.h's AVX-512 16 x 16 transposes before the pipelines (Halide's
// 32-bit copies took 8% of the forward and 13% of the backward at S 256,
// D 64). The forward stages V with keys in pairs per head; the backward's
// prepare step stages q and dO with queries in pairs (Qq, dOq), and each key
// block its k rows in pairs (Kp) and its dS^T with two keys' rows
// interleaved (the broadcast operand of dQ). P and dS are rounded to bf16
// before their products, as FlashAttention's bf16 kernels do: this is the
// one numerical difference from the fp32 pipelines (the products themselves
// are exact in fp32; the sums differ in order).
//
// Target: these pipelines are compiled for avx512_sapphirerapids (for
// vdpbf16ps), whose LLVM CPU model also has AVX512-FP16, which Zen 4 lacks:
// no 16-bit value may be moved into or out of a vector lane on its own (LLVM
// would use vmovw). Every load and store is therefore a dense vector of 16-bit
// elements or a vector of one 32-bit pair: the pair-staging of rows (Vk, Kp,
// dOq, Qq, and of dS^T's keys) loads dense rows and stores them interleaved.
// The prepare step has no products and is compiled for the generic AVX-512
// target.
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

/// The layout of an operand the runtime staged with the word transpose
/// (lib/Attention.cpp, stageDPairs): (kk, row, dp, tile) dense, d in pairs
/// and the 32 rows of a tile on the lanes, for head dimension D.
template <typename Param> void constrainDPairs(Param &in, int D) {
  const int T = kKeyTile;
  in.dim(0).set_stride(1).set_min(0).set_extent(2);
  in.dim(1).set_stride(2).set_min(0).set_extent(T);
  in.dim(2).set_stride(2 * T).set_min(0).set_extent(D / 2);
  in.dim(3).set_stride(T * D);
}

/// bf16 attention forward: (o, lse) as AttentionForward, with S = Q K^T and
/// O = P V on vdpbf16ps.
class AttentionForwardBf16
    : public AttentionBase<AttentionForwardBf16, uint16_t> {
public:
  using Base = AttentionBase<AttentionForwardBf16, uint16_t>;
  RATRAIN_ATTENTION_BASE_MEMBERS(Base)
  In<Buffer<uint16_t>> q{"q", 4};
  /// K with d in pairs and the keys of a 32-key tile on the lanes,
  /// (kk, key, dp, tile, kv head, b) = k(2 dp + kk, head, 32 tile + key, b),
  /// zeros past S: the runtime's word transpose (lib/Attention.cpp).
  In<Buffer<uint16_t>> kd{"kd", 6};
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
    Expr G = q.dim(1).extent() / kd.dim(4).extent();
    Expr nTiles = (S + JT - 1) / JT;

    // K staged by the runtime; V with keys in pairs.
    Func Kd("Kd"), Vk("Vk");
    Kd(kk, ji, dp, jt, h, b) = kd(kk, ji, dp, jt, h / G, b);
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
    scheduleRowMax(mx, rj, out, qb);
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
    constrainDPairs(kd, D);
    kd.dim(3).set_min(0);
    v.dim(0).set_stride(1).set_min(0).set_extent(D);
    Func outF = out;
    outF.output_buffers()[0].dim(0).set_stride(1).set_min(0).set_extent(D);
    // lse: stride 0 along d (AttentionForward's comment says why).
    outF.output_buffers()[1].dim(0).set_stride(0);
    constrainSlopes();
  }
};

/// The first step of a query head's key-block backward on vdpbf16ps, with
/// the runtime's word transpose (lib/Attention.cpp, which stages q and dO
/// with d in pairs and the queries on the lanes): q and dO with the queries
/// in pairs and d on the lanes, and delta = rowsum(dO * O) in fp32. Rows
/// past the last (up to the 32-row tile) repeat it; the block pipeline masks
/// them.
class AttentionBackwardPrepareBf16
    : public AttentionBase<AttentionBackwardPrepareBf16, uint16_t> {
public:
  using Base = AttentionBase<AttentionBackwardPrepareBf16, uint16_t>;
  RATRAIN_ATTENTION_BASE_MEMBERS(Base)
  In<Buffer<uint16_t>> q{"q", 2};     // (d, i), rows [0, S)
  In<Buffer<uint16_t>> o{"o", 2};     // (d, i)
  In<Buffer<uint16_t>> dO{"dout", 2}; // (d, i)
  /// (Qq, dOq)(kk, d, ip) = (q, dO)(d, 2 ip + kk): queries in pairs, d on
  /// the lanes (for dk and dv).
  Out<Func> rpairs{"rpairs", {UInt(16), UInt(16)}, 3};
  Out<Buffer<float>> delta{"delta", 1};

  void generate() {
    Var kk("kk"), d("d"), ip("ip"), i("i");
    Expr last = q.dim(1).extent() - 1;
    Expr pairRow = min(2 * ip + kk, last);
    rpairs(kk, d, ip) = Tuple(q(d, pairRow), dO(d, pairRow));
    RDom rd(0, q.dim(0).extent(), "rd");
    Func sum("sum");
    sum(i) = 0.0f;
    sum(i) += bf16Value(dO(rd, i)) * bf16Value(o(rd, i));
    delta(i) = sum(i);

    scheduleRowPairs(rpairs, kk, d, headDim);
    sum.compute_at(delta, i);
    sum.update().atomic().vectorize(rd, kLanes);
    for (auto *in : {&q, &o, &dO})
      in->dim(0).set_stride(1).set_min(0).set_extent(headDim);
    q.dim(1).set_min(0);
    Func rpairsF = rpairs;
    // (The second of a Tuple's buffers has the first one's mins and extents.)
    for (int n = 0; n < 2; ++n) {
      rpairsF.output_buffers()[n].dim(0).set_stride(1);
      rpairsF.output_buffers()[n].dim(1).set_stride(2);
    }
    rpairsF.output_buffers()[0].dim(0).set_min(0).set_extent(2);
    rpairsF.output_buffers()[0].dim(1).set_min(0).set_extent(headDim);
  }
};

/// The key-block backward of one query head on vdpbf16ps: one call takes a
/// block of keys [j0, j1) against the query tiles that see it, computes S^T
/// and dP^T once (queries on the lanes), P^T and dS^T in bf16, and from them
/// all three gradients, five products per score:
///   dk(block) += dS^T Q,  dv(block) += P^T dO   (query pairs broadcast)
///   dq(tiles) += dS K(block)                     (key pairs broadcast)
/// The last needs dS with keys in pairs: each query tile's dS^T is restaged
/// with two keys' rows interleaved (dsK), a copy per score against the five
/// products' 5 D / 32 vdpbf16ps. As AttentionBackwardBlock, the outputs are
/// fp32 accumulators the runtime zeroes per head and adds into.
class AttentionBackwardBlockBf16
    : public AttentionBase<AttentionBackwardBlockBf16, uint16_t> {
public:
  using Base = AttentionBase<AttentionBackwardBlockBf16, uint16_t>;
  RATRAIN_ATTENTION_BASE_MEMBERS(Base)
  In<Buffer<uint16_t>> qd{"qd", 4};     // Qd (kk, ii, dp, t), global tiles
  In<Buffer<uint16_t>> dOd{"doutd", 4}; // dOd
  In<Buffer<uint16_t>> qq{"qq", 3};     // Qq (kk, d, ip), global pairs
  In<Buffer<uint16_t>> dOq{"doutq", 3}; // dOq
  /// dq's accumulator is (d, ii, t): the rows of whole 32-query tiles.
  RATRAIN_ATTENTION_BLOCK_TAIL(uint16_t, 3)

  void generate() {
    _halide_user_assert(Elem(this->elem) == Elem::BF16)
        << "the vdpbf16ps attention is bf16 only\n";
    const int D = headDim, IT = kKeyTile, DP = D / 2;
    const int DC = std::min(D, 64), R = 256 / DC; // 16 zmm accumulators
    Var d("d"), j("j"), t("t"), ii("ii"), kk("kk"), jp("jp");
    Expr i0 = lse.dim(0).min(), i1 = i0 + lse.dim(0).extent();
    Expr j0 = k.dim(1).min(), j1 = j0 + k.dim(1).extent();
    // i0 and j0 are multiples of the 32-row tile (the runtime's blocks).
    Expr t0 = i0 / IT, nTiles = (i1 - i0 + IT - 1) / IT;
    Expr jp0 = j0 / 2, nKeyPairs = (j1 - j0 + 1) / 2;

    // The block's k and v rows, contiguous; k again with keys in pairs.
    Func Kr("Kr"), Vr("Vr"), Kp("Kp");
    Kr(d, j) = k(d, clamp(j, j0, j1 - 1));
    Vr(d, j) = v(d, clamp(j, j0, j1 - 1));
    Kp(kk, d, jp) = k(d, clamp(2 * jp + kk, j0, j1 - 1));

    // S^T and dP^T: the queries of tile t on the lanes, key rows broadcast,
    // in groups of 8 keys (jo) as the schedule computes them; a group whose
    // keys all come after the tile's last query (on the block's diagonal:
    // P is 0 there) is skipped.
    Var ju("ju"), jo("jo");
    Expr jg = j0 + jo * 8 + ju;
    RDom rd(0, 2, 0, DP, "rd");
    rd.where(j0 + jo * 8 <= t * IT + IT - 1);
    Func sdot("sdot"), pdot("pdot");
    sdot(ii, ju, jo, t) = 0.0f;
    sdot(ii, ju, jo, t) +=
        bf16Value(qd(rd.x, ii, rd.y, t)) * bf16Value(Kr(2 * rd.y + rd.x, jg));
    pdot(ii, ju, jo, t) = 0.0f;
    pdot(ii, ju, jo, t) +=
        bf16Value(dOd(rd.x, ii, rd.y, t)) * bf16Value(Vr(2 * rd.y + rd.x, jg));
    // (P^T, dS^T) in bf16, queries innermost (pairs adjacent); zero where
    // the key is masked, past the block or the query past the rows.
    Expr jl = j - j0;
    Expr ig = t * IT + ii, igc = clamp(ig, i0, i1 - 1);
    Expr valid = visible(j, ig, window) && ig < i1 && j < j1;
    Expr pv = select(valid,
                     safeExp(sdot(ii, jl % 8, jl / 8, t) * scale +
                             slope * cast<float>(j - ig) - lse(igc)),
                     0.0f);
    Func pt("pt");
    pt(ii, j, t) =
        Tuple(bf16Bits(pv),
              bf16Bits(pv * (pdot(ii, jl % 8, jl / 8, t) - delta(igc))));

    // dk, dv on register tiles of R key rows x DC head dims, summed over the
    // query tiles; tiles that end before the chunk's first key are skipped.
    Var jr("jr"), jc("jc");
    RDom ri(0, 2, 0, IT / 2, t0, nTiles, "ri");
    ri.where(ri.z * IT + IT - 1 >= j0 + jc * R);
    Expr iqp = ri.z * (IT / 2) + ri.y;
    Expr key = j0 + jc * R + jr;
    Func kAcc("kAcc"), vAcc("vAcc");
    kAcc(d, jr, jc) = 0.0f;
    kAcc(d, jr, jc) += bf16Value(pt(2 * ri.y + ri.x, key, ri.z)[1]) *
                       bf16Value(qq(ri.x, d, iqp));
    vAcc(d, jr, jc) = 0.0f;
    vAcc(d, jr, jc) += bf16Value(pt(2 * ri.y + ri.x, key, ri.z)[0]) *
                       bf16Value(dOq(ri.x, d, iqp));
    dkv(d, j) = Tuple(undef<float>(), undef<float>());
    dkv(d, j) = Tuple(dkv(d, j)[0] + kAcc(d, jl % R, jl / R),
                      dkv(d, j)[1] + vAcc(d, jl % R, jl / R));

    // dq on register tiles of R query rows x DC head dims, summed over the
    // block's key pairs; pairs after the chunk's last row are skipped.
    Func dsK("dsK");
    dsK(kk, ii, jp, t) = pt(ii, 2 * jp + kk, t)[1];
    Var ir("ir"), ic("ic");
    RDom rk(0, 2, 0, nKeyPairs, "rk");
    rk.where(j0 + 2 * rk.y <= t * IT + ic * R + R - 1);
    Func qAcc("qAcc");
    qAcc(d, ir, ic, t) = 0.0f;
    qAcc(d, ir, ic, t) += bf16Value(dsK(rk.x, ic * R + ir, jp0 + rk.y, t)) *
                          bf16Value(Kp(rk.x, d, jp0 + rk.y));
    dq(d, ii, t) = undef<float>();
    dq(d, ii, t) = dq(d, ii, t) + qAcc(d, ii % R, ii / R, t);

    // ---- schedule ----
    Kr.compute_root().vectorize(d, kLanes);
    Vr.compute_root().vectorize(d, kLanes);
    scheduleRowPairs(Kp.compute_root(), kk, d, D);

    // S^T and dP^T per 32 queries x 8 keys; the query tile outermost, so
    // that its q and dO pairs are read from L1 for all of the block's keys.
    pt.compute_root()
        .bound(ii, 0, IT)
        .bound(j, j0, (j1 - j0 + 7) / 8 * 8)
        .split(j, jo, ju, 8)
        .reorder(ii, ju, jo, t)
        .vectorize(ii, kLanes)
        .unroll(ii)
        .unroll(ju);
    pt.specialize(window <= 0 && slope == 0.0f);
    for (Func f : {sdot, pdot}) {
      f.compute_at(pt, jo)
          .bound(ju, 0, 8)
          .vectorize(ii, kLanes)
          .unroll(ii)
          .unroll(ju);
      f.update()
          .reorder(rd.x, ii, ju, rd.y)
          .atomic()
          .vectorize(rd.x)
          .vectorize(ii, kLanes)
          .unroll(ii)
          .unroll(ju);
    }

    // dk, dv: the block's accumulators (KB x D fp32 each), the query tile
    // outermost so that its pairs stay in L1 across the key chunks.
    scheduleBlockAccumulation(dkv, d, j, R, DC);
    Var dco("dco"), dci("dci");
    for (Func f : {kAcc, vAcc}) {
      f.compute_root().bound(jr, 0, R).bound(d, 0, D).vectorize(d, kLanes);
      f.update()
          .split(d, dco, dci, DC)
          .reorder(ri.x, dci, jr, ri.y, dco, jc, ri.z)
          .atomic()
          .vectorize(ri.x)
          .vectorize(dci, kLanes)
          .unroll(dci)
          .unroll(jr);
    }

    // dq: per query tile, its dS^T restaged in key pairs, then R x DC
    // register tiles over the block's key pairs.
    Var ico("ico"), iri("iri");
    dq.update()
        .split(ii, ico, iri, R)
        .split(d, dco, dci, DC)
        .reorder(dci, iri, dco, ico, t)
        .vectorize(dci, kLanes)
        .unroll(dci);
    scheduleRowPairs(dsK.compute_at(dq, t), kk, ii, IT);
    qAcc.compute_at(dq, t).bound(ir, 0, R).bound(d, 0, D).vectorize(d, kLanes);
    qAcc.update()
        .split(d, dco, dci, DC)
        .reorder(rk.x, dci, ir, rk.y, dco, ic)
        .atomic()
        .vectorize(rk.x)
        .vectorize(dci, kLanes)
        .unroll(dci)
        .unroll(ir);

    constrainDPairs(qd, D);
    constrainDPairs(dOd, D);
    for (auto *in : {&qq, &dOq}) {
      in->dim(0).set_stride(1).set_min(0).set_extent(2);
      in->dim(1).set_stride(2).set_min(0).set_extent(D);
      in->dim(2).set_stride(2 * D);
    }
    for (auto *in : {&k, &v})
      in->dim(0).set_stride(1).set_min(0).set_extent(D);
    delta.dim(0).set_stride(1);
    lse.dim(0).set_stride(1);
    Func dqF = dq, dkvF = dkv;
    dqF.output_buffer().dim(0).set_stride(1).set_min(0).set_extent(D);
    dqF.output_buffer().dim(1).set_stride(D).set_min(0).set_extent(IT);
    dqF.output_buffer().dim(2).set_stride(IT * D);
    dkvF.output_buffers()[0].dim(0).set_stride(1).set_min(0).set_extent(D);
    dkvF.output_buffers()[0].dim(1).set_min(k.dim(1).min());
    dkvF.output_buffers()[1].dim(0).set_stride(1);
  }
};

} // namespace

HALIDE_REGISTER_GENERATOR(AttentionForwardBf16, ratrain_attention_fwd_bf16)
HALIDE_REGISTER_GENERATOR(AttentionBackwardPrepareBf16,
                          ratrain_attention_bwd_prepare_pairs_bf16)
HALIDE_REGISTER_GENERATOR(AttentionBackwardBlockBf16,
                          ratrain_attention_bwd_block_bf16)
