//===- FromSchedule.h - A program from a scheduled module -*- C++ -*-===//
//
// The adapter from the compiler to the simulator: reads the first
// `ratrain.pipeline` of a module scheduled by --ratrain-expand-1f1b,
// --ratrain-schedule-lifecycle (and optionally --ratrain-assign-buffers) and
// emits one StageProgram per `ratrain.stage`, op by op in program order:
//
//   forward / recompute / backward -> compute (CostModel seconds per layer
//                                     kind and micro-batch size)
//   send / recv                    -> send / recv of one pipeline message
//                                     (tag 2*mb, +1 for gradients)
//   sync                           -> collective over the dp group
//                                     (all-reduce / reduce-scatter of the
//                                     16-bit gradient, all-gather of the view;
//                                     `hierarchical` or the machine's flat
//                                     algorithm)
//   update                         -> compute (optimizer update, its shard
//                                     with ZeRO)
//   view_prefetch                  -> DMA (FP32 master read + 16-bit view
//                                     write, 6 bytes/param of the shard)
//   offload / reload               -> offload-tier transfer of the state's
//                                     buffer
//   wait                           -> wait on the async op's token
//   grad_ready, yield              -> nothing
//
// DDR: every buffer of the stage (StageBufferAnalysis' liveness, sized by the
// memory model or read from --ratrain-assign-buffers' attributes) is
// allocated before the op that starts it and freed after its last use;
// `ratrain.peak_bytes` is reported as the assigned peak.
//
// Needs the compiler (RATRAIN_ENABLE_COMPILER): library RATrainSimulatorMLIR.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_SIMULATOR_FROMSCHEDULE_H
#define RATRAIN_SIMULATOR_FROMSCHEDULE_H

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Simulator/SimProgram.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace ratrain {
namespace sim {

/// Builds the program of the module's first pipeline. Errors name the op
/// (e.g. a wait whose value no async op produced) or say what is missing.
llvm::Expected<SimProgram>
buildProgramFromSchedule(mlir::ModuleOp module, const MachineModel &machine);

/// Parses a scheduled .mlir file (with the ratrain dialect registered) and
/// builds its program. Parse errors carry the file's diagnostics.
llvm::Expected<SimProgram> loadScheduledProgram(llvm::StringRef path,
                                                const MachineModel &machine);

} // namespace sim
} // namespace ratrain

#endif // RATRAIN_SIMULATOR_FROMSCHEDULE_H
