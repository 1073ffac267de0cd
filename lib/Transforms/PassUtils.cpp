//===- PassUtils.cpp - Helpers shared by RATrain passes -------------------===//

#include "ratrain/Transforms/PassUtils.h"

using namespace mlir;
using namespace ratrain;

FailureOr<MachineModel> ratrain::loadPassMachine(ModuleOp module,
                                                 StringRef machineFile) {
  std::string path = machineFile.str();
  if (path.empty())
    if (auto attr = RATrainDialect::MachineAttrHelper(module->getContext())
                        .getAttr(module))
      path = attr.getValue().str();
  if (path.empty()) {
    module.emitError("no machine file: pass machine=<file> or import with "
                     "--machine");
    return failure();
  }
  llvm::Expected<MachineModel> machine = loadMachineModel(path);
  if (!machine) {
    module.emitError(llvm::toString(machine.takeError()));
    return failure();
  }
  return std::move(*machine);
}
