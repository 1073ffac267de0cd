//===- PutLanding.h - Where a one-sided put may land ------------*- C++ -*-===//
//
// A one-sided send writes into its receiver's planned receive buffer whenever
// the sender reaches it, not when the receiver asks for the data. This
// analysis runs all stages of a pipeline together over two consecutive steps
// and finds, with vector clocks, which ops of the receiver are known to have
// happened before each put is issued; every later op of the receiver, up to
// the op that consumes the message, may see the put land. Assign-buffers
// reserves the receive buffer over that window, and verify-schedule refuses an
// assignment where another buffer is live in it (docs/schedule.md, "One-sided
// transfers").
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_ANALYSIS_PUTLANDING_H
#define RATRAIN_ANALYSIS_PUTLANDING_H

#include "RATrain/RATrainOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace ratrain {

class StageBufferAnalysis;

/// The window of a one-sided receive's program in which its put may land.
struct PutLanding {
  SendOp send;
  RecvOp recv;
  /// The receiving rank and the program position of the op that consumes
  /// the message (its buffer's last use): the put has landed by then.
  int64_t receiver = 0;
  int64_t consumer = 0;
  /// The first position of the receiver's step that is not known to happen
  /// before the put is issued: the put may land at any position in
  /// [from, consumer). 0 when no op of the step is known to precede it.
  int64_t from = 0;
  /// Set when no op of the receiver's step is known to precede the put: the
  /// first position of the receiver's previous step not known to precede it
  /// (the put may land from there on, across the step boundary).
  std::optional<int64_t> fromPreviousStep;
};

/// Put landings of every one-sided receive of a pipeline.
///
/// Happens-before comes from program order and messages alone: the k-th step
/// of a rank follows its (k-1)-th, and a message's send happens before the
/// op that consumes it on the receiver (the wait of the receive). The edges a
/// two-sided send adds on its sender (its completion waits for the receive)
/// and the collectives are left out, so the windows are conservative. Two
/// steps suffice: a path that ends at a put of step k and starts in step k
/// stays in step k (messages match within a step), so the second step's
/// relations are every step's.
class PutLandingAnalysis {
public:
  /// `buffers` holds the StageBufferAnalysis of each stage of `pipeline`, in
  /// the order of pipeline.getStages() (positions and consumers).
  PutLandingAnalysis(PipelineOp pipeline,
                     llvm::ArrayRef<const StageBufferAnalysis *> buffers);

  /// False when the stages cannot all finish two steps (a deadlock, which
  /// verify-schedule reports) or a receive has no matching send. A pipeline
  /// without one-sided receives is not run (valid, no landings).
  bool isValid() const { return valid; }
  llvm::ArrayRef<PutLanding> getLandings() const { return landings; }
  /// The landing of a one-sided receive (null for any other op).
  const PutLanding *lookup(mlir::Operation *recv) const;

private:
  bool valid = false;
  llvm::SmallVector<PutLanding> landings;
  llvm::DenseMap<mlir::Operation *, unsigned> byRecv;
};

} // namespace ratrain

#endif // RATRAIN_ANALYSIS_PUTLANDING_H
