//===- ExportSchedule.cpp - --export-pipeline-schedule --------------------===//
//
// Prints the schedule of each expanded ratrain.pipeline as the CSV action
// list of torch.distributed.pipelining (one row per rank), which
// --ratrain-expand-pipeline=schedule-file= reads back.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Target/ExportSchedule.h"
#include "ratrain/Analysis/ScheduleActions.h"

#include "RATrain/RATrainDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"

using namespace mlir;
using namespace ratrain;

LogicalResult ratrain::exportPipelineSchedule(ModuleOp module,
                                              bool withTransfers,
                                              llvm::raw_ostream &os) {
  auto pipelines = llvm::to_vector(module.getOps<PipelineOp>());
  if (pipelines.size() != 1)
    return module.emitError("expected one ratrain.pipeline to export, found ")
           << pipelines.size() << "; run --ratrain-expand-pipeline first";
  FailureOr<schedule::PipelineSchedule> actions =
      getPipelineActions(pipelines.front(), withTransfers);
  if (failed(actions))
    return failure();
  os << schedule::writeCSV(*actions);
  return success();
}

void ratrain::registerExportScheduleTranslation() {
  static llvm::cl::opt<bool> withTransfers(
      "export-schedule-transfers",
      llvm::cl::desc("--export-pipeline-schedule: also the SEND/RECV actions "
                     "between ranks"),
      llvm::cl::init(false));
  TranslateFromMLIRRegistration exportSchedule(
      "export-pipeline-schedule",
      "print the pipeline's schedule as a CSV action list "
      "(torch.distributed.pipelining format)",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitOpError("expected a module with a ratrain.pipeline");
        return exportPipelineSchedule(module, withTransfers, os);
      },
      [](DialectRegistry &registry) { registry.insert<RATrainDialect>(); });
}
