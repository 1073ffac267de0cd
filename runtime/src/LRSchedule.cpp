//===- LRSchedule.cpp - Learning-rate schedules ---------------------------===//

#include "ratrain/runtime/LRSchedule.h"
#include "ratrain/runtime/Error.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace ratrain::rt;

std::optional<LRDecay> ratrain::rt::parseLRDecay(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<LRDecay>>(name)
      .Case("constant", LRDecay::Constant)
      .Case("cosine", LRDecay::Cosine)
      .Case("linear", LRDecay::Linear)
      .Default(std::nullopt);
}

llvm::StringRef ratrain::rt::stringifyLRDecay(LRDecay decay) {
  switch (decay) {
  case LRDecay::Constant:
    return "constant";
  case LRDecay::Cosine:
    return "cosine";
  case LRDecay::Linear:
    return "linear";
  }
  return "constant";
}

double LRSchedule::at(uint64_t step) const {
  if (warmupSteps > 0 && step <= warmupSteps)
    return peak * double(step) / double(warmupSteps);
  if (decay == LRDecay::Constant)
    return peak;
  if (step >= decaySteps)
    return min;
  double progress =
      double(step - warmupSteps) / double(decaySteps - warmupSteps);
  double factor = decay == LRDecay::Cosine
                      ? 0.5 * (1.0 + std::cos(M_PI * progress))
                      : 1.0 - progress;
  return min + (peak - min) * factor;
}

llvm::Error LRSchedule::validate() const {
  if (!std::isfinite(peak) || peak < 0)
    return makeError(
        llvm::formatv("--lr must be a non-negative number, got {0}", peak));
  if (!std::isfinite(min) || min < 0 || min > peak)
    return makeError(llvm::formatv(
        "--min-lr must be between 0 and the learning rate {0}, got {1}", peak,
        min));
  if (decay != LRDecay::Constant && decaySteps <= warmupSteps)
    return makeError(llvm::formatv("the {0} decay ends at step {1}, not after "
                                   "the {2} warm-up steps (--decay-steps, "
                                   "--warmup-steps)",
                                   stringifyLRDecay(decay), decaySteps,
                                   warmupSteps));
  return llvm::Error::success();
}
