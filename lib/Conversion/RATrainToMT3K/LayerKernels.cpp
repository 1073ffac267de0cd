//===- LayerKernels.cpp - Decoder and head kernel sequences ---------------===//
//
// The mt3k kernel sequences of a decoder layer's and the head's forward and
// backward, and Baichuan2's NormHead.
//
//===----------------------------------------------------------------------===//

#include "StageLowering.h"

#include <cmath>

using namespace mlir;
using namespace ratrain;
using namespace ratrain::lowering;
namespace mt = ratrain::mt3k;

//===----------------------------------------------------------------------===//
// Layer kernel sequences
//===----------------------------------------------------------------------===//

void StageLowering::emitDecoderForward(const LayerWeights &w,
                                       const DecoderActs &a, Value src,
                                       Value dst) {
  int64_t T = dims.tokens, B = dims.batch, S = dims.seq;
  double scale = 1.0 / std::sqrt(double(dims.headDim));
  if (src)
    copy(src, a.x);
  rmsnormFwd(a.x, w.get("input_layernorm.weight"), a.xn1, a.rstd1);
  // Projections; rotary embedding of q and k into the stored q, k (ALiBi:
  // the projections are the stored q, k).
  Value qpre =
      dims.alibi ? a.q2 : scratch("scratch.r1", r1Off, {T, dims.qDim}, elem);
  Value kpre = dims.alibi
                   ? a.k2
                   : scratch("scratch.r1", r1Off + T * dims.qDim * elemBytes(),
                             {T, dims.kvDim}, elem);
  gemm(a.xn1, w.get("q_proj.weight"), qpre, false, true, false);
  gemm(a.xn1, w.get("k_proj.weight"), kpre, false, true, false);
  gemm(a.xn1, w.get("v_proj.weight"), a.v2, false, true, false);
  if (dims.qkvBias) {
    Value ones = scratch("scratch.ones", onesOff, {T, 1}, elem);
    auto bias = [&](StringRef name, int64_t n) {
      return slot(w.get(name), 0, {1, n}, elem);
    };
    gemm(ones, bias("q_proj.bias", dims.qDim), qpre, false, false, true);
    gemm(ones, bias("k_proj.bias", dims.kvDim), kpre, false, false, true);
    gemm(ones, bias("v_proj.bias", dims.kvDim), a.v2, false, false, true);
  }
  Value qpre4 = slot(qpre, 0, {B, S, dims.heads, dims.headDim}, elem);
  Value kpre4 = slot(kpre, 0, {B, S, dims.kvHeads, dims.headDim}, elem);
  // ALiBi: positions enter as the attention's bias instead.
  if (!dims.alibi) {
    rope(qpre4, a.q4, /*backward=*/false);
    rope(kpre4, a.k4, /*backward=*/false);
  }
  mt::AttentionFwdOp::create(b, loc, a.q4, a.k4, a.v4, a.o4, a.lse,
                             /*causal=*/true, /*alibi=*/dims.alibi,
                             b.getF64FloatAttr(scale), slidingWindow());
  // Output projection with the residual: x2 = x + o Wo^T.
  copy(a.x, a.x2);
  gemm(a.o2, w.get("o_proj.weight"), a.x2, false, true, true);
  rmsnormFwd(a.x2, w.get("post_attention_layernorm.weight"), a.xn2, a.rstd2);
  gemm(a.xn2, w.get("gate_proj.weight"), a.gate, false, true, false);
  gemm(a.xn2, w.get("up_proj.weight"), a.up, false, true, false);
  Value hact =
      a.hact ? a.hact : scratch("scratch.w", wOff, {T, dims.ffn}, elem);
  if (!a.hact && !dst)
    return; // a recompute without a stored SwiGLU output has nothing left
  elementwise(mt::ElementwiseKind::swiglu, {a.gate, a.up}, {hact});
  if (!dst)
    return;
  // Down projection with the residual: out = x2 + h Wd^T.
  copy(a.x2, dst);
  gemm(hact, w.get("down_proj.weight"), dst, false, true, true);
}

