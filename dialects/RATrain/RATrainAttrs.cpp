//===- RATrainAttrs.cpp - ratrain attributes ------------------------------===//

#include "RATrain/RATrainAttrs.h"
#include "RATrain/RATrainDialect.h"
#include "ratrain/Model/Limits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ratrain;

#include "RATrain/RATrainEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "RATrain/RATrainAttrs.cpp.inc"

void RATrainDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "RATrain/RATrainAttrs.cpp.inc"
      >();
}

LogicalResult PlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t clusters, int64_t pp, int64_t dp,
                               int64_t microBatchSize, int64_t microBatches,
                               int64_t zero, ArrayRef<int64_t> stageLayers,
                               ArrayRef<Recompute> recompute,
                               int64_t stepMicros, int64_t peakBytes,
                               Offload offload) {
  if (pp < 1 || dp < 1 || microBatchSize < 1 || microBatches < 1)
    return emitError() << "plan needs pp, dp, micro_batch_size and "
                          "micro_batches >= 1";
  // Bounds (ratrain/Model/Limits.h): the schedule has work per micro-batch
  // and layer, and pp * dp must not overflow.
  struct {
    const char *name;
    int64_t value, limit;
  } bounded[] = {{"clusters", clusters, limits::kMaxClusters},
                 {"pp", pp, limits::kMaxModelLayers},
                 {"dp", dp, limits::kMaxClusters},
                 {"micro_batch_size", microBatchSize, limits::kMaxGlobalBatch},
                 {"micro_batches", microBatches, limits::kMaxMicroBatches}};
  for (auto &b : bounded)
    if (b.value > b.limit)
      return emitError() << "plan " << b.name << " = " << b.value
                         << " exceeds the limit of " << b.limit;
  if (pp * dp > clusters)
    return emitError() << "plan uses pp * dp = " << pp * dp
                       << " clusters but only " << clusters << " are given";
  if (zero < 0 || zero > 2)
    return emitError() << "plan zero stage must be 0, 1 or 2, got " << zero;
  if (int64_t(stageLayers.size()) != pp)
    return emitError() << "plan has " << stageLayers.size()
                       << " stage_layers entries for pp = " << pp;
  if (int64_t(recompute.size()) != pp)
    return emitError() << "plan has " << recompute.size()
                       << " recompute entries for pp = " << pp;
  int64_t totalLayers = 0;
  for (int64_t count : stageLayers) {
    if (count < 1 || count > limits::kMaxModelLayers)
      return emitError() << "plan gives a stage " << count
                         << " layers (1 to the limit of "
                         << limits::kMaxModelLayers << ")";
    if (count * microBatches > limits::kMaxStageScheduleSize)
      return emitError() << "plan schedules " << count << " layers x "
                         << microBatches
                         << " micro-batches on one stage, more than the limit "
                            "of "
                         << limits::kMaxStageScheduleSize;
    totalLayers += count;
  }
  if (totalLayers * microBatches > limits::kMaxScheduleSize)
    return emitError() << "plan schedules " << totalLayers << " layers x "
                       << microBatches
                       << " micro-batches, more than the limit of "
                       << limits::kMaxScheduleSize;
  if (stepMicros < 0 || peakBytes < 0)
    return emitError() << "plan predictions must not be negative";
  return success();
}

int64_t PlanAttr::getFirstLayer(int64_t stage) const {
  int64_t first = 0;
  for (int64_t i = 0; i < stage; ++i)
    first += getStageLayers()[i];
  return first;
}
