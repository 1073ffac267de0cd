//===- LRSchedule.h - Learning-rate schedules -------------------*- C++ -*-===//
//
// The learning rate of each optimizer step (1-based), as Megatron-LM and
// transformers' get_cosine_schedule_with_warmup / get_linear_... compute it:
//
//   t <= warmup:            peak * t / warmup
//   warmup < t <= decay:    min + (peak - min) * f(p),
//                           p = (t - warmup) / (decay - warmup),
//                           f = (1 + cos(pi p)) / 2 (cosine), 1 - p (linear),
//                           1 (constant)
//   t > decay:              min (constant: peak)
//
// `decay` is the step the decay ends at (default: the run's last step).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_LRSCHEDULE_H
#define RATRAIN_RUNTIME_LRSCHEDULE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>

namespace ratrain::rt {

enum class LRDecay { Constant, Cosine, Linear };

/// "constant", "cosine", "linear".
std::optional<LRDecay> parseLRDecay(llvm::StringRef name);
llvm::StringRef stringifyLRDecay(LRDecay decay);

struct LRSchedule {
  LRDecay decay = LRDecay::Constant;
  double peak = 0;          ///< the learning rate after warm-up
  double min = 0;           ///< where the decay ends
  uint64_t warmupSteps = 0; ///< linear warm-up from 0
  uint64_t decaySteps = 0;  ///< the step the decay reaches `min` at

  /// The learning rate of optimizer step `step` (1-based).
  double at(uint64_t step) const;
  /// Checks the values (finite, 0 <= min <= peak, warm-up before the end of
  /// the decay); messages name the flag.
  llvm::Error validate() const;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_LRSCHEDULE_H