void StageLowering::emitDecoderBackward(const LayerWeights &w,
                                        const LayerWeights &g,
                                        const DecoderActs &a, Value dy,
                                        Value dx, bool acc) {
  int64_t T = dims.tokens, B = dims.batch, S = dims.seq, E = elemBytes();
  double scale = 1.0 / std::sqrt(double(dims.headDim));
  // Scratch: R1 holds dh, then dq/dk/dv, then dxn1 (over dq); W (the
  // assigned kernel workspace when large enough) dgate/dup, then the MLP
  // norm's input gradient, then do and dq/dk before rope, then the
  // attention norm's input gradient; R2 the gradient of the residual stream
  // between the two halves. No kernel runs in place.
  Value dh = scratch("scratch.r1", r1Off, {T, dims.ffn}, elem);
  Value dq4 =
      scratch("scratch.r1", r1Off, {B, S, dims.heads, dims.headDim}, elem);
  Value dk4 = scratch("scratch.r1", r1Off + T * dims.qDim * E,
                      {B, S, dims.kvHeads, dims.headDim}, elem);
  Value dv4 = scratch("scratch.r1", r1Off + T * (dims.qDim + dims.kvDim) * E,
                      {B, S, dims.kvHeads, dims.headDim}, elem);
  Value dv2 = slot(dv4, 0, {T, dims.kvDim}, elem);
  Value dxn1 = scratch("scratch.r1", r1Off, {T, dims.hidden}, elem);
  Value dgate = scratch("scratch.w", wOff, {T, dims.ffn}, elem);
  Value dup =
      scratch("scratch.w", wOff + T * dims.ffn * E, {T, dims.ffn}, elem);
  Value dO4 =
      scratch("scratch.w", wOff, {B, S, dims.heads, dims.headDim}, elem);
  Value dO2 = slot(dO4, 0, {T, dims.qDim}, elem);
  Value dqpre4 = scratch("scratch.w", wOff + T * dims.qDim * E,
                         {B, S, dims.heads, dims.headDim}, elem);
  Value dkpre4 = scratch("scratch.w", wOff + 2 * T * dims.qDim * E,
                         {B, S, dims.kvHeads, dims.headDim}, elem);
  Value dqpre = slot(dqpre4, 0, {T, dims.qDim}, elem);
  Value dkpre = slot(dkpre4, 0, {T, dims.kvDim}, elem);
  Value dres = scratch("scratch.r2", r2Off, {T, dims.hidden}, elem);

  // MLP: out = x2 + down(swiglu(gate, up)).
  Value hact = a.hact;
  if (!hact) {
    hact = dgate; // free until swiglu_bwd writes dgate
    elementwise(mt::ElementwiseKind::swiglu, {a.gate, a.up}, {hact});
  }
  gemm(dy, w.get("down_proj.weight"), dh, false, false, false);
  gemm(dy, hact, g.get("down_proj.weight"), true, false, acc);
  elementwise(mt::ElementwiseKind::swiglu_bwd, {a.gate, a.up, dh},
              {dgate, dup});
  gemm(dgate, w.get("gate_proj.weight"), dres, false, false, false);
  gemm(dup, w.get("up_proj.weight"), dres, false, false, true);
  gemm(dgate, a.xn2, g.get("gate_proj.weight"), true, false, acc);
  gemm(dup, a.xn2, g.get("up_proj.weight"), true, false, acc);
  // The norm's input gradient goes to W (dgate and dup are dead), so no
  // kernel runs in place; then the residual: dres = dy + d(x2) through norm.
  Value normGrad = scratch("scratch.w", wOff, {T, dims.hidden}, elem);
  rmsnormBwd(a.x2, w.get("post_attention_layernorm.weight"), a.rstd2, dres,
             normGrad, g.get("post_attention_layernorm.weight"), acc);
  elementwise(mt::ElementwiseKind::residual_add, {normGrad, dy}, {dres});
  // Attention: x2 = x + o Wo^T.
  gemm(dres, w.get("o_proj.weight"), dO2, false, false, false);
  gemm(dres, a.o2, g.get("o_proj.weight"), true, false, acc);
  mt::AttentionBwdOp::create(b, loc, a.q4, a.k4, a.v4, a.o4, dO4, a.lse, dq4,
                             dk4, dv4, /*causal=*/true, /*alibi=*/dims.alibi,
                             b.getF64FloatAttr(scale), slidingWindow());
  if (dims.alibi) {
    // No rotary embedding to undo; dq, dk move out of R1, which dxn1
    // overwrites.
    copy(dq4, dqpre4);
    copy(dk4, dkpre4);
  } else {
    rope(dq4, dqpre4, /*backward=*/true);
    rope(dk4, dkpre4, /*backward=*/true);
  }
  gemm(dqpre, w.get("q_proj.weight"), dxn1, false, false, false);
  gemm(dkpre, w.get("k_proj.weight"), dxn1, false, false, true);
  gemm(dv2, w.get("v_proj.weight"), dxn1, false, false, true);
  gemm(dqpre, a.xn1, g.get("q_proj.weight"), true, false, acc);
  gemm(dkpre, a.xn1, g.get("k_proj.weight"), true, false, acc);
  gemm(dv2, a.xn1, g.get("v_proj.weight"), true, false, acc);
  if (dims.qkvBias) {
    Value ones = scratch("scratch.ones", onesOff, {T, 1}, elem);
    auto bias = [&](StringRef name, int64_t n) {
      return slot(g.get(name), 0, {1, n}, elem);
    };
    gemm(ones, dqpre, bias("q_proj.bias", dims.qDim), true, false, acc);
    gemm(ones, dkpre, bias("k_proj.bias", dims.kvDim), true, false, acc);
    gemm(ones, dv2, bias("v_proj.bias", dims.kvDim), true, false, acc);
  }
  // W[0, T h) held do, dead after the attention backward.
  rmsnormBwd(a.x, w.get("input_layernorm.weight"), a.rstd1, dxn1, normGrad,
             g.get("input_layernorm.weight"), acc);
  elementwise(mt::ElementwiseKind::residual_add, {normGrad, dres}, {dx});
}

