//===- machine-file.cpp - fuzz the machine-file (YAML) parser -------------===//
//
// Input: the text of a machine file. parseMachineModel must return a model or
// an error; an accepted model printed by printMachineModel must parse again
// (the printer's documented round trip) with the same name.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"
#include "ratrain/Machine/MachineModel.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<ratrain::MachineModel> machine = ratrain::parseMachineModel(
      ratrain::fuzz::asText(data, size), "fuzz.yaml");
  if (!machine) {
    llvm::consumeError(machine.takeError());
    return 0;
  }
  std::string printed = ratrain::printMachineModel(*machine);
  llvm::Expected<ratrain::MachineModel> again =
      ratrain::parseMachineModel(printed, "printed.yaml");
  if (!again) {
    llvm::errs() << "printed machine file does not parse again: "
                 << llvm::toString(again.takeError()) << "\n"
                 << printed;
    std::abort();
  }
  if (again->name != machine->name) {
    llvm::errs() << "printed machine file changes the name\n" << printed;
    std::abort();
  }
  return 0;
}
