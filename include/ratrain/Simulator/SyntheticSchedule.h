//===- SyntheticSchedule.h - Programs of any pipeline schedule --*- C++ -*-===//
//
// Builds the SimProgram of a pipeline schedule given as action lists
// (ratrain/Schedule/PipelineSchedule.h: 1F1B, interleaved 1F1B, ZB-H1, ZBV or
// a user's CSV) from per-virtual-stage durations and sizes: one stage program
// per rank, its compute tasks in action order. An F of virtual stage c
// receives from the rank of c - 1 and sends to the rank of c + 1; a B or I
// receives the output gradient from the rank of c + 1 and sends the input
// gradient to the rank of c - 1 (nothing between two stages of one rank);
// a W runs the weight-gradient part. Stored activations live from the F to
// the B or W; an I allocates what its W needs (deferredBytesPerLayer). The
// lifecycle is placed as in Synthetic1F1B.h: per layer, the sync is issued
// after the layer's last B or W; or whole-model after the rank's last
// action.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_SIMULATOR_SYNTHETICSCHEDULE_H
#define RATRAIN_SIMULATOR_SYNTHETICSCHEDULE_H

#include "ratrain/Schedule/PipelineSchedule.h"
#include "ratrain/Simulator/Synthetic1F1B.h"

namespace ratrain {
namespace sim {

/// Builds the program of `schedule`; `config.perStage` (or the uniform
/// values) gives one entry per virtual stage (schedule.numStages()), and
/// `config.stages` is ignored. residentBytes and assignedPeakBytes of a rank
/// are the sums over its virtual stages. Tags: 2 * (c * m + mb) for the
/// activation virtual stage c sends, + 1 for the gradient it sends.
SimProgram buildSyntheticSchedule(const Synthetic1F1BConfig &config,
                                  const schedule::PipelineSchedule &schedule);

} // namespace sim
} // namespace ratrain

#endif // RATRAIN_SIMULATOR_SYNTHETICSCHEDULE_H