void StageLowering::emitDecoderBackwardInput(const LayerWeights &w,
                                             const DecoderActs &a,
                                             const DecoderDeferred &d, Value dy,
                                             Value dx) {
  int64_t T = dims.tokens, B = dims.batch, S = dims.seq, E = elemBytes();
  double scale = 1.0 / std::sqrt(double(dims.headDim));
  // emitDecoderBackward without the weight gradients; what they read goes
  // to the deferred buffer instead of the scratch area. Scratch: R1 holds
  // dh, then dq/dk before rope, and the discarded norm weight gradients
  // (each written while R1 holds nothing live); W holds do, then the norms'
  // input gradients.
  Value dh = scratch("scratch.r1", r1Off, {T, dims.ffn}, elem);
  Value dq4 =
      scratch("scratch.r1", r1Off, {B, S, dims.heads, dims.headDim}, elem);
  Value dk4 = scratch("scratch.r1", r1Off + T * dims.qDim * E,
                      {B, S, dims.kvHeads, dims.headDim}, elem);
  Value discarded = scratch("scratch.r1", r1Off, {dims.hidden}, elem);
  Value dO4 =
      scratch("scratch.w", wOff, {B, S, dims.heads, dims.headDim}, elem);
  Value dO2 = slot(dO4, 0, {T, dims.qDim}, elem);
  Value normGrad = scratch("scratch.w", wOff, {T, dims.hidden}, elem);

  // The output gradient is overwritten by dx (and the next layer's
  // backward): keep it for down_proj's weight gradient.
  copy(dy, d.dy);
  // MLP: out = x2 + down(swiglu(gate, up)).
  gemm(dy, w.get("down_proj.weight"), dh, false, false, false);
  elementwise(mt::ElementwiseKind::swiglu_bwd, {a.gate, a.up, dh},
              {d.dgate, d.dup});
  gemm(d.dgate, w.get("gate_proj.weight"), d.dxn2, false, false, false);
  gemm(d.dup, w.get("up_proj.weight"), d.dxn2, false, false, true);
  // The fused norm backward; its weight gradient is discarded here and
  // computed again by the weight part.
  rmsnormBwd(a.x2, w.get("post_attention_layernorm.weight"), a.rstd2, d.dxn2,
             normGrad, discarded, /*acc=*/false);
  elementwise(mt::ElementwiseKind::residual_add, {normGrad, dy}, {d.dres});
  // Attention: x2 = x + o Wo^T.
  gemm(d.dres, w.get("o_proj.weight"), dO2, false, false, false);
  mt::AttentionBwdOp::create(b, loc, a.q4, a.k4, a.v4, a.o4, dO4, a.lse, dq4,
                             dk4, d.dv4, /*causal=*/true, /*alibi=*/dims.alibi,
                             b.getF64FloatAttr(scale), slidingWindow());
  if (dims.alibi) {
    copy(dq4, d.dq4);
    copy(dk4, d.dk4);
  } else {
    rope(dq4, d.dq4, /*backward=*/true);
    rope(dk4, d.dk4, /*backward=*/true);
  }
  gemm(d.dq2, w.get("q_proj.weight"), d.dxn1, false, false, false);
  gemm(d.dk2, w.get("k_proj.weight"), d.dxn1, false, false, true);
  gemm(d.dv2, w.get("v_proj.weight"), d.dxn1, false, false, true);
  // W[0, T h) held do, dead after the attention backward.
  rmsnormBwd(a.x, w.get("input_layernorm.weight"), a.rstd1, d.dxn1, normGrad,
             discarded, /*acc=*/false);
  elementwise(mt::ElementwiseKind::residual_add, {normGrad, d.dres}, {dx});
}

