//===- AddModelGemms.h - Time a model's GEMM calls into a file --*- C++ -*-===//
//
// ratrain-calibrate --add-gemms (AddModelGemms.cpp). Built with the
// runtime's kernels only (RATRAIN_HAVE_KERNELS).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_CALIBRATE_ADDMODELGEMMS_H
#define RATRAIN_CALIBRATE_ADDMODELGEMMS_H

#include "ratrain/Planner/GemmCalls.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

namespace ratrain::calibrate {

/// Reads the machine file `machinePath`, times those of `calls` (up to
/// kMaxMeasuredGemmFlops) that its gemm_measured lacks for either operand
/// type on operands cycled through `stepWorkingSet` bytes (the models' step,
/// stepWorkingSetBytes; clamped to [the last-level cache,
/// kMaxGemmWorkingSetBytes]), and writes the file with them added to
/// `outputPath` (atomically; the header comments kept, with a line naming
/// `models`). Nothing is written when every call is listed already. Returns the
/// exit status; errors go through `fail`.
int addModelGemms(llvm::StringRef machinePath, llvm::StringRef outputPath,
                  llvm::ArrayRef<GemmCall> calls, int64_t stepWorkingSet,
                  llvm::StringRef models, int reps,
                  llvm::function_ref<int(const llvm::Twine &)> fail);

} // namespace ratrain::calibrate

#endif // RATRAIN_CALIBRATE_ADDMODELGEMMS_H
