//===- SafeExp.h - exp without subnormal results ----------------*- C++ -*-===//
//
// The one exp of the generators: attention's probabilities, cross-entropy's
// softmax and SwiGLU's sigmoid.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_KERNELS_GENERATORS_SAFEEXP_H
#define RATRAIN_KERNELS_GENERATORS_SAFEEXP_H

#include "Halide.h"

namespace ratrain::kernels::generators {

/// exp(x) for x in any range, through the clean-vectorizing fast_exp:
/// exactly 0 below e^-64 = 1.6e-28 and at most e^64, so that no probability
/// (attention, cross-entropy) or sigmoid 1 / (1 + e^-g) (SwiGLU) is smaller
/// than that without being 0. A product of a smaller one falls into the
/// subnormal range, where every x86 multiply or FMA takes a microcode
/// assist: with the earlier bounds e^-87 / e^87 the attention ran 5x (scores
/// spread by ~30) to 40x (~130) slower than on small scores, a [512, 32000]
/// cross-entropy of logits spread by ~30 2.7x and a [512, 4096] SwiGLU
/// backward of gates spread by ~100 9x. The values dropped are below what an
/// fp32 sum with them resolves. (Attention's arguments are at most 0 up to
/// rounding, so its upper bound, e^87 until the two helpers were merged,
/// never applied.)
inline Halide::Expr safeExp(Halide::Expr x) {
  using Halide::clamp;
  using Halide::fast_exp;
  using Halide::select;
  return select(x < -64.0f, 0.0f, fast_exp(clamp(x, -64.0f, 64.0f)));
}

} // namespace ratrain::kernels::generators

#endif // RATRAIN_KERNELS_GENERATORS_SAFEEXP_H
