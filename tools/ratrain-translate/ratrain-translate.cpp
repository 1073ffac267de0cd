//===- ratrain-translate.cpp - RATrain's translation driver ---------------===//
//
// mlir-translate for RATrain: --import-hf-config (config.json -> ratrain) and
// the emitters of lowered programs.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Support/CrashReport.h"
#include "ratrain/Target/EmitCpp.h"
#include "ratrain/Target/ExportSchedule.h"
#include "ratrain/Target/ImportHFConfig.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  ratrain::setBugReportMessage();
  ratrain::registerImportHFConfigTranslation();
  ratrain::registerExportScheduleTranslation();
  ratrain::registerMT3KToCppTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "RATrain translation driver"));
}
