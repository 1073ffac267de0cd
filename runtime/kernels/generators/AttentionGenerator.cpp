//===- AttentionGenerator.cpp - Causal GQA attention forward --------------===//
//
// Layouts (Halide coordinates, innermost first), matching row-major [B*S,
// heads*D] activations:
//   q, o          : (d, h,  s, b)      h  < Hq
//   k, v          : (d, hk, s, b)      hk < Hkv, query head h uses hk = h / G,
//                                      G = Hq / Hkv (grouped-query attention)
//   lse           : (s, h, b)          log-sum-exp of the scaled scores
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
// is ever materialized:
//
//   forward  : scores -> row max -> p = exp(s - max) (one exp per score)
//              -> row sum, lse = max + log(sum) (saved) -> O = p V / sum
//
// The backward of these element types is AttentionBackwardGenerator.cpp
// (one key block per call, S and dP computed once); the vdpbf16ps bf16
// kernels of AttentionBf16Generator.cpp run the same form in pair layouts. The
// head dimension is a generator parameter (the inner d loops unroll fully into
// registers); 32, 64 and 128 are built.
//
// Sliding window (the runtime input `window`, Mistral): with window W > 0 a
// query i sees the keys j with i - W < j <= i (the W tokens up to itself,
// as transformers' sliding-window mask); W <= 0 is plain causal attention.
// The forward skips key tiles wholly before the window.
//
// Element type: the generator is a template over the storage of q, k, v
// and o: `float`, or `uint16_t` holding bf16 / fp16 bits (GeneratorParam
// `elem`, ElementType.h). lse stays fp32, and so does all arithmetic: a
// 16-bit operand is widened where it is staged (the K / V heads, and the
// query block's q rows), and a result rounded once where it is stored.
//
// ALiBi (generator parameter `alibi`, Baichuan-13B / BLOOM): the generator
// takes one more input, `slopes` (h), and adds the linear bias
// slopes(h) * (j - i) to every scaled score (j <= i: the bias is <= 0); the
// lse includes it, and the backward recomputes the probabilities with it.
// With `alibi` off (RoPE models) the input does not exist and the pipeline
// is exactly the plain one.
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"

using namespace Halide;
using namespace ratrain::kernels::generators::attention;

namespace {

/// Causal attention forward. Output tuple (o, lse) over (d, h, s, b): the
/// lse buffer is passed with stride 0 in d, and the pipeline is told so: a
/// row's D stores of its lse then go to one known address and LLVM keeps the
/// last. (Left unconstrained, the stride made them D scalar stores with
/// their address arithmetic per row: 11% of the bf16 forward at S 256,
/// D 64, docs/kernels.md.)
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
    // The query block's rows, staged contiguous (and widened when 16-bit):
    // the score tiles then address their rows from one base pointer.
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
    // One exp per score: p = exp(s - max) gives the row sum (and lse) and
    // the unnormalized probabilities; O is their product with V divided by
    // the sum.
    Func p("p");
    p(ji, i, jt, h, b) =
        select(visible(jt * JT + ji, i, window),
               safeExp(sc(ji, i, jt, h, b) - mx(i, h, b)), 0.0f);
    ls(i, h, b) = 0.0f;
    ls(i, h, b) += p(rj.x, i, rj.y, h, b);
    lse(i, h, b) = mx(i, h, b) + log(ls(i, h, b));
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

    out(d, h, s, b) =
        Tuple(store(o(d, s % R, s / R, h, b) / ls(s, h, b)), lse(s, h, b));

    // ---- schedule ----
    Var qb("qb"), hb("hb"), io("io"), iu("iu");
    scheduleRowBlocks(out, d, s, h, b, qb, hb, D, QB, R, DC);
    Vn.compute_at(out, hb).vectorize(d, kLanes);
    Kt.compute_at(out, hb).bound(ji, 0, JT).reorder(ji, d, jt).vectorize(
        ji, kLanes);
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
    scheduleRowMax(mx, rj, out, qb);
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
    // lse: stride 0 along d, the runtime's layout (see the class comment).
    outF.output_buffers()[1].dim(0).set_stride(0);
    constrainSlopes();
  }
};

} // namespace

HALIDE_REGISTER_GENERATOR(AttentionForward<float>, ratrain_attention_fwd)
HALIDE_REGISTER_GENERATOR(AttentionForward<uint16_t>, ratrain_attention_fwd_16)