void StageLowering::emitDecoderBackwardWeight(const LayerWeights &w,
                                              const LayerWeights &g,
                                              const DecoderActs &a,
                                              const DecoderDeferred &d,
                                              bool acc) {
  int64_t T = dims.tokens;
  // Scratch: W holds the recomputed SwiGLU output (when the activations do
  // not store it), R1 the discarded input gradients of the norms.
  Value discarded = scratch("scratch.r1", r1Off, {T, dims.hidden}, elem);
  Value hact = a.hact;
  if (!hact) {
    hact = scratch("scratch.w", wOff, {T, dims.ffn}, elem);
    elementwise(mt::ElementwiseKind::swiglu, {a.gate, a.up}, {hact});
  }
  gemm(d.dy, hact, g.get("down_proj.weight"), true, false, acc);
  gemm(d.dgate, a.xn2, g.get("gate_proj.weight"), true, false, acc);
  gemm(d.dup, a.xn2, g.get("up_proj.weight"), true, false, acc);
  rmsnormBwd(a.x2, w.get("post_attention_layernorm.weight"), a.rstd2, d.dxn2,
             discarded, g.get("post_attention_layernorm.weight"), acc);
  gemm(d.dres, a.o2, g.get("o_proj.weight"), true, false, acc);
  gemm(d.dq2, a.xn1, g.get("q_proj.weight"), true, false, acc);
  gemm(d.dk2, a.xn1, g.get("k_proj.weight"), true, false, acc);
  gemm(d.dv2, a.xn1, g.get("v_proj.weight"), true, false, acc);
  if (dims.qkvBias) {
    Value ones = scratch("scratch.ones", onesOff, {T, 1}, elem);
    auto bias = [&](StringRef name, int64_t n) {
      return slot(g.get(name), 0, {1, n}, elem);
    };
    gemm(ones, d.dq2, bias("q_proj.bias", dims.qDim), true, false, acc);
    gemm(ones, d.dk2, bias("k_proj.bias", dims.kvDim), true, false, acc);
    gemm(ones, d.dv2, bias("v_proj.bias", dims.kvDim), true, false, acc);
  }
  rmsnormBwd(a.x, w.get("input_layernorm.weight"), a.rstd1, d.dxn1, discarded,
             g.get("input_layernorm.weight"), acc);
}

void StageLowering::emitHeadForward(const LayerWeights &w, Value act,
                                    int64_t mb, Value src) {
  int64_t T = dims.tokens;
  Type f32 = Float32Type::get(ctx);
  Value x = slot(act, head.x, {T, dims.hidden}, elem);
  Value xn = slot(act, head.xn, {T, dims.hidden}, elem);
  Value logits = slot(act, head.logits, {T, dims.vocab}, elem);
  Value rstd = slot(act, head.rstd, {T}, f32);
  Value loss = slot(act, head.loss, {}, f32);
  Value labels = slot(act, head.labels, {T}, IntegerType::get(ctx, 32));
  copy(src, x);
  rmsnormFwd(x, w.get("model.norm.weight"), xn, rstd);
  gemm(xn, headWeight(w), logits, false, true, false);
  mt::LoadBatchOp::create(b, loc, mt::BatchField::labels, labels, mb);
  elementwise(mt::ElementwiseKind::cross_entropy, {logits, labels}, {loss});
  mt::ReportLossOp::create(b, loc, loss, mb);
  // The step's loss is the mean over all T * m tokens of the stage's
  // micro-batches (and over the data-parallel replicas: the gradient sync
  // averages), so each micro-batch's logits gradient is scaled by 1/(T m)
  // (dims.lossScale: dp / (T sum(shares)) with uneven shares).
  elementwise(mt::ElementwiseKind::cross_entropy_bwd, {logits, labels},
              {logits}, std::nullopt, dims.lossScale);
}

void StageLowering::emitHeadBackward(const LayerWeights &w,
                                     const LayerWeights &g, Value act, Value dx,
                                     bool acc) {
  int64_t T = dims.tokens;
  Type f32 = Float32Type::get(ctx);
  Value x = slot(act, head.x, {T, dims.hidden}, elem);
  Value xn = slot(act, head.xn, {T, dims.hidden}, elem);
  Value dlogits = slot(act, head.logits, {T, dims.vocab}, elem);
  Value rstd = slot(act, head.rstd, {T}, f32);
  Value dxn = scratch("scratch.r2", r2Off, {T, dims.hidden}, elem);
  gemm(dlogits, headWeight(w), dxn, false, false, false);
  // With a NormHead this is the gradient of the normalized weight until
  // emitNormHeadJacobian maps it.
  gemm(dlogits, xn, g.get("lm_head.weight"), true, false, acc);
  rmsnormBwd(x, w.get("model.norm.weight"), rstd, dxn, dx,
             g.get("model.norm.weight"), acc);
}

