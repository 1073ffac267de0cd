//===- trainer-state.cpp - fuzz the trainer_state.json checker ------------===//
//
// Input: the text of a checkpoint's trainer_state.json. parseJSON (depth
// bounded) and parseTrainerState, which verifyCheckpoint and resume share,
// must return a state or an error.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"
#include "ratrain/Model/JSON.h"
#include "ratrain/runtime/Checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<llvm::json::Value> value =
      ratrain::parseJSON(ratrain::fuzz::asText(data, size));
  if (!value) {
    llvm::consumeError(value.takeError());
    return 0;
  }
  llvm::Expected<ratrain::rt::TrainerState> state =
      ratrain::rt::parseTrainerState(*value, "trainer_state.json");
  if (!state)
    llvm::consumeError(state.takeError());
  return 0;
}
