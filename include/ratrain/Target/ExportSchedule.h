//===- ExportSchedule.h - Pipeline schedule to CSV --------------*- C++ -*-===//

#ifndef RATRAIN_TARGET_EXPORTSCHEDULE_H
#define RATRAIN_TARGET_EXPORTSCHEDULE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace ratrain {

/// Prints the schedule of the module's one expanded `ratrain.pipeline` as a
/// CSV action list (docs/pipeline-schedules.md); with `withTransfers` the
/// SEND/RECV actions between ranks too.
mlir::LogicalResult exportPipelineSchedule(mlir::ModuleOp module,
                                           bool withTransfers,
                                           llvm::raw_ostream &os);

/// Registers --export-pipeline-schedule with mlir-translate.
void registerExportScheduleTranslation();

} // namespace ratrain

#endif // RATRAIN_TARGET_EXPORTSCHEDULE_H