void StageLowering::emitHeadBackwardInput(const LayerWeights &w, Value act,
                                          Value dxn, Value dx) {
  int64_t T = dims.tokens;
  Type f32 = Float32Type::get(ctx);
  Value x = slot(act, head.x, {T, dims.hidden}, elem);
  Value dlogits = slot(act, head.logits, {T, dims.vocab}, elem);
  Value rstd = slot(act, head.rstd, {T}, f32);
  Value discarded = scratch("scratch.r1", r1Off, {dims.hidden}, elem);
  gemm(dlogits, headWeight(w), dxn, false, false, false);
  rmsnormBwd(x, w.get("model.norm.weight"), rstd, dxn, dx, discarded,
             /*acc=*/false);
}

void StageLowering::emitHeadBackwardWeight(const LayerWeights &w,
                                           const LayerWeights &g, Value act,
                                           Value dxn, bool acc) {
  int64_t T = dims.tokens;
  Type f32 = Float32Type::get(ctx);
  Value x = slot(act, head.x, {T, dims.hidden}, elem);
  Value xn = slot(act, head.xn, {T, dims.hidden}, elem);
  Value dlogits = slot(act, head.logits, {T, dims.vocab}, elem);
  Value rstd = slot(act, head.rstd, {T}, f32);
  Value discarded = scratch("scratch.r1", r1Off, {T, dims.hidden}, elem);
  // With a NormHead the gradient of the normalized weight, as in
  // emitHeadBackward.
  gemm(dlogits, xn, g.get("lm_head.weight"), true, false, acc);
  rmsnormBwd(x, w.get("model.norm.weight"), rstd, dxn, discarded,
             g.get("model.norm.weight"), acc);
}

Value StageLowering::headWeight(const LayerWeights &w) {
  Value weight = w.get("lm_head.weight");
  if (!dims.normHead)
    return weight;
  int64_t V = dims.vocab, h = dims.hidden;
  Value normalized = scratch("scratch.normhead",
                             normHeadOff + normHeadSlots.weight, {V, h}, elem);
  if (normHeadSource)
    return normalized;
  // First use in the step: w_hat = w / ||w|| per vocabulary row, as RMSNorm
  // with the weight 1/sqrt(h): w / sqrt(||w||^2 / h + eps) / sqrt(h).
  normHeadSource = weight;
  Value gamma =
      scratch("scratch.normhead", normHeadOff + normHeadSlots.gamma, {h}, elem);
  Value rnorm = scratch("scratch.normhead", normHeadOff + normHeadSlots.rnorm,
                        {V}, Float32Type::get(ctx));
  mt::FillOp::create(b, loc, gamma, APFloat(1.0 / std::sqrt(double(h))));
  mt::RMSNormFwdOp::create(b, loc, weight, gamma, normalized, rnorm,
                           APFloat(normHeadEps(h)));
  return normalized;
}

void StageLowering::emitNormHeadJacobian(GradReadyOp op) {
  int64_t layer = op.getGrad().getType().getLayer();
  int64_t V = dims.vocab, h = dims.hidden;
  LayerWeights g = weights(gradFlat(op.getGrad(), layer), layer, elem);
  Value grad = g.get("lm_head.weight");
  // dL/dw = (g - w_hat (w_hat . g)) / ||w|| per row, g = dL/dw_hat: the
  // RMSNorm backward with the forward's weight 1/sqrt(h) and 1/rms. Its
  // output goes to the normalized weight's slot (dead after the last head
  // backward), then replaces the gradient; the RMSNorm weight gradient is
  // discarded.
  Value out = scratch("scratch.normhead", normHeadOff + normHeadSlots.weight,
                      {V, h}, elem);
  Value gamma =
      scratch("scratch.normhead", normHeadOff + normHeadSlots.gamma, {h}, elem);
  Value dgamma = scratch("scratch.normhead", normHeadOff + normHeadSlots.dgamma,
                         {h}, elem);
  Value rnorm = scratch("scratch.normhead", normHeadOff + normHeadSlots.rnorm,
                        {V}, Float32Type::get(ctx));
  rmsnormBwd(normHeadSource, gamma, rnorm, grad, out, dgamma,
             /*acc=*/false);
  copy(out, grad);
}
